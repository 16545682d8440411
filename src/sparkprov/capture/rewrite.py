"""The capture rewrite: one rule per Catalyst operator, applied bottom-up.

Each rule returns the operator rewritten so that its output carries *slot* columns
next to the user's columns:

* a **source slot** holds the rid of the source row the output row came from
  (set by the leaf rules, carried unchanged through 1:1 operators, concatenated by
  joins, padded with NULL by union branches that do not have it);
* a **group slot** holds a *handle* (the struct of the grouping key values) that
  names the group an aggregate, DISTINCT or dropDuplicates output row stands for.
  The rule also records a *side relation* ``(handle, slots of the operator's input)``
  so the group's rows can be found later (see ``lineage.py``).

The rewritten plan is plain Catalyst: it is optimised and code-generated like the
user's query, so capture keeps push-down, pruning and broadcast joins.

>>> # rules are registered by operator name
>>> "Aggregate" in RULES and "Join" in RULES
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UnsupportedOperation
from ..plan.catalyst import Bridge, JExpr, JPlan
from . import sources as S


@dataclass
class Slot:
    """One lineage column of a rewritten operator's output."""

    name: str  # column name, unique in the whole capture
    kind: str  # "source" or "group"
    ref: int  # index into Rewriter.instances (source) or Rewriter.sides (group)
    attr: JExpr = None  # the attribute in the rewritten plan


@dataclass
class SideRelation:
    """``(handle, slots of the input)`` for one grouping operator."""

    index: int
    operator: str
    plan: JPlan
    slots: list[Slot]


@dataclass
class Rewritten:
    plan: JPlan
    slots: list[Slot]


@dataclass
class SourceUse:
    """A source and how the capture reads it (one per distinct relation)."""

    info: S.SourceInfo
    leaf: JPlan  # a representative analyzed leaf
    snapshot_plan: JPlan | None = None  # for snapshot sources: the Parquet scan of the copy


@dataclass
class Instance:
    """One occurrence of a source in the plan (a self-join has two)."""

    source: int  # index into Rewriter.sources


# operators through which a row passes unchanged (lineage 1:1, slots carried)
PASS_THROUGH = (
    "Filter",
    "Sort",
    "SubqueryAlias",
    "View",
    "GlobalLimit",
    "LocalLimit",
    "Repartition",  # repartition(n), coalesce(n)
    "RepartitionByExpression",  # repartition(n, cols), DISTRIBUTE BY
    "ResolvedHint",  # broadcast() and other hints: kept, so the planner still sees them
)
LEAVES = ("LogicalRelation", "LogicalRDD", "LocalRelation", "Range", "OneRowRelation")
JOIN_TYPES = ("Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti")

# expression classes that capture does not yet verify (a later issue covers them)
_UNSUPPORTED_EXPRESSIONS = {
    "PythonUDF": "Python UDF",
    "PythonUDAF": "Python aggregate UDF",
    "PythonUDTF": "Python UDTF",
}


