"""The capture context: one capture's rewrite of its plan, and what the rules share.

``CaptureContext.rewrite_root`` prepares and optimizes the user's plan, checks that
every operator is supported, then rewrites it bottom-up: each operator through its rule
(``capture/rules``, one module per kind of operator), so that the output carries *slot*
columns beside the user's columns:

* a **source slot** holds the rid of the source row the output row came from
  (set by the leaf rule, carried unchanged through 1:1 operators, concatenated by
  joins, padded with NULL by union branches that do not have it);
* a **group slot** holds a *handle* (the struct of the grouping key values) that
  names the group an aggregate, DISTINCT or dropDuplicates output row stands for.
  The rule also records a *side relation* ``(handle, slots of the operator's input)``
  so the group's rows can be found later (see ``lineage.py``).

The rewritten plan is plain Catalyst: it is optimised and code-generated like the
user's query, so capture keeps push-down, pruning and broadcast joins. Scalar
subqueries are computed once and kept here, for every rule.

>>> import tempfile
>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> df = spark.createDataFrame([("a", 1), ("a", 2)], ["k", "v"]).groupBy("k").count()
>>> cx = CaptureContext(Bridge(spark), tempfile.mkdtemp())
>>> [(s.kind, len(cx.sources)) for s in cx.rewrite_root(Bridge(spark).analyzed(df)).slots]
[('rids', 1)]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from pyspark import StorageLevel

from ..errors import InvalidArgument, UnsupportedOperation
from ..plan.catalyst import Bridge, JExpr, JPlan
from ..plan.observed import observed_rows
from ..sources.identity import NamedLeaf
from ..store.format import ARRAY_SLOTS, Slot
from . import explain, lazy_check, prepare, support
from .explain import ORDER_WHEN_READ, SUBQUERY_SHARED, SUBQUERY_STRATEGY
from .function_keep import FunctionKeep
from .rules import RULES
from .rules import leaf as leaves
from .shapes import LEAVES, SET_KEY, ExplainLine, Instance, Rewritten, SideRelation, SourceUse
from .strategy import COLLECTED, inject_bound


@dataclass
class CaptureContext:
    """One capture's rewrite: the analyzed plan rewritten bottom-up by the rules
    (``capture/rules``), its sources, side relations and explain lines collected."""

    bridge: Bridge
    snapshot_dir: str
    # the snapshots the capture before it of the same name keeps, by key, to link
    # from (capture/snapshots.py), read when first asked for
    earlier_snapshots: Callable[[], dict] = dict
    named: list[NamedLeaf] = field(default_factory=list)  # session.source() names
    sources: list[SourceUse] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    sides: list[SideRelation] = field(default_factory=list)
    checkpoints: list = field(default_factory=list)  # DataFrames to release after the capture
    # the window sides whose ranges its lineage keeps as blocks, as they are resolved
    # (SideGraph.blocked): the catalog entry names the form (capture/features.py)
    blocked: set[int] = field(default_factory=set)
    analyzed: JPlan = None  # the user's plan (CTEs inlined)
    optimized: JPlan = None  # the plan as captured: the analyzed plan through Spark's optimizer
    leaf_names: dict[str, str] = field(default_factory=dict)  # view names, by leaf attribute ids
    subqueries: dict[int, int] = field(default_factory=dict)  # shared side relation per scalar subquery id
    # the deterministic scalar subqueries rewritten: (their plan, its shared side, the
    # plan that reads its kept row), for one with the same plan to share them
    pinned: list[tuple[JPlan, int, JPlan | None]] = field(default_factory=list)
    root: Rewritten | None = None
    # for the re-execution check: every occurrence of a source is a source of its own,
    # and occurrence i reads only the rids in restrict[i] (a DataFrame with _sp_rid)
    by_occurrence: bool = False
    restrict: dict | None = None
    # Python functions declared blackbox (functions/declare.py): the names of those
    # whose lineage is stored per group or partition; with trace_blackbox (the query
    # run again over traced rows, capture/blackbox.py) they report it, as full lineage
    blackbox: list[str] = field(default_factory=list)
    trace_blackbox: bool = False
    report: list[ExplainLine] = field(default_factory=list)  # one line per operator, for explain()
    operators: set[str] = field(default_factory=set)  # the captured plan's operator names, subqueries' too
    # operator names in the optimized plan (subqueries included), gathered by
    # check_supported, to skip walks that cannot find anything; None when unknown (then
    # everything is walked)
    checked: set[str] | None = None
    # how grouping operators keep their groups (STRATEGIES): "auto" picks per operator
    strategy: str = "auto"
    # side relations kept for why and how, which read every slot but a source's as a
    # side's: no rule then makes "rids" slots (a declared function keeps its input numbered)
    witnesses: bool = False
    # with witnesses, the strategy the user asked for ("" without): where it would
    # inject, an aggregate collects its witnesses in its own state
    # (strategy.collects_witnesses) instead of running its input again for its side
    witness_strategy: str = ""
    # a declared workload's sources (capture/workload.py): only these keep lineage
    keep: frozenset[str] | None = None
    # keep= per declared function (capture/function_keep.py), over their declarations'
    function_keep: FunctionKeep | None = None
    # its predicates by source name: rows that fail one get a NULL rid (selection push-down)
    where: dict[str, str] = field(default_factory=dict)
    # the sources other parts of the capture read (its marks, capture/marks.py), which
    # the workload may name too; None for a mark's part: the outer part checks the names
    read_elsewhere: frozenset[str] | None = frozenset()
    # a global sort at the top may be left out, its order kept for when the output is
    # read: (output position, ascending, nulls first) per key, in ``order``
    order_when_read: bool = False
    order: list[tuple[int, bool, bool]] = field(default_factory=list)
    inject_max_bytes: int = 0  # from INJECT_MAX_INPUT_BYTES, read by rewrite_root
    broadcast_bytes: int | None = None  # spark.sql.autoBroadcastJoinThreshold, read at the first join
    # the join sides' size estimates in the plan Spark runs without capture, by join (rules.join)
    planned_sizes: dict[tuple[str, str], tuple[int, int]] | None = None
    unknown_bytes: int = 0  # spark.sql.defaultSizeInBytes, read by rewrite_root
    # whether every injected aggregate may hash many groups at once (strategy.hashes_groups);
    # None: no aggregate injected
    hashed_groups: bool | None = None
    depth: int = 0  # of the operator being rewritten, for its explain line
    ids: itertools.count = field(default_factory=itertools.count)
    # aggregates whose input is first reduced to the keys a join above can match, by
    # the aggregate node (``rules.join_keys.node_key``): (grouping keys, the join's values, their plan)
    reductions: dict[tuple[int, str], tuple[list, list, JPlan]] = field(default_factory=dict)
    # aggregates whose rows a join above may repeat, by node (``rules.join_repeats.plan_repeats``):
    # their groups' lineage kept once, a set per group of a shared side
    repeated: set[tuple[int, str]] = field(default_factory=set)
    grouped_above: int = 0  # the aggregates above the operator being rewritten
    # the input bytes of the plans computed_once keeps, by their first column's id
    cached_bytes: dict[int, int] = field(default_factory=dict)

    def rewrite_root(self, plan: JPlan) -> Rewritten:
        """The user's analyzed ``plan`` rewritten with its slots (user columns first), checked first."""
        with self.bridge.remembering():  # the plans are walked several times
            return self._rewrite_root(plan)

    def _rewrite_root(self, plan: JPlan) -> Rewritten:
        self.analyzed = plan
        self.inject_max_bytes = inject_bound(self.bridge)
        self.unknown_bytes = self.bridge.conf_bytes("spark.sql.defaultSizeInBytes", str(2**63 - 1))
        prepare.collect_view_names(self, plan, None)
        self.optimized = self.bridge.optimized(prepare.prepared(self, plan))
        support.check_supported(self, self.optimized)  # fail before any work (snapshots, checkpoints) is done
        rw = self._rewrite_top(self.optimized)
        self.check_workload()
        # user columns first, then the slots, whatever order joins left them in
        b = self.bridge
        self.root = Rewritten(b.project(self.user_output(rw) + [s.attr for s in rw.slots], rw.plan), rw.slots)
        return self.root

    def _rewrite_top(self, plan: JPlan) -> Rewritten:
        # A global sort at the top only orders the output rows. Sorting rows that carry
        # their lineage moves every rid array through a sampling job, a shuffle and the
        # sort (TPC-H Q1 at SF 1: its four rows hold 6M rids, and sorting them costs
        # more than the query's whole aggregation). With order_when_read, the rows are
        # stored as they come and the order is kept with them, applied when read.
        b = self.bridge
        keys = b.global_sort_keys(plan) if self.order_when_read else None
        if not keys:
            return self.rewrite(plan)
        positions = {b.expr_id(a): i for i, a in enumerate(b.output(plan))}
        if any(attr is None or b.expr_id(attr) not in positions for attr, _, _ in keys):
            return self.rewrite(plan)
        self.operators.add("Sort")
        self.report.append(ExplainLine(1, b.simple_string(plan), "exact", ORDER_WHEN_READ))
        (child,) = b.children(plan)
        self.depth += 1
        try:
            rw = self.rewrite(child)
        finally:
            self.depth -= 1
        self.order = [(positions[b.expr_id(attr)], ascending, nulls_first) for attr, ascending, nulls_first in keys]
        return rw

    def optimize_lazy(self, plan: JPlan) -> None:
        """What a lazy capture does instead of rewriting, first part (``lazy_check.optimize``)."""
        return lazy_check.optimize(self, plan)

    def check_lazy(self) -> None:
        """The second part: the plan checked, its sources registered (``lazy_check.check``)."""
        return lazy_check.check(self)

    def check_workload(self) -> None:
        """Refuse a workload naming a source neither this plan nor the capture's other
        parts read, and a keep= naming a function none of them calls."""
        if self.read_elsewhere is None:
            return
        if self.function_keep is not None:
            self.function_keep.check_applied()
        read = sorted({u.info.name for u in self.sources} | self.read_elsewhere)
        unknown = sorted((self.keep or set()) - set(read))
        if unknown:
            raise InvalidArgument(f"the workload names source(s) {unknown} the query does not read; it reads {read}")

    def user_output(self, rw: Rewritten) -> list[JExpr]:
        """The rewritten plan's output without its slot columns, in the user's order."""
        b = self.bridge
        slot_ids = {b.expr_id(s.attr) for s in rw.slots}
        return [a for a in b.output(rw.plan) if b.expr_id(a) not in slot_ids]

    def rewrite(self, node: JPlan) -> Rewritten:
        """``node`` rewritten by its operator's rule, with the slots of its scalar subqueries."""
        b = self.bridge
        op = b.node_name(node)
        self.operators.add(op)
        line = len(self.report)
        self.report.append(None)  # filled in below: the report lists operators top-down
        self.depth += 1
        try:
            subqueries = []
            if op in LEAVES:
                rw = leaves.rule(self, node)
            else:
                rule = RULES.get(op)
                if rule is None:
                    raise UnsupportedOperation(op, self.plan_text(node))
                subqueries = self._scalar_subqueries(node)
                if subqueries:
                    node = self._pin_subqueries(node, subqueries)
                    subqueries = self._scalar_subqueries(node)  # now reading their kept rows
                rw = rule(self, node)
        finally:
            self.depth -= 1
        self.report[line] = explain.explain_line(self, node, op, rw)
        return self._add_subquery_slots(rw, subqueries) if subqueries else rw

    def _scalar_subqueries(self, node: JPlan) -> list[JExpr]:
        b = self.bridge
        if not b.has_pattern(node, "SCALAR_SUBQUERY"):
            return []
        return [sq for e in b.expressions(node) for sq in b.scalar_subqueries(e)]

    def subquery_plans(self, node: JPlan) -> list[JPlan]:
        """The plans of the subqueries in ``node``'s expressions."""
        b = self.bridge
        if not b.has_pattern(node, "PLAN_EXPRESSION"):
            return []
        return b.to_list(node.subqueries())  # the plans of its expressions' subqueries

    def leaf_id(self, leaf: JPlan) -> str:
        """A leaf's identity in this plan: its output attributes' ids."""
        return self.bridge.output_ids(leaf)

    def plan_text(self, node: JPlan) -> str:
        """``node``'s tree as an error shows where in the plan an operator is."""
        return self.bridge.tree_string(node)[:2000]

    def _pin_subqueries(self, node: JPlan, subqueries: list[JExpr]) -> JPlan:
        # A scalar subquery's row is computed once, with its lineage, and kept: the
        # query reads its value from that row and the shared lineage its slots, so the
        # subquery does not run again to resolve them. A deterministic one is kept when
        # the query's job first computes it (a cached relation), beside the stages that
        # do not wait for it, as Spark runs it without capture; one whose row could
        # differ between runs (LIMIT, rand()) is computed and kept before the query,
        # so no second computation can ever replace it. One without sources
        # (constants) has no lineage to keep.
        b = self.bridge
        for sq in subqueries:
            key = b.expr_id(sq)
            if key in self.subqueries:
                continue
            plan = b.subquery_plan(sq)
            why = self.nondeterminism(plan)
            # Spark merges subqueries over the same rows into one plan, read by each
            # (TPC-DS q9: 15 subqueries, 5 plans): that plan's row is kept once, with
            # its lineage, not once per subquery
            twin = None if why else next((t for t in self.pinned if b.same_result(t[0], plan)), None)
            if twin is not None:
                self.subqueries[key] = twin[1]
                if twin[2] is not None:
                    node = b.replace_subquery(node, sq, twin[2])
                self.report.append(ExplainLine(self.depth, f"scalar subquery #{key}", "exact", SUBQUERY_SHARED))
                continue
            kept = " (row kept from this run)" if why else " (computed once by the query; lineage read from its row)"
            # called while the host's rule runs: the depth is already one below the host
            line = ExplainLine(self.depth, f"scalar subquery #{key}", "exact", SUBQUERY_STRATEGY + kept)
            self.report.append(line)
            inner = self.rewrite(plan)
            if not inner.slots and not why:
                line.strategy = "scalar subquery: over constants only, no lineage"
                self.subqueries[key] = -1
                self.pinned.append((plan, -1, None))
                continue
            kept_plan = self.kept(inner.plan) if why else self.computed_once(inner.plan)
            value = self.user_output(inner)[0]
            self.subqueries[key] = (
                self.side(
                    "scalar subquery",
                    b.int_literal(0),
                    Rewritten(kept_plan, inner.slots),
                    shared=True,
                    combine="matches",
                )
                if inner.slots
                else -1
            )
            reads = b.project([value], kept_plan)
            if not why:
                self.pinned.append((plan, self.subqueries[key], reads))
            node = b.replace_subquery(node, sq, reads)
        return node

    def _add_subquery_slots(self, rw: Rewritten, subqueries: list[JExpr]) -> Rewritten:
        # Every row of this operator depends on the subquery's one result row. That
        # row's lineage is kept once, as a shared side relation with a constant handle;
        # rows carry only the handle.
        b = self.bridge
        added = []
        for sq in subqueries:
            ref = self.subqueries[b.expr_id(sq)]  # registered by _pin_subqueries; -1: no lineage (constants)
            if ref >= 0 and all(s.ref != ref for s in added):
                added.append(self.new_slot("group", ref))
        if not added:
            return rw
        exprs = b.output(rw.plan) + [b.alias(b.int_literal(0), s.name) for s in added]
        plan = b.project(exprs, rw.plan)
        out = b.output(plan)[-len(added) :]
        return Rewritten(plan, rw.slots + [Slot(s.name, s.kind, s.ref, a) for s, a in zip(added, out)])

    def new_slot(self, kind: str, ref: int) -> Slot:
        """A new slot of ``kind`` naming instance or side ``ref``, under a fresh column name."""
        prefix = "__sp_s" if kind == "source" else "__sp_g"
        return Slot(name=f"{prefix}{next(self.ids)}", kind=kind, ref=ref)

    def user_first(self, rw: Rewritten) -> Rewritten:
        """``rw`` with the user's columns first, then its slots (a projection only if needed)."""
        b = self.bridge
        user = self.user_output(rw)
        out = b.output(rw.plan)
        if [b.expr_id(a) for a in out[: len(user)]] == [b.expr_id(a) for a in user]:
            return rw
        return Rewritten(b.project(user + [s.attr for s in rw.slots], rw.plan), rw.slots)

    def collected_slots(self, arrays: list[JExpr], slots: list[Slot]) -> list[Slot]:
        """The slots of ``arrays``, the attributes ``collected`` made for ``slots``."""
        b = self.bridge
        return [Slot(b.attr_name(a), self.collected_kind(s), s.ref, a) for a, s in zip(arrays, slots)]

    def collected(self, child: JPlan, slots: list[Slot]) -> list[JExpr]:
        """Aggregate expressions collecting each of ``slots`` into an array over the rows
        of a group of ``child``'s output."""
        b = self.bridge
        # A join, a generator or an Expand (distinct aggregates) can bring one input row
        # into a group more than once; its rid is kept once, so pairs need no distinct.
        # (Catalyst has no tree pattern for Expand: any Expand in the plan counts.)
        expand = self.checked is None or "Expand" in self.checked
        repeats = expand or any(b.has_pattern(child, p) for p in ("JOIN", "GENERATE"))
        # Handles are not made distinct here: array_distinct compares structs pairwise
        # (quadratic in the group's size); resolving drops repeated probes instead.
        return [
            b.alias(
                b.any_value(s.attr)
                if self.collected_kind(s) == "group"
                # a partition's rows all hold its set id: kept once
                else b.collect_rids(
                    s.attr, s.kind in ARRAY_SLOTS, self.has_sets(s) or (repeats and COLLECTED[s.kind] == "rids")
                ),
                f"__sp_r{next(self.ids)}",
            )
            for s in slots
        ]

    def refers_to_shared(self, slot: Slot) -> bool:
        """Whether ``slot`` is a handle of a shared side (a scalar subquery's row, a
        window's whole input)."""
        return slot.kind == "group" and self.sides[slot.ref].shared

    def collected_kind(self, slot: Slot) -> str:
        """The kind of slot an aggregate makes when it collects ``slot``."""
        # A reference to a shared side with one set (a scalar subquery's row, a whole
        # input's window: a constant handle) is the same for every row: the group keeps
        # one, a scalar, as the subquery's other rows do, and none (NULL) when it has no
        # rows. Everything else is collected into an array, a window partition's set
        # ids too (a group's rows may come from several partitions).
        return "group" if self.refers_to_shared(slot) and not self.has_sets(slot) else COLLECTED[slot.kind]

    def has_sets(self, slot: Slot) -> bool:
        """Whether ``slot`` refers to a shared side with a set per window partition."""
        side = self.sides[slot.ref] if slot.kind in ("group", "groups") else None
        return side is not None and side.has_sets

    def group_slot(
        self, operator: str, handle: JExpr, inner: Rewritten, combine: str, narrow: JPlan | None = None
    ) -> Slot:
        """A group slot whose side relation maps ``handle`` to the rows of ``inner``."""
        return self.new_slot("group", self.side(operator, handle, inner, combine=combine, narrow=narrow))

    def side(
        self,
        operator: str,
        handle: JExpr,
        inner: Rewritten,
        shared: bool = False,
        combine: str = "values",
        narrow: JPlan | None = None,
        set_key: JExpr | None = None,
        twins: bool = False,
    ) -> int:
        """A side relation ``(handle, slots)`` over ``inner``; ``narrow``: the same
        input in its broadcasting form (``SideRelation.narrow``); ``set_key``: for a
        shared side whose handle is a set id hashing a key, that key (its sets, the ids
        beside their keys over ``inner``: ``SideRelation.sets``); ``twins``: see
        ``add_side``."""
        b = self.bridge

        def side(plan: JPlan) -> JPlan:
            return b.project([b.alias(handle, "__sp_h")] + [s.attr for s in inner.slots], plan)

        sets = None
        if set_key is not None:
            sets = b.project([b.alias(handle, "__sp_h"), b.alias(set_key, SET_KEY)], inner.plan)

        relation = SideRelation(
            len(self.sides),
            operator,
            side(inner.plan),
            inner.slots,
            shared,
            combine=combine,
            narrow=side(narrow) if narrow is not None else None,
            sets=sets,
        )
        return self.add_side(relation, twins)

    def add_side(self, relation: SideRelation, twins: bool = False) -> int:
        """``relation`` added to the capture's side relations; its index. With
        ``twins``, the index of a side already added whose plan gives the same rows
        (``sameResult``) and that is resolved alike, in its place: the copies of a CTE
        the query reads several times (TPC-DS q47 and q57 read theirs three times, two
        windows each) are each rewritten, but read one side relation, whose lineage is
        then resolved and stored once. Only for sides over rows the query computes
        once (a cached relation: ``computed_once``), where every copy reads the same
        rows, in the same order. (Not where every occurrence of a source is a source
        of its own: each copy's lineage names its own occurrences.)"""
        if twins and not self.by_occurrence:
            for other in self.sides:
                if _resolved_alike(other, relation) and self.bridge.same_result(other.plan, relation.plan):
                    return other.index
        relation.index = len(self.sides)
        self.sides.append(relation)
        return relation.index

    def observed_input(self, k: int, inner: Rewritten) -> JPlan:
        """``inner.plan``, the input of side relation ``k``'s operator; with witnesses,
        when the side's rows are small (``plan.observed``), the same rows under a node
        that gathers the side's rows in the query's own job, not by running its input
        again (Smoke's inject, for the side relations why and how read)."""
        side = self.sides[k]
        if not self.witnesses or side.narrow is not None:
            return inner.plan
        side.observed = observed_rows(self.bridge, side.plan)
        return inner.plan if side.observed is None else side.observed.plan

    def rewrite_stable(self, child: JPlan, parent: JPlan) -> Rewritten:
        """``child`` rewritten, computed once and kept if two runs could give other rows."""
        # The side relation re-runs the input and must see the same rows as the query:
        # an input that could differ between runs (LIMIT, rand()) is computed once and kept.
        inner = self.rewrite(child)
        if self.nondeterminism(child):
            inner = Rewritten(self.kept(inner.plan), inner.slots)
        return inner

    def kept(self, plan: JPlan) -> JPlan:
        """``plan`` computed now and kept (localCheckpoint keeps the attribute ids, so
        the operators above still resolve); released after the capture."""
        self._computed_apart(plan)
        df = self.bridge.to_dataframe(plan).localCheckpoint(eager=True)
        self.checkpoints.append(df)
        return self.bridge.analyzed(df)

    def computed_once(self, plan: JPlan) -> JPlan:
        """``plan`` kept when first computed (a cached relation), not now: a scalar
        subquery's row is then computed inside the query's own job, beside the stages
        that do not wait for it, as Spark runs it without capture, and its lineage is
        read from the same row; a window's rows, with their positions, are read by its
        side relation from what the query computed. Only for deterministic plans: a
        cache evicted and computed again gives a deterministic plan's rows again
        (released after the capture)."""
        self._computed_apart(plan)
        df = self.bridge.to_dataframe(plan).persist(StorageLevel.MEMORY_AND_DISK)
        self.checkpoints.append(df)
        relation = self.bridge.cached_relation(df)
        columns = self.bridge.output(relation)
        if columns:
            self.cached_bytes[self.bridge.expr_id(columns[0])] = self.input_bytes(plan)
        return relation

    def broadcast_limit(self) -> int:
        """``spark.sql.autoBroadcastJoinThreshold`` in bytes (-1: broadcasts off), read
        once a capture."""
        if self.broadcast_bytes is None:
            self.broadcast_bytes = self.bridge.conf_bytes("spark.sql.autoBroadcastJoinThreshold", "10MB")
        return self.broadcast_bytes

    def input_bytes(self, plan: JPlan) -> int:
        """The bytes of the relations ``plan`` reads (``Bridge.leaf_bytes``), a relation
        kept by ``computed_once`` counted as those it reads."""
        return self.bridge.leaf_bytes(plan, self.cached_bytes)

    def _computed_apart(self, plan: JPlan) -> None:
        # sides gathered inside ``plan`` would be gathered by a job the capture does not
        # watch (a checkpoint's, a cached relation's, which Spark does not report with
        # the query's): they run alone instead
        observed = [s for s in self.sides if s.observed is not None]
        if observed:
            text = plan.treeString()
            for side in observed:
                if side.observed.name in text:
                    side.observed = None

    def nondeterminism(self, node: JPlan) -> str | None:
        """What could make ``node`` give other rows in another run (None: nothing)."""
        b = self.bridge
        # Catalyst's own summaries first: one call each instead of a walk of the subtree
        if not b.is_plan_deterministic(node):
            return "a non-deterministic expression"
        if b.has_pattern(node, "LIMIT"):
            return "LIMIT"
        if self.checked is not None and self.checked.isdisjoint(("Sample", "AttachDistributedSequence", "Offset")):
            return None
        op = b.node_name(node)
        if op in ("GlobalLimit", "LocalLimit"):
            return "LIMIT"
        if op == "Offset":
            return "OFFSET"
        if op == "Sample":
            return "sample"
        if op == "AttachDistributedSequence":  # numbers rows in the order they arrive
            return "a row number (pandas API on Spark's default index)"
        for e in b.expressions(node):
            if not b.is_deterministic(e):
                return f"non-deterministic expression {b.expr_sql(e)[:80]}"
        for c in b.children(node):
            found = self.nondeterminism(c)
            if found:
                return found
        return None


def _resolved_alike(a: SideRelation, b: SideRelation) -> bool:
    # nothing added to a side after it is made (rows gathered by the query, a payload,
    # a set per row) and the same way of resolving it
    plain = all(s.narrow is None and s.observed is None and s.payload is None and not s.set_per_row for s in (a, b))
    how = attrgetter("operator", "shared", "ranged", "factorable", "combine")
    return plain and how(a) == how(b) and (a.sets is None) == (b.sets is None) and len(a.slots) == len(b.slots)