@dataclass
class Rewriter:
    """Rewrites one analyzed plan; collects its sources and side relations."""

    bridge: Bridge
    snapshot_dir: str
    named: list[tuple[JPlan, str]] = field(default_factory=list)  # session.source() names
    sources: list[SourceUse] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    sides: list[SideRelation] = field(default_factory=list)
    checkpoints: list = field(default_factory=list)  # DataFrames to release after the capture
    analyzed: JPlan = None  # the plan as captured (CTEs inlined)
    root: Rewritten | None = None
    _ids: itertools.count = field(default_factory=itertools.count)

    # ---- driver --------------------------------------------------------------------
    def rewrite_root(self, plan: JPlan) -> Rewritten:
        self.analyzed = plan
        self.check_supported(plan)  # fail before any work (snapshots, checkpoints) is done
        rw = self.rewrite(plan, context=None)
        # user columns first, then the slots, whatever order joins left them in
        b = self.bridge
        self.root = Rewritten(b.project(self.user_output(rw) + [s.attr for s in rw.slots], rw.plan), rw.slots)
        return self.root

    def user_output(self, rw: Rewritten) -> list[JExpr]:
        """The rewritten plan's output without its slot columns, in the user's order."""
        b = self.bridge
        slot_ids = {b.expr_id(s.attr) for s in rw.slots}
        return [a for a in b.output(rw.plan) if b.expr_id(a) not in slot_ids]

    def rewrite(self, node: JPlan, context: str | None) -> Rewritten:
        b = self.bridge
        op = b.node_name(node)
        if op in LEAVES:
            return self.rule_leaf(node, context)
        rule = RULES.get(op)
        if rule is None:
            raise UnsupportedOperation(op, self._where(node))
        if op == "View":
            context = b.view_name(node)
        elif op not in ("SubqueryAlias", "Project", "Filter"):
            context = None  # a view name applies to its leaf only through simple wrappers
        return rule(self, node, context)

    def check_supported(self, node: JPlan) -> None:
        """Raise ``UnsupportedOperation`` for the first operator or expression no rule handles."""
        b = self.bridge
        op = b.node_name(node)
        self._check_expressions(node, op)
        if op not in LEAVES and op not in RULES:
            raise UnsupportedOperation(op, self._where(node))
        if op == "Join" and b.join_type(node) not in JOIN_TYPES:
            raise UnsupportedOperation(f"Join ({b.join_type(node)})", self._where(node))
        if op == "LogicalRelation" and b.file_relation(node) is None:
            raise UnsupportedOperation("LogicalRelation", self._where(node), "only file-based relations are supported")
        for child in b.children(node):
            self.check_supported(child)

    def _where(self, node: JPlan) -> str:
        return self.bridge.tree_string(node)[:2000]

    def _check_expressions(self, node: JPlan, op: str) -> None:
        b = self.bridge
        for e in b.expressions(node):
            if b.contains_subquery(e):
                raise UnsupportedOperation("subquery expression", self._where(node), f"in {op}: {b.expr_sql(e)[:200]}")
            for cls in b.expression_classes(e):
                if cls in _UNSUPPORTED_EXPRESSIONS:
                    raise UnsupportedOperation(_UNSUPPORTED_EXPRESSIONS[cls], self._where(node), f"in {op}")

    def _new_slot(self, kind: str, ref: int) -> Slot:
        prefix = "__sp_s" if kind == "source" else "__sp_g"
        return Slot(name=f"{prefix}{next(self._ids)}", kind=kind, ref=ref)

    # ---- leaves --------------------------------------------------------------------
    def rule_leaf(self, leaf: JPlan, context: str | None) -> Rewritten:
        b = self.bridge
        if b.node_name(leaf) == "OneRowRelation":
            return Rewritten(leaf, [])  # constants: no input rows behind them
        fmt = S.leaf_format(b, leaf)
        src_index = self._source_for(leaf, fmt, context)
        self.instances.append(Instance(source=src_index))
        slot = self._new_slot("source", len(self.instances) - 1)
        use = self.sources[src_index]
        if use.info.kind == "parquet":
            df = b.to_dataframe(leaf)
            df = df.select("*", S.rid_column(use.info.files).alias(slot.name))
            plan = b.analyzed(df)
        else:
            snap = b.to_dataframe(use.snapshot_plan)
            snap = snap.select("*", S.rid_column(use.info.files).alias(slot.name))
            snap_plan = b.analyzed(snap)
            snap_out = b.output(snap_plan)
            # keep the leaf's attribute ids so the operators above still resolve
            exprs = [b.alias(new, b.attr_name(old), b.jexpr_id(old)) for new, old in zip(snap_out, b.output(leaf))]
            exprs.append(snap_out[-1])
            plan = b.project(exprs, snap_plan)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, [slot])

    def _source_for(self, leaf: JPlan, fmt: str, context: str | None) -> int:
        b = self.bridge
        key = S.leaf_key(b, leaf)
        for i, use in enumerate(self.sources):
            other = S.leaf_key(b, use.leaf)
            if (key is not None and key == other) or (key is None and other is None and b.same_result(leaf, use.leaf)):
                return i
        name = self._name_for(leaf, fmt, context)
        roots, original = S.file_fingerprint(b, leaf)
        schema = b.to_dataframe(leaf).schema.json()
        table = b.catalog_table_name(leaf) if b.node_name(leaf) == "LogicalRelation" else None
        if fmt == "parquet":
            info = S.SourceInfo(name, "parquet", fmt, original, roots, original, schema, table)
            self.sources.append(SourceUse(info, leaf))
        else:
            info, snap_plan = self._snapshot(leaf, name, fmt, roots, original, schema, table)
            self.sources.append(SourceUse(info, leaf, snap_plan))
        return len(self.sources) - 1

    def _name_for(self, leaf: JPlan, fmt: str, context: str | None) -> str:
        b = self.bridge
        for plan, name in self.named:
            if b.same_result(plan, leaf):
                return self._unique(name)
        if context:
            return self._unique(context.split(".")[-1])
        if b.node_name(leaf) == "LogicalRelation":
            table = b.catalog_table_name(leaf)
            if table:
                return self._unique(table.split(".")[-1])
            fs = b.file_relation(leaf)
            return self._unique(S.display_path(b.root_paths(fs)))
        if fmt == "range":
            return self._unique(f"range_{len(self.sources)}")
        return self._unique(f"dataframe_{len(self.sources)}")

    def _unique(self, name: str) -> str:
        taken = {u.info.name for u in self.sources}
        if name not in taken:
            return name
        n = 2
        while f"{name}_{n}" in taken:
            n += 1
        return f"{name}_{n}"

    def _snapshot(self, leaf, name, fmt, roots, original, schema, table):
        b = self.bridge
        path = f"{self.snapshot_dir}/{len(self.sources)}-{S.safe_id(name)}"
        data = b.to_dataframe(leaf)
        # positional names: the leaf's may repeat or be names Parquet refuses
        data.toDF(*[f"c{i}" for i in range(len(data.columns))]).write.parquet(path)
        snap = b.spark.read.parquet(path)
        files = sorted(b.files(b.file_relation(b.analyzed(snap))))
        info = S.SourceInfo(name, "snapshot", fmt, files, roots, original, schema, table)
        return info, b.analyzed(snap)

    # ---- 1:1 operators -----------------------------------------------------------
    def rule_pass_through(self, node: JPlan, context: str | None) -> Rewritten:
        (child,) = self.bridge.children(node)
        inner = self.rewrite(child, context)
        return Rewritten(self.bridge.with_new_children(node, [inner.plan]), inner.slots)

    def rule_project(self, node: JPlan, context: str | None) -> Rewritten:
        b = self.bridge
        (child,) = b.children(node)
        inner = self.rewrite(child, context)
        exprs = b.project_list(node) + [s.attr for s in inner.slots]
        return Rewritten(b.project(exprs, inner.plan), inner.slots)

    # ---- joins ---------------------------------------------------------------------
    def rule_join(self, node: JPlan, context: str | None) -> Rewritten:
        b = self.bridge
        kind = b.join_type(node)
        left, right = b.children(node)
        if kind == "LeftSemi":
            return self._semi_join(node, left, right)
        if kind not in JOIN_TYPES:
            raise UnsupportedOperation(f"Join ({kind})", self._where(node))
        lw, rw = self.rewrite(left, None), self.rewrite(right, None)
        plan = b.with_new_children(node, [lw.plan, rw.plan])
        if kind == "LeftAnti":  # the left row only: an absence of matches is not a dependency
            return Rewritten(plan, lw.slots)
        # inner, cross, outer: a NULL-padded side has NULL slots, so that row keeps only its preserved side
        return Rewritten(plan, lw.slots + rw.slots)

    def _semi_join(self, node: JPlan, left: JPlan, right: JPlan) -> Rewritten:
        # The left row and every right row it matches. The matches form a group named by
        # the left row's slots (unique per row in every supported subtree), found by the
        # inner join of the same inputs.
        b = self.bridge
        if self._reads_constants(left):  # constant rows have no slots to tell them apart
            raise UnsupportedOperation("Join (LeftSemi)", self._where(node), "the left side has rows from no source")
        lw, rw = self._rewrite_stable(left, node), self._rewrite_stable(right, node)
        handle = b.struct([s.attr for s in lw.slots])
        matches = Rewritten(b.inner_join_like(node, lw.plan, rw.plan), rw.slots)
        slot = self._group_slot("Join (LeftSemi)", handle, matches)
        semi = b.with_new_children(node, [lw.plan, rw.plan])
        plan = b.project(b.output(semi) + [b.alias(handle, slot.name)], semi)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, lw.slots + [slot])

    # ---- grouping operators --------------------------------------------------------
    def rule_aggregate(self, node: JPlan, context: str | None) -> Rewritten:
        b = self.bridge
        (child,) = b.children(node)
        grouping = b.grouping_expressions(node)
        for g in grouping:
            if not b.is_deterministic(g):
                raise UnsupportedOperation(
                    "Aggregate", self._where(node), f"non-deterministic grouping expression {b.expr_sql(g)[:80]}"
                )
        inner = self._rewrite_stable(child, node)
        handle = b.struct(grouping) if grouping else b.int_literal(0)
        slot = self._group_slot("Aggregate", handle, inner)
        out_alias = b.alias(handle, slot.name)
        plan = b.aggregate_like(node, b.aggregate_expressions(node) + [out_alias], inner.plan)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, [slot])

    def rule_distinct(self, node: JPlan, context: str | None) -> Rewritten:
        (child,) = self.bridge.children(node)
        return self._dedup(node, child, self.bridge.output(child))

    def rule_deduplicate(self, node: JPlan, context: str | None) -> Rewritten:
        (child,) = self.bridge.children(node)
        return self._dedup(node, child, self.bridge.dedup_keys(node))

    def _dedup(self, node: JPlan, child: JPlan, keys: list[JExpr]) -> Rewritten:
        # Keep one row per key (as Spark does), drop its slots and name the whole
        # group with a handle instead: every row sharing the key is in the lineage.
        b = self.bridge
        inner = self._rewrite_stable(child, node)
        slot = self._group_slot(b.node_name(node), b.struct(keys), inner)
        dedup = b.deduplicate(keys, inner.plan)
        user = b.output(child)
        plan = b.project(user + [b.alias(b.struct(keys), slot.name)], dedup)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, [slot])

    def _group_slot(self, operator: str, handle: JExpr, inner: Rewritten) -> Slot:
        b = self.bridge
        side_plan = b.project([b.alias(handle, "__sp_h")] + [s.attr for s in inner.slots], inner.plan)
        self.sides.append(SideRelation(len(self.sides), operator, side_plan, inner.slots))
        return self._new_slot("group", len(self.sides) - 1)

    def _rewrite_stable(self, child: JPlan, parent: JPlan) -> Rewritten:
        # The side relation re-runs the input and must see the same rows as the query:
        # an input that could differ between runs (LIMIT, rand()) is computed once and
        # kept (localCheckpoint keeps the attribute ids, so the operators above still resolve).
        inner = self.rewrite(child, None)
        if self._nondeterminism(child):
            df = self.bridge.to_dataframe(inner.plan).localCheckpoint(eager=True)
            self.checkpoints.append(df)
            inner = Rewritten(self.bridge.analyzed(df), inner.slots)
        return inner

    def _reads_constants(self, node: JPlan) -> bool:
        b = self.bridge
        return b.node_name(node) == "OneRowRelation" or any(self._reads_constants(c) for c in b.children(node))

    def _nondeterminism(self, node: JPlan) -> str | None:
        b = self.bridge
        op = b.node_name(node)
        if op in ("GlobalLimit", "LocalLimit"):
            return "LIMIT"
        for e in b.expressions(node):
            if not b.is_deterministic(e):
                return f"non-deterministic expression {b.expr_sql(e)[:80]}"
        for c in b.children(node):
            found = self._nondeterminism(c)
            if found:
                return found
        return None

    # ---- union ---------------------------------------------------------------------
    def rule_union(self, node: JPlan, context: str | None) -> Rewritten:
        b = self.bridge
        if not b.is_positional_union(node):
            raise UnsupportedOperation("Union (by name)", self._where(node))
        branches = [self.rewrite(c, None) for c in b.children(node)]
        all_slots = [s for br in branches for s in br.slots]
        padded = []
        for br in branches:
            own = {s.name for s in br.slots}
            extra = []
            for s in all_slots:
                if s.name in own:
                    extra.append(s.attr)
                else:
                    extra.append(b.alias(b.null_literal(b.data_type(s.attr)), s.name))
            padded.append(b.project(self.user_output(br) + extra, br.plan))
        plan = b.with_new_children(node, padded)
        out = b.output(plan)
        slots = []
        for s, attr in zip(all_slots, out[len(out) - len(all_slots) :]):
            slots.append(Slot(s.name, s.kind, s.ref, attr))
        return Rewritten(plan, slots)


RULES: dict[str, Callable[[Rewriter, JPlan, str | None], Rewritten]] = {
    **{op: Rewriter.rule_pass_through for op in PASS_THROUGH},
    "Project": Rewriter.rule_project,
    "Join": Rewriter.rule_join,
    "Aggregate": Rewriter.rule_aggregate,
    "Distinct": Rewriter.rule_distinct,
    "Deduplicate": Rewriter.rule_deduplicate,
    "Union": Rewriter.rule_union,
}

SUPPORTED_OPERATORS = tuple(sorted(set(RULES) | set(LEAVES)))
