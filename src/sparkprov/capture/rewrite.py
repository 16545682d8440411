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
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from pyspark.util import PythonEvalType

from ..errors import InvalidArgument, UnsupportedOperation
from ..plan.catalyst import Bridge, JExpr, JPlan, quiet_analysis
from ..sources import identity as S
from ..store.format import Slot  # noqa: F401 - also imported from here
from . import python_functions as P


@dataclass
class SideRelation:
    """``(handle, slots of the input)`` for one grouping operator."""

    index: int
    operator: str
    plan: JPlan
    slots: list[Slot]
    shared: bool = False  # kept once and referenced (a scalar subquery's result row)
    ranged: bool = False  # a window's: rows are (handle, position, slots), slots name position ranges
    # How a row depends on its group, for why/how provenance (query/provenance.py):
    # "values"   the row's values are computed from every row of the group (aggregates,
    #            windows, Python functions over groups or partitions);
    # "distinct" any one row of the group derives it (duplicate elimination);
    # "matches"  it depends on one of the rows, no duplicates eliminated (semi join
    #            matches, a scalar subquery's result row)
    combine: str = "values"
    # the same relation with the join inside it broadcasting its left side (a semi join's
    # matches): for resolving a few handles, which reduce that side to a few rows first
    narrow: JPlan | None = None


@dataclass
class ExplainLine:
    """One operator of the captured plan: its lineage granularity and how it is captured."""

    depth: int
    operator: str
    granularity: str  # "exact", or "coarse: <why>"
    strategy: str

    def to_json(self) -> list:
        return [self.depth, self.operator, self.granularity, self.strategy]


@dataclass
class Rewritten:
    plan: JPlan
    slots: list[Slot]
    coarse: str | None = None  # why this operator's lineage is coarse, when only some of its cases are
    strategy: str | None = None  # for explain(), when the rule chose among strategies


@dataclass
class SourceUse:
    """A source and how the capture reads it (one per distinct relation)."""

    info: S.SourceInfo
    leaf: JPlan  # a representative analyzed leaf
    snapshot_plan: JPlan | None = None  # for snapshot sources: the Parquet scan of the copy
    key: Any = None  # sources.leaf_key of the leaf (None: an in-memory leaf)


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
    "Offset",  # the rows kept depend on the order, as for LIMIT; see _nondeterminism
    "CollectMetrics",  # df.observe(): metrics over the rows that pass
    "Repartition",  # repartition(n), coalesce(n)
    "RepartitionByExpression",  # repartition(n, cols), DISTRIBUTE BY
    "ResolvedHint",  # broadcast() and other hints: kept, so the planner still sees them
    "Sample",  # the kept rows are the ones this run kept; see _rewrite_stable
    "RebalancePartitions",
    "WindowGroupLimit",  # the rank-limit filter Spark inserts below rank() <= n
    "AttachDistributedSequence",  # pandas API on Spark's default index: a row number added
)
# the optimizer moves row-level Python UDFs (plain, Arrow, pandas scalar) out of their
# Project into one of these: the child's rows, each with the UDF results appended
PYTHON_EVAL = ("BatchEvalPython", "ArrowEvalPython")
PYTHON_UDTF = ("BatchEvalPythonUDTF", "ArrowEvalPythonUDTF")  # where the optimizer puts Python UDTF calls
LEAVES = ("LogicalRelation", "LogicalRDD", "LocalRelation", "Range", "OneRowRelation")
JOIN_TYPES = ("Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti", "ExistenceJoin")
_RANK_LIKE = ("RowNumber", "Rank", "DenseRank")
_WHOLE_PARTITION = ("PercentRank", "CumeDist", "NTile")
_WINDOW_FUNCTIONS = (*_RANK_LIKE, *_WHOLE_PARTITION, "Lag", "Lead", "AggregateExpression", "NthValue")
_POS = "__sp_pos"  # lineage.POS
NO_LINEAGE = "__sp_no_lineage"  # marks a union branch whose rows give no lineage (EXCEPT ALL's right side)
_COUNT = "__sp_count"
_SUBQUERY_HOSTS = ("Filter", "Project", "Aggregate")  # operators whose every row depends on the subquery

_CARRIED = "1:1: slot columns carried through"
_BY_PARTITION = "partition: the partition number added to the function's output; side relation (partition, input slots)"
_STRATEGY = {
    **dict.fromkeys(PASS_THROUGH, _CARRIED),
    "Project": "1:1: slot columns appended",
    **dict.fromkeys(PYTHON_EVAL, "1:1: row-level Python UDF results appended, slot columns carried"),
    "Aggregate": "group: handle (grouping key) per row; side relation (handle, input slots)",
    "Distinct": "group: handle (the row) per row; side relation (handle, input slots)",
    "Deduplicate": "group: handle (the key) per row; side relation (handle, input slots)",
    "Union": "each branch's slots, NULL for the other branches' (none from EXCEPT ALL's right side)",
    "Generate": "1:N: each generated row keeps its input row's slots",
    "Expand": "1:N: each copy keeps its input row's slots",
    **dict.fromkeys(
        ("FlatMapGroupsInPandas", "FlatMapCoGroupsInPandas", "FlatMapGroupsInArrow", "FlatMapCoGroupsInArrow"),
        "group: the group's handle copied through the Python function; side relation (handle, input slots)",
    ),
    **dict.fromkeys(("MapInPandas", "MapInArrow"), _BY_PARTITION),
    **dict.fromkeys(PYTHON_UDTF, "1:N: each row eval() yields keeps its input row's slots"),
    "Window": "own slots plus, per function, a range of positions in the partition; "
    "side relation (partition, position, input slots)",
}
_JOIN_STRATEGY = {
    **dict.fromkeys(
        ("Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter"), "pairs: both sides' slots (NULL when padded)"
    ),
    "LeftAnti": "left slots only: absent matches are not dependencies",
    "LeftSemi": "left slots plus a group of matches; side relation: the inner join",
    "ExistenceJoin": "left slots plus a group of matches; side relation: the inner join",
}
_COARSE = {
    op: "coarse: the Python function is opaque; every row of its input partition"
    for op in ("MapInPandas", "MapInArrow")
}
_HANDLE = "__sp_handle"
_GROUPED_ITER = (PythonEvalType.SQL_GROUPED_MAP_PANDAS_ITER_UDF, PythonEvalType.SQL_GROUPED_MAP_ARROW_ITER_UDF)
_INJECT = "inject: input rids (and handles) collected in the aggregate's own state, an array per slot; no side relation"
_INJECT_PER_LEFT_ROW = (
    "inject: left rows numbered, inner-joined to the right with the condition and grouped back by number, "
    "each carrying its matches' rids (the left side is the smaller); no side relation"
)
# the explain() note of an aggregate whose input is first reduced (``_plan_reductions``)
_REDUCED = "input first reduced to the keys the join above can match, read again from its"
_INJECT_MATCHES = (
    "inject: right side grouped by the join key, its rids collected; an inner join in place of the semi join, "
    "each row carrying its matches; no side relation"
)
PRUNED = "pruned"  # the kind of a source outside a declared workload: no lineage kept
_PRUNED_TEXT = "no lineage kept (not among the workload's sources)"


def _selected_text(predicate: str) -> str:
    return f"lineage kept only where {predicate} (workload where)"


STRATEGIES = ("auto", "inject", "logical", "defer", "lazy")
# auto's bound on an aggregate's input (Catalyst's size estimate) for inject; a Spark
# conf, in bytes or with a unit ("512m", "8g")
INJECT_MAX_INPUT_BYTES = "spark.sparkprov.injectMaxInputBytes"
_INJECT_MAX_DEFAULT = "1g"
# the slot kinds inject collects, and the kind of the array it makes of each
_COLLECTED = {"source": "rids", "rids": "rids", "group": "groups", "groups": "groups"}
ARRAY_SLOTS = ("rids", "groups")  # slots holding an array (collected by inject; an RDD record's groups)
_ORDER_WHEN_READ = (
    "1:1: the output's order, kept with the stored rows and applied when they are read; "
    "the rows and their lineage are not sorted"
)
_SUBQUERY_STRATEGY = "scalar subquery: its lineage stored once; rows carry a reference"

_LAZY_STRATEGY = "lazy: nothing captured; the first answer runs the query again with capture"
_LAZY_REFUSES = (
    "strategy='lazy' builds lineage by running the query again, which needs the same rows from the "
    "same sources each time; capture with strategy='auto'"
)
# operators whose rows can differ between two runs (a LIMIT or OFFSET over an order is
# fine). An RDD or in-memory source is copied at capture, as for any capture, and the
# second run reads the copy.
_LAZY_REFUSED = {
    "GlobalLimit": "LIMIT without ORDER BY",
    "LocalLimit": "LIMIT without ORDER BY",
    "Offset": "OFFSET without ORDER BY",
    "Sample": "a sample",
    "AttachDistributedSequence": "a row number (pandas API on Spark's default index)",
}

_UDTF_COARSE = "coarse: the Python UDTF {}; every row of its input partition"
# expression classes that capture does not verify. The optimizer takes every Python
# UDTF call out into a PYTHON_UDTF node (checked there); one left anywhere else is refused.
_UNSUPPORTED_EXPRESSIONS = {
    "PythonUDTF": "Python UDTF",
}
# a Catalyst tree pattern every expression above carries (a Python UDTF is a generator):
# an expression without it needs no walk
_UNSUPPORTED_PATTERN = "GENERATOR"


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
    analyzed: JPlan = None  # the user's plan (CTEs inlined)
    optimized: JPlan = None  # the plan as captured: the analyzed plan through Spark's optimizer
    leaf_names: dict[str, str] = field(default_factory=dict)  # view names, by leaf attribute ids
    subqueries: dict[int, int] = field(default_factory=dict)  # shared side relation per scalar subquery id
    root: Rewritten | None = None
    # for the re-execution check: every occurrence of a source is a source of its own,
    # and occurrence i reads only the rids in restrict[i] (a DataFrame with _sp_rid)
    by_occurrence: bool = False
    restrict: dict | None = None
    report: list[ExplainLine] = field(default_factory=list)  # one line per operator, for explain()
    operators: set[str] = field(default_factory=set)  # the captured plan's operator names, subqueries' too
    # operator names in the optimized plan (subqueries included), gathered by
    # check_supported, to skip walks that cannot find anything; None when unknown (then
    # everything is walked)
    checked: set[str] | None = None
    # how grouping operators keep their groups (STRATEGIES): "auto" picks per operator
    strategy: str = "auto"
    # a declared workload's sources (capture/workload.py): only these keep lineage
    keep: frozenset[str] | None = None
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
    unknown_bytes: int = 0  # spark.sql.defaultSizeInBytes, read by rewrite_root
    _depth: int = 0
    _ids: itertools.count = field(default_factory=itertools.count)
    # aggregates whose input is first reduced to the keys a join above can match, by
    # the aggregate node (``_node_key``): (grouping keys, the join's values, their plan)
    _reductions: dict[tuple[int, str], tuple[list, list, JPlan]] = field(default_factory=dict)

    # ---- driver --------------------------------------------------------------------
    def rewrite_root(self, plan: JPlan) -> Rewritten:
        with self.bridge.remembering():  # the plans are walked several times
            return self._rewrite_root(plan)

    def _rewrite_root(self, plan: JPlan) -> Rewritten:
        self.analyzed = plan
        self.inject_max_bytes = self.bridge.conf_bytes(INJECT_MAX_INPUT_BYTES, _INJECT_MAX_DEFAULT)
        self.unknown_bytes = self.bridge.conf_bytes("spark.sql.defaultSizeInBytes", str(2**63 - 1))
        self._collect_view_names(plan, None)
        self.optimized = self.bridge.optimized(self._prepared(plan))
        self.check_supported(self.optimized)  # fail before any work (snapshots, checkpoints) is done
        rw = self._rewrite_top(self.optimized)
        self._check_workload()
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
        self.report.append(ExplainLine(1, b.simple_string(plan), "exact", _ORDER_WHEN_READ))
        (child,) = b.children(plan)
        self._depth += 1
        try:
            rw = self.rewrite(child)
        finally:
            self._depth -= 1
        self.order = [(positions[b.expr_id(attr)], ascending, nulls_first) for attr, ascending, nulls_first in keys]
        return rw

    def optimize_lazy(self, plan: JPlan) -> None:
        """What a lazy capture does instead of rewriting, first part: the plan optimized
        as for capture (``Bridge.optimized``: capture's settings in this thread alone),
        so it may run while the query is planned and run; ``check_lazy`` follows it.

        A lazy capture's lineage is built later by running the query again with capture
        and matching that run's rows to the stored ones by value, so a query whose rows
        or row sources could differ between two runs is refused (``UnsupportedOperation``).
        """
        b = self.bridge
        self.analyzed = plan
        self._collect_view_names(plan, None)
        if b.has_pattern(plan, "CURRENT_LIKE"):  # folded into a literal each time the plan is optimized
            raise UnsupportedOperation("the current time or date", self._where(plan), _LAZY_REFUSES)
        self.optimized = b.optimized(self._prepared(plan))

    def check_lazy(self) -> None:
        """The second part: the optimized plan checked against the rules, its sources
        registered (named, fingerprinted, non-Parquet ones copied) and one explain line
        per operator."""
        b = self.bridge
        self.check_supported(self.optimized)
        if not b.is_plan_deterministic(self.optimized):
            found = self._nondeterminism(self.optimized) or "a non-deterministic expression"
            raise UnsupportedOperation(found, self._where(self.optimized), _LAZY_REFUSES)
        self._walk_lazy(self.optimized, 1)
        self._check_workload()
        for use in self.sources:  # a bad predicate fails now, not when lineage is built
            if use.info.name in self.where and use.info.kind != PRUNED:
                probe = b.to_dataframe(use.leaf).withColumn("__sp_rid", F.lit(0).cast("long"))
                self._selected(b.analyzed(probe), use.info.name)

    def _check_workload(self) -> None:
        if self.read_elsewhere is None:
            return
        read = sorted({u.info.name for u in self.sources} | self.read_elsewhere)
        unknown = sorted((self.keep or set()) - set(read))
        if unknown:
            raise InvalidArgument(f"the workload names source(s) {unknown} the query does not read; it reads {read}")

    def _walk_lazy(self, node: JPlan, depth: int) -> None:
        b = self.bridge
        op = b.node_name(node)
        self.operators.add(op)
        refused = _LAZY_REFUSED.get(op)
        if op in ("GlobalLimit", "LocalLimit", "Offset") and self._ordered(node):
            refused = None  # the first n rows of an order: the same rows, up to ties
        if refused:
            raise UnsupportedOperation(op, self._where(node), f"{refused}; {_LAZY_REFUSES}")
        if op in LEAVES:
            src = self._leaf_source(node)
            strategy = f"source {self.sources[src].info.name}" if src is not None else "constant rows"
            if src is not None and self.sources[src].info.kind == PRUNED:
                strategy += f": {_PRUNED_TEXT}"
            elif src is not None and self.sources[src].info.name in self.where:
                strategy += f": {_selected_text(self.where[self.sources[src].info.name])}"
        else:
            strategy = _LAZY_STRATEGY
        self.report.append(ExplainLine(depth, b.simple_string(node), _COARSE.get(op, "exact"), strategy))
        for child in b.children(node):
            self._walk_lazy(child, depth + 1)
        for sub in self._subquery_plans(node):
            if not b.is_plan_deterministic(sub):
                raise UnsupportedOperation("a non-deterministic subquery", self._where(sub), _LAZY_REFUSES)
            self._walk_lazy(sub, depth + 1)

    def _ordered(self, node: JPlan) -> bool:
        """Whether ``node`` (a LIMIT or OFFSET) takes rows in an order: a Sort below it,
        through limits and projections."""
        b = self.bridge
        while b.node_name(node) in ("GlobalLimit", "LocalLimit", "Offset", "Project"):
            (node,) = b.children(node)
        return b.node_name(node) == "Sort"

    def user_output(self, rw: Rewritten) -> list[JExpr]:
        """The rewritten plan's output without its slot columns, in the user's order."""
        b = self.bridge
        slot_ids = {b.expr_id(s.attr) for s in rw.slots}
        return [a for a in b.output(rw.plan) if b.expr_id(a) not in slot_ids]

    def rewrite(self, node: JPlan) -> Rewritten:
        b = self.bridge
        op = b.node_name(node)
        self.operators.add(op)
        line = len(self.report)
        self.report.append(None)  # filled in below: the report lists operators top-down
        self._depth += 1
        try:
            subqueries = []
            if op in LEAVES:
                rw = self.rule_leaf(node)
            else:
                rule = RULES.get(op)
                if rule is None:
                    raise UnsupportedOperation(op, self._where(node))
                subqueries = self._scalar_subqueries(node)
                if subqueries:
                    node = self._pin_subqueries(node, subqueries)
                    subqueries = self._scalar_subqueries(node)  # now reading their kept rows
                rw = rule(self, node)
        finally:
            self._depth -= 1
        self.report[line] = self._explain_line(node, op, rw)
        return self._add_subquery_slots(rw, subqueries) if subqueries else rw

    def _scalar_subqueries(self, node: JPlan) -> list[JExpr]:
        b = self.bridge
        if not b.has_pattern(node, "SCALAR_SUBQUERY"):
            return []
        return [sq for e in b.expressions(node) for sq in b.scalar_subqueries(e)]

    def _subquery_plans(self, node: JPlan) -> list[JPlan]:
        b = self.bridge
        if not b.has_pattern(node, "PLAN_EXPRESSION"):
            return []
        return b.to_list(node.subqueries())  # the plans of its expressions' subqueries

    def _explain_line(self, node: JPlan, op: str, rw: Rewritten) -> ExplainLine:
        b = self.bridge
        if op in LEAVES:
            if not rw.slots:
                strategy = rw.strategy or "constant rows: no source rows behind them"
            else:
                use = self.sources[self.instances[rw.slots[0].ref].source]
                if use.info.kind == "parquet":
                    strategy = f"source {use.info.name}: rid = file number and Parquet row index, read in place"
                elif b.is_checkpoint(node):
                    strategy = (
                        f"source {use.info.name}: a checkpoint, which cut the plan: lineage stops at its rows "
                        "(session.checkpoint() keeps it)"
                    )
                else:
                    strategy = f"source {use.info.name}: rid = position in a Parquet copy made at capture"
                if use.info.name in self.where:
                    strategy += f"; {_selected_text(self.where[use.info.name])}"
        elif op == "Join":
            strategy = rw.strategy or _JOIN_STRATEGY.get(b.join_type(node).split("(")[0], "")
        else:
            strategy = rw.strategy or (_BY_PARTITION if rw.coarse else _STRATEGY.get(op, ""))
        granularity = rw.coarse or _COARSE.get(op, "exact")
        return ExplainLine(self._depth + 1, b.simple_string(node), granularity, strategy)  # the root is depth 1

    def _prepared(self, plan: JPlan) -> JPlan:
        b = self.bridge
        # one look at Catalyst's pattern bits spares walking a plan with nothing to change
        if b.has_pattern(plan, "EXCEPT") or b.has_pattern(plan, "PLAN_EXPRESSION"):
            return self._prepare(plan)
        return plan

    def _prepare(self, node: JPlan) -> JPlan:
        # Spark plans EXCEPT ALL as an aggregate over the union of both sides; capture
        # plans it the same way itself, with the right side marked as giving no lineage.
        b = self.bridge
        kids = b.children(node)
        new = [self._prepare(c) for c in kids]
        if any(n is not o for n, o in zip(new, kids)):
            node = b.with_new_children(node, new)
        if b.is_except_all(node):
            return self._except_all(node)
        # The optimizer would turn an uncorrelated EXISTS into "the first row of the
        # subquery exists" (a LIMIT 1): its lineage would be one matching row, not all
        # of them. As a semi join without condition, every row of the subquery counts.
        exists, rest = b.uncorrelated_exists_conjuncts(node)
        if exists:
            if any(b.outputs_overlap(b.children(node)[0], plan) for plan in exists):
                raise UnsupportedOperation(
                    "uncorrelated EXISTS", self._where(node), "its subquery reads the same relation as the query"
                )
            node = b.filter_semi_joins(node, exists, rest)
        if any(self._has_except_all(plan) for plan in self._subquery_plans(node)):
            if b.node_name(node) not in _SUBQUERY_HOSTS:
                raise UnsupportedOperation(
                    f"EXCEPT ALL inside a subquery expression of {b.node_name(node)}", self._where(node)
                )
            node = b.map_subquery_plans(node, lambda p: self._prepare(p) if self._has_except_all(p) else p)
        return node

    def _has_except_all(self, node: JPlan) -> bool:
        b = self.bridge
        if not b.has_pattern(node, "EXCEPT"):  # no EXCEPT of any kind below
            return False
        return b.is_except_all(node) or any(self._has_except_all(c) for c in b.children(node))

    def _except_all(self, node: JPlan) -> JPlan:
        b = self.bridge
        left, right = b.children(node)
        cols = [f"c{i}" for i in range(len(b.output(left)))]
        mine = b.to_dataframe(left).toDF(*cols).withColumn(_COUNT, F.lit(1))
        theirs = b.to_dataframe(right).toDF(*cols).withColumn(NO_LINEAGE, F.lit(-1))
        counted = mine.union(theirs).groupBy(*cols).agg(F.sum(_COUNT).alias(_COUNT)).where(F.col(_COUNT) > 0)
        copies = counted.select(F.inline(F.array_repeat(F.struct(*cols), F.col(_COUNT).cast("int"))))
        plan = b.analyzed(copies)
        # the operators above read EXCEPT ALL's own attributes: keep their ids
        exprs = [b.alias(new, b.attr_name(old), b.jexpr_id(old)) for new, old in zip(b.output(plan), b.output(node))]
        return b.project(exprs, plan)

    def _collect_view_names(self, node: JPlan, name: str | None) -> None:
        # The optimizer removes views; their names still name the relations they read.
        b = self.bridge
        b.prefetch(node)  # the whole tree in one round trip, the first time
        op = b.node_name(node)
        if op in LEAVES:
            self.leaf_names.setdefault(self._leaf_id(node), name)
        elif op == "View":
            name = b.view_name(node)
        elif op not in ("SubqueryAlias", "Project", "Filter"):
            name = None  # a view name applies to its leaf only through simple wrappers
        subqueries = self._subquery_plans(node)  # first: its pattern bits spare the children's
        for child in b.children(node):
            self._collect_view_names(child, name)
        for plan in subqueries:
            self._collect_view_names(plan, None)

    def _leaf_id(self, leaf: JPlan) -> str:
        return self.bridge.output_ids(leaf)

    def check_supported(self, node: JPlan, below: bool = True) -> None:
        """Raise ``UnsupportedOperation`` for the first operator or expression no rule
        handles; the operators checked are added to ``checked``. ``below=False``: no
        expression in ``node``'s subtree has ``_UNSUPPORTED_PATTERN`` (its parent's bits
        said so: they cover the subtree, not the plans of subqueries)."""
        b = self.bridge
        b.prefetch(node)  # the whole tree in one round trip, the first time
        op = b.node_name(node)
        if self.checked is None:
            self.checked = set()
        self.checked.add(op)
        below = below and b.has_pattern(node, _UNSUPPORTED_PATTERN)
        if below or b.has_pattern(node, "PLAN_EXPRESSION"):
            self._check_expressions(node, op)
        if op not in LEAVES and op not in RULES:
            raise UnsupportedOperation(op, self._where(node))
        if op == "Window":
            for e in b.window_parts(node)[0]:
                kind = b.window_function(e)[0]
                if kind not in _WINDOW_FUNCTIONS:
                    raise UnsupportedOperation(
                        f"Window ({kind})", self._where(node), "this window function is not verified"
                    )
        if op == "Join" and b.join_type(node).split("(")[0] not in JOIN_TYPES:
            raise UnsupportedOperation(f"Join ({b.join_type(node)})", self._where(node))
        if op == "LogicalRelation" and b.file_relation(node) is None:
            raise UnsupportedOperation("LogicalRelation", self._where(node), "only file-based relations are supported")
        for child in b.children(node):
            self.check_supported(child, below)

    def _where(self, node: JPlan) -> str:
        return self.bridge.tree_string(node)[:2000]

    def _check_expressions(self, node: JPlan, op: str) -> None:
        b = self.bridge
        for e in b.expressions(node):
            if b.contains_subquery(e):
                self._check_subqueries(node, op, e)
            walk = op not in PYTHON_UDTF and b.has_pattern(e, _UNSUPPORTED_PATTERN)
            for cls in b.expression_classes(e) if walk else ():
                if cls in _UNSUPPORTED_EXPRESSIONS:
                    raise UnsupportedOperation(_UNSUPPORTED_EXPRESSIONS[cls], self._where(node), f"in {op}")

    def _check_subqueries(self, node: JPlan, op: str, e: JExpr) -> None:
        # The optimizer has turned IN, EXISTS and correlated subqueries into joins; what
        # remains is uncorrelated scalar subqueries, computed once and referenced.
        b = self.bridge
        found = b.scalar_subqueries(e)
        if b.count_subqueries(e) != len(found):
            raise UnsupportedOperation("subquery expression", self._where(node), f"in {op}: {b.expr_sql(e)[:200]}")
        for sq in found:
            if op not in _SUBQUERY_HOSTS:
                raise UnsupportedOperation(f"scalar subquery in {op}", self._where(node))
            if b.is_correlated(sq):
                raise UnsupportedOperation("correlated scalar subquery", self._where(node), b.expr_sql(sq)[:200])
            self.check_supported(b.subquery_plan(sq))

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
            why = self._nondeterminism(plan)
            kept = " (row kept from this run)" if why else " (computed once by the query; lineage read from its row)"
            # called while the host's rule runs: the depth is already one below the host
            line = ExplainLine(self._depth, f"scalar subquery #{key}", "exact", _SUBQUERY_STRATEGY + kept)
            self.report.append(line)
            inner = self.rewrite(plan)
            if not inner.slots and not why:
                line.strategy = "scalar subquery: over constants only, no lineage"
                self.subqueries[key] = -1
                continue
            kept_plan = self._kept(inner.plan) if why else self._cached(inner.plan)
            value = self.user_output(inner)[0]
            self.subqueries[key] = (
                self._side(
                    "scalar subquery",
                    b.int_literal(0),
                    Rewritten(kept_plan, inner.slots),
                    shared=True,
                    combine="matches",
                )
                if inner.slots
                else -1
            )
            node = b.replace_subquery(node, sq, b.project([value], kept_plan))
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
                added.append(self._new_slot("group", ref))
        if not added:
            return rw
        exprs = b.output(rw.plan) + [b.alias(b.int_literal(0), s.name) for s in added]
        plan = b.project(exprs, rw.plan)
        out = b.output(plan)[-len(added) :]
        return Rewritten(plan, rw.slots + [Slot(s.name, s.kind, s.ref, a) for s, a in zip(added, out)])

    def _new_slot(self, kind: str, ref: int) -> Slot:
        prefix = "__sp_s" if kind == "source" else "__sp_g"
        return Slot(name=f"{prefix}{next(self._ids)}", kind=kind, ref=ref)

    # ---- leaves --------------------------------------------------------------------
    def rule_leaf(self, leaf: JPlan) -> Rewritten:
        b = self.bridge
        src_index = self._leaf_source(leaf)
        if src_index is None:
            return Rewritten(leaf, [])
        if self.sources[src_index].info.kind == PRUNED:
            name = self.sources[src_index].info.name
            return Rewritten(leaf, [], strategy=f"source {name}: {_PRUNED_TEXT}")
        self.instances.append(Instance(source=src_index))
        slot = self._new_slot("source", len(self.instances) - 1)
        use = self.sources[src_index]
        files = [path for path, _, _ in use.info.files]
        if use.info.kind == "parquet":
            plan = self._restricted(b.with_file_rids(leaf, files, S.ROW_BITS, slot.name), slot, src_index)
        else:
            snap_plan = self._restricted(
                b.with_file_rids(use.snapshot_plan, files, S.ROW_BITS, slot.name), slot, src_index
            )
            snap_out = b.output(snap_plan)
            # keep the leaf's attribute ids so the operators above still resolve
            exprs = [b.alias(new, b.attr_name(old), b.jexpr_id(old)) for new, old in zip(snap_out, b.output(leaf))]
            exprs.append(snap_out[-1])
            plan = b.project(exprs, snap_plan)
        plan = self._selected(plan, use.info.name)
        slot.attr = b.last_output(plan)
        return Rewritten(plan, [slot])

    def _leaf_source(self, leaf: JPlan) -> int | None:
        """The number of the source ``leaf`` reads (registered on first sight), or None
        for a leaf without source rows."""
        b = self.bridge
        if b.node_name(leaf) == "OneRowRelation":
            return None  # constants: no input rows behind them
        if b.node_name(leaf) == "LocalRelation" and self._leaf_id(leaf) not in self.leaf_names and b.is_empty(leaf):
            return None  # the optimizer's stand-in for a part it proved empty
        return self._source_for(leaf, S.leaf_format(b, leaf), self.leaf_names.get(self._leaf_id(leaf)))

    def _selected(self, plan: JPlan, name: str) -> JPlan:
        """``plan`` (a leaf's columns, then its rid) with the rid NULL on the rows that
        fail the workload's predicate for source ``name``: those rows are read and
        used as before, but no operator above carries, collects or stores their rid."""
        predicate = self.where.get(name)
        if predicate is None:
            return plan
        b = self.bridge
        df = b.to_dataframe(plan)
        *columns, rid = df.columns
        try:
            # the leaf's columns keep their attribute ids: only the rid is replaced
            with quiet_analysis():
                selected = b.analyzed(df.withColumn(rid, F.when(F.expr(predicate), F.col(rid))))
        except PySparkException as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InvalidArgument(
                f"workload where for source {name!r}: {predicate!r} is not a predicate over its columns "
                f"({', '.join(columns)}): {first}"
            ) from None
        if not b.is_plan_deterministic(selected) or b.has_pattern(selected, "PLAN_EXPRESSION"):
            raise InvalidArgument(
                f"workload where for source {name!r}: {predicate!r} must be deterministic and hold no "
                "subquery: it is evaluated on each row as capture reads it"
            )
        return selected

    def _restricted(self, plan: JPlan, slot: Slot, src_index: int) -> JPlan:
        if self.restrict is None:
            return plan
        b = self.bridge
        df = b.to_dataframe(plan)
        keep = self.restrict[src_index].select(F.col(S.RID).alias("__sp_keep"))
        return b.analyzed(df.join(keep, F.col(slot.name) == keep["__sp_keep"], "left_semi"))

    def _source_for(self, leaf: JPlan, fmt: str, context: str | None) -> int:
        b = self.bridge
        key = S.leaf_key(b, leaf)
        for i, use in enumerate(self.sources):
            if self.by_occurrence:
                break
            other = use.key
            if (key is not None and key == other) or (key is None and other is None and b.same_result(leaf, use.leaf)):
                return i
        name = self._name_for(leaf, fmt, context)
        schema = b.schema_json(leaf)
        table = b.catalog_table_name(leaf) if b.node_name(leaf) == "LogicalRelation" else None
        if self.keep is not None and name not in self.keep:  # neither read for rids nor copied
            self.sources.append(SourceUse(S.SourceInfo(name, PRUNED, fmt, schema=schema, table=table), leaf, key=key))
            return len(self.sources) - 1
        roots, original = S.file_fingerprint(b, leaf)
        if fmt == "parquet":
            info = S.SourceInfo(name, "parquet", fmt, original, roots, original, schema, table)
            self.sources.append(SourceUse(info, leaf, key=key))
        else:
            info, snap_plan = self._snapshot(leaf, name, fmt, roots, original, schema, table)
            self.sources.append(SourceUse(info, leaf, snap_plan, key=key))
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
        if b.is_checkpoint(leaf):
            return self._unique(f"checkpoint_{len(self.sources)}")
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
        data.toDF(*[S.snapshot_column(i) for i in range(len(data.columns))]).write.parquet(path)
        snap = b.spark.read.parquet(path)
        files = sorted(b.files(b.file_relation(b.analyzed(snap))))
        info = S.SourceInfo(name, "snapshot", fmt, files, roots, original, schema, table)
        return info, b.analyzed(snap)

    # ---- 1:1 operators -----------------------------------------------------------
    def rule_pass_through(self, node: JPlan) -> Rewritten:
        (child,) = self.bridge.children(node)
        inner = self.rewrite(child)
        return Rewritten(self.bridge.with_new_children(node, [inner.plan]), inner.slots)

    def rule_project(self, node: JPlan) -> Rewritten:
        b = self.bridge
        (child,) = b.children(node)
        inner = self.rewrite(child)
        exprs = b.project_list(node) + [s.attr for s in inner.slots]
        return Rewritten(b.project(exprs, inner.plan), inner.slots)

    def rule_generate(self, node: JPlan) -> Rewritten:
        # explode, inline, stack, ReplicateRows...: each output row comes from one input
        # row. The child's columns are put first so Generate's column indexes still hold.
        (child,) = self.bridge.children(node)
        inner = self._user_first(self.rewrite(child))
        return Rewritten(self.bridge.with_new_children(node, [inner.plan]), inner.slots)

    def rule_expand(self, node: JPlan) -> Rewritten:
        # ROLLUP, CUBE, GROUPING SETS and distinct aggregates: every input row is copied
        # once per projection; each copy keeps the row's slots (fresh attributes, as
        # Expand outputs new ones).
        b = self.bridge
        (child,) = b.children(node)
        inner = self.rewrite(child)
        attrs = [s.attr for s in inner.slots]
        fresh = [b.new_instance(a) for a in attrs]
        plan = b.expand_like(node, attrs, fresh, inner.plan)
        return Rewritten(plan, [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, fresh)])

    def _user_first(self, rw: Rewritten) -> Rewritten:
        b = self.bridge
        user = self.user_output(rw)
        out = b.output(rw.plan)
        if [b.expr_id(a) for a in out[: len(user)]] == [b.expr_id(a) for a in user]:
            return rw
        return Rewritten(b.project(user + [s.attr for s in rw.slots], rw.plan), rw.slots)

    # ---- windows -------------------------------------------------------------------
    def rule_window(self, node: JPlan) -> Rewritten:
        # Each output row keeps its own slots and gets, per window function, a *window
        # slot* (partition key, lo, hi): the rows of its partition at sorted positions
        # lo..hi. Positions and bounds are counts computed in the same Window node as
        # the user's functions, so they see the rows in the order the functions saw them:
        #   frame aggregates   hi = count over (UNBOUNDED PRECEDING .. frame end),
        #                      lo = hi - count over the frame + 1 (frames are contiguous)
        #   row_number, rank   1 .. count over (RANGE UNBOUNDED PRECEDING .. CURRENT ROW)
        #   percent_rank, cume_dist, ntile   the whole partition
        #   lag / lead         the one position pos + offset
        # The side relation (partition key, position, input slots) resolves them.
        b = self.bridge
        (child,) = b.children(node)
        named, partition, _ = b.window_parts(node)
        inner = self._user_first(self.rewrite(child))
        like = b.window_function(named[0])[2]
        counts: list[JExpr] = []

        def count(frame_type: str, lower, upper) -> JExpr:
            alias = b.alias(b.count_over(like, frame_type, lower, upper), f"__sp_w{next(self._ids)}")
            counts.append(alias)
            return alias

        pos = count("RowFrame", "unbounded_preceding", "current_row")
        bounds: list[tuple[JExpr, JExpr]] = []  # (lo, hi) expressions over the counts
        unstable = False  # positions among ties differ between runs: keep this run's
        for e in named:
            kind, fn, wexpr = b.window_function(e)
            if kind in _RANK_LIKE:
                peers = count("RangeFrame", "unbounded_preceding", "current_row")
                bounds.append((b.long_literal(1), b.to_attribute(peers)))
            elif kind in _WHOLE_PARTITION:
                size = count("RowFrame", "unbounded_preceding", "unbounded_following")
                bounds.append((b.long_literal(1), b.to_attribute(size)))
            elif kind in ("Lag", "Lead"):
                if fn.ignoreNulls():
                    raise UnsupportedOperation(f"Window ({kind.lower()} IGNORE NULLS)", self._where(node))
                at = b.arithmetic("+", b.to_attribute(pos), b.long_literal(b.offset_value(fn)))
                bounds.append((at, at))
                unstable = True
            elif kind in ("AggregateExpression", "NthValue"):
                ftype, lower, upper = b.frame(wexpr)
                if b.is_unbounded(lower) and b.is_unbounded(upper):
                    size = count("RowFrame", "unbounded_preceding", "unbounded_following")
                    bounds.append((b.long_literal(1), b.to_attribute(size)))
                    continue
                hi = count(ftype, "unbounded_preceding", upper)
                size = count(ftype, lower, upper)
                lo = b.arithmetic("+", b.arithmetic("-", b.to_attribute(hi), b.to_attribute(size)), b.long_literal(1))
                bounds.append((lo, b.to_attribute(hi)))
                unstable = unstable or ftype == "RowFrame"
            else:
                raise UnsupportedOperation(
                    f"Window ({kind})", self._where(node), "this window function is not verified"
                )
        window = b.window_like(node, named + counts, inner.plan)
        handle = b.struct(partition) if partition else b.int_literal(0)
        side_index = len(self.sides)  # the side relation appended below
        slots, window_cols = [], []
        for lo, hi in bounds:
            slot = self._new_slot("window", side_index)
            value = b.named_struct([("h", handle), ("lo", lo), ("hi", hi)])
            window_cols.append(b.alias(value, slot.name))
            slots.append(slot)
        user = self.user_output(Rewritten(b.with_new_children(node, [inner.plan]), inner.slots))
        exprs = user + [s.attr for s in inner.slots] + [b.alias(b.to_attribute(pos), _POS)] + window_cols
        plan = b.project(exprs, window)
        if unstable or self._nondeterminism(child):
            plan = self._kept(plan)
        out = b.output(plan)
        pos_attr = out[len(user) + len(inner.slots)]
        for slot, attr in zip(slots, out[len(out) - len(slots) :]):
            slot.attr = attr
        side_exprs = [b.alias(handle, "__sp_h"), b.alias(pos_attr, _POS)]
        side_plan = b.project(side_exprs + out[len(user) : len(user) + len(inner.slots)], plan)
        side_slots = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(user) :])]
        self.sides.append(SideRelation(side_index, "Window", side_plan, side_slots, ranged=True))
        result = b.project(
            out[: len(user)] + out[len(user) : len(user) + len(inner.slots)] + [s.attr for s in slots], plan
        )
        return Rewritten(result, side_slots + slots)

    # ---- joins ---------------------------------------------------------------------
    def rule_join(self, node: JPlan) -> Rewritten:
        b = self.bridge
        kind = b.join_type(node)
        left, right = b.children(node)
        if kind == "LeftSemi" or kind.startswith("ExistenceJoin"):
            return self._semi_join(node, left, right)
        if kind.split("(")[0] not in JOIN_TYPES:
            raise UnsupportedOperation(f"Join ({kind})", self._where(node))
        self._plan_reductions(node, kind, left, right)
        lw, rw = self.rewrite(left), self.rewrite(right)
        plan = b.with_new_children(node, [lw.plan, rw.plan])
        if kind == "LeftAnti":  # the left row only: an absence of matches is not a dependency
            return Rewritten(plan, lw.slots)
        # inner, cross, outer: a NULL-padded side has NULL slots, so that row keeps only
        # its preserved side. The slots are the join's own output attributes: an outer
        # join makes the padded side's nullable, and operators above (Expand's generated
        # code) must not assume they are never NULL.
        if kind == "Inner" or kind == "Cross":
            return Rewritten(plan, lw.slots + rw.slots)
        by_id = {b.expr_id(a): a for a in b.output(plan)}
        slots = [Slot(s.name, s.kind, s.ref, by_id.get(b.expr_id(s.attr), s.attr)) for s in lw.slots + rw.slots]
        return Rewritten(plan, slots)

    def _plan_reductions(self, join: JPlan, kind: str, left: JPlan, right: JPlan) -> None:
        """Register a reduction for an aggregate on one side of ``join`` (through
        projections and filters) whose grouping keys the join equates with the other
        side: its input is first filtered to the keys the other side holds. A group
        whose key is not there cannot meet a row of it, so the join drops that group
        anyway, with every value it computed and every rid it collected (TPC-H Q17
        averages lineitem per part for the 0.1% of parts the other side keeps). The
        groups kept have all their rows: their values and lineage are unchanged. The
        filter is added below the rewritten aggregate (``rule_aggregate``), so it
        brings no lineage of its own, and only when the keys come from a filtered part
        of the other side small enough to broadcast: that part is read once more."""
        b = self.bridge
        pairs = ([(left, right)] if kind in ("Inner", "RightOuter") else []) + (
            [(right, left)] if kind in ("Inner", "LeftOuter") else []
        )
        found = []  # (the aggregate, its side, the other side): cheap questions first
        for side, other in pairs:  # other: the side whose rows every kept group meets
            agg = side
            while b.node_name(agg) in ("Project", "Filter"):
                (agg,) = b.children(agg)
            if b.node_name(agg) == "Aggregate":
                found.append((agg, side, other))
        cond = join.condition()
        if not found or cond.isEmpty():
            return
        limit = b.conf_bytes("spark.sql.autoBroadcastJoinThreshold", "10m")
        conjuncts = [c for c in b.conjuncts(cond.get()) if b.class_name(c) == "EqualTo"]
        if limit <= 0 or not conjuncts:
            return
        for agg, side, other in found:
            passed = {b.expr_id(a) for a in b.output(side)}
            other_ids = {b.expr_id(a) for a in b.output(other)}
            keys, values, used = [], [], set()
            for c in conjuncts:
                for mine, theirs in ((c.left(), c.right()), (c.right(), c.left())):
                    if b.class_name(mine) != "AttributeReference" or b.expr_id(mine) not in passed:
                        continue
                    refs = {b.expr_id(a) for a in b.to_list(theirs.references().toSeq())}
                    key = self._grouping_key(agg, mine)
                    if key is not None and refs and refs <= other_ids and b.is_deterministic(theirs):
                        keys.append(key)
                        values.append(theirs)
                        used |= refs
                        break
            if not keys:
                continue
            source = self._narrowest(other, used)
            # a part without a filter likely holds every key (a foreign key's table):
            # reading it again would drop nothing
            if (
                self._selects(source)
                and self._parquet_only(source)
                and b.leaf_bytes(source) <= limit
                and not b.has_pattern(source, "PLAN_EXPRESSION")
                and b.is_plan_deterministic(source)
            ):
                self._reductions[self._node_key(agg)] = (keys, values, source)

    def _selects(self, plan: JPlan) -> bool:
        """Whether ``plan`` holds a filter that can drop rows with values: a condition
        other than the ``IS NOT NULL`` ones Catalyst infers for join keys (Q15's
        supplier table has only those, and every supplier is a key)."""
        b = self.bridge
        if not b.has_pattern(plan, "FILTER"):
            return False
        if b.node_name(plan) == "Filter" and any(b.class_name(c) != "IsNotNull" for c in b.conjuncts(plan.condition())):
            return True
        return any(self._selects(child) for child in b.children(plan))

    def _node_key(self, node: JPlan) -> tuple[int, str]:
        """This very plan node: its JVM identity, and its output attributes (unique to
        it in a plan) in case two nodes' identity numbers coincide."""
        b = self.bridge
        return b.identity(node), b.output_ids(node)

    def _parquet_only(self, plan: JPlan) -> bool:
        """Whether every leaf of ``plan`` is Parquet files, which the query reads in place
        too: a second read sees the rows it sees. (Other sources are read from the copy
        the capture makes; a second read of the original could see other rows.)"""
        b = self.bridge
        return all(S.leaf_format(b, leaf) == "parquet" for leaf in b.to_list(plan.collectLeaves()))

    def _grouping_key(self, agg: JPlan, attr: JExpr) -> JExpr | None:
        """The grouping expression behind ``attr``, one of ``agg``'s output columns."""
        b = self.bridge
        for named in b.aggregate_expressions(agg):
            if b.expr_id(named) == b.expr_id(attr):
                value = named if b.class_name(named) == "AttributeReference" else named.child()
                return next((g for g in b.grouping_expressions(agg) if g.semanticEquals(value)), None)
        return None

    def _narrowest(self, plan: JPlan, used: set[int]) -> JPlan:
        """The smallest part of ``plan`` that still yields every value of the columns
        ``used``: down through projections and inner joins, to the child that has them."""
        b = self.bridge
        while b.node_name(plan) == "Project" or (
            b.node_name(plan) == "Join" and b.join_type(plan) in ("Inner", "Cross")
        ):
            below = [c for c in b.children(plan) if used <= {b.expr_id(a) for a in b.output(c)}]
            if not below:
                break
            plan = below[0]
        return plan

    def _semi_join(self, node: JPlan, left: JPlan, right: JPlan) -> Rewritten:
        # The left row and every right row it matches (a semi join, or the existence
        # join Spark plans for EXISTS/IN under OR or in a projection, which keeps every
        # left row and adds a flag). The matches form a group found by the inner join of
        # the same inputs, named by the left row's slots and the left columns the
        # condition reads: rows equal on both have the same matches.
        b = self.bridge
        lw, rw = self._rewrite_stable(left, node), self._rewrite_stable(right, node)
        if b.join_type(node) == "LeftSemi" and rw.slots and self._stays_logical(rw) is None:
            # Inject: the group of matches is collected in the query itself. When the
            # left side reads less than the right, the matching pairs are grouped back
            # by left row; otherwise an equi join's right side is grouped by key. Pairs
            # can outnumber the right side when a key has many left rows (TPC-H Q21
            # pairs lineitem with itself, sizes equal: it stays logical)
            if b.leaf_bytes(lw.plan) < b.leaf_bytes(rw.plan):
                return self._inject_per_left_row(node, lw, rw, right)
            keys = b.equi_join_keys(node)
            if keys:
                return self._inject_matches(node, lw, rw, right, *keys)
        left_ids = {b.expr_id(a) for a in b.output(left)}
        used = [a for a in b.condition_references(node) if b.expr_id(a) in left_ids]
        handle = b.struct([s.attr for s in lw.slots] + used)
        # The side relation's handle is made on the left input, below the inner join:
        # resolving reaches it with a semi join on the handle, which Catalyst then pushes
        # down to that input, so only the left rows the output kept are joined (TPC-H
        # Q21). Made above the join, the semi join stays on top of the whole join.
        left = b.project(b.output(lw.plan) + [b.alias(handle, f"__sp_m{next(self._ids)}")], lw.plan)
        matches = Rewritten(b.inner_join_like(node, left, rw.plan), rw.slots)
        narrow = b.inner_join_like(node, left, rw.plan, broadcast_left=True)
        operator = f"Join ({b.join_type(node).split('(')[0]})"
        slot = self._group_slot(operator, b.output(left)[-1], matches, "matches", narrow)
        semi = b.with_new_children(node, [lw.plan, rw.plan])
        plan = b.project(b.output(semi) + [b.alias(handle, slot.name)], semi)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, lw.slots + [slot])

    def _inject_matches(self, node: JPlan, lw: Rewritten, rw: Rewritten, right: JPlan, left_keys, right_keys):
        # A semi join on key equalities alone: a left row's matches are the right rows
        # with its key. The right side is grouped by the key, collecting its slots (as an
        # injected aggregate does), and inner-joined in place of the semi join: one row
        # per key, so each left row is kept once, as the semi join keeps it, carrying
        # its matches' rids. No side relation re-runs the join afterwards.
        b = self.bridge
        keys = [b.alias(k, f"__sp_k{next(self._ids)}") for k in right_keys]
        collected = self._collected(right, rw.slots)
        grouped = b.group_by(right_keys, keys + collected, rw.plan)
        out = b.output(grouped)
        joined = b.key_join(node, lw.plan, grouped, left_keys, out[: len(keys)])
        arrays = out[len(keys) :]
        plan = b.project(b.output(lw.plan) + arrays, joined)
        slots = self._collected_slots(arrays, rw.slots)
        return Rewritten(plan, lw.slots + slots, strategy=_INJECT_MATCHES)

    def _inject_per_left_row(self, node: JPlan, lw: Rewritten, rw: Rewritten, right: JPlan) -> Rewritten:
        # A semi join over a left side smaller than its right: the left rows are
        # numbered, inner-joined to the right with the semi join's condition (any
        # condition), and grouped back by their number, collecting their matches'
        # slots. Only matching pairs are grouped, not the whole right side (TPC-H Q4:
        # 140K pairs for the quarter's 57K orders, against 3.8M lineitem rows grouped by
        # order). A left row with a match comes out once with its own values, as the
        # semi join keeps it; one without, not at all. The number tells apart left rows
        # that are equal in every column and slot (rows of constants, an explode's copies).
        b = self.bridge
        left = b.output(lw.plan)
        number = b.alias(b.row_id(), f"__sp_n{next(self._ids)}")
        joined = b.inner_join_like(node, b.project(left + [number], lw.plan), rw.plan)
        # the left columns keep their attribute ids, so the operators above still resolve
        kept = [b.alias(b.first(a), b.attr_name(a), b.jexpr_id(a)) for a in left]
        collected = self._collected(right, rw.slots)
        plan = b.group_by([b.to_attribute(number)], kept + collected, joined)
        arrays = b.output(plan)[len(kept) :]
        slots = self._collected_slots(arrays, rw.slots)
        return Rewritten(plan, lw.slots + slots, strategy=_INJECT_PER_LEFT_ROW)

    def _collected_slots(self, arrays: list[JExpr], slots: list[Slot]) -> list[Slot]:
        """The slots of ``arrays``, the attributes ``_collected`` made for ``slots``."""
        b = self.bridge
        return [Slot(b.attr_name(a), self._collected_kind(s), s.ref, a) for a, s in zip(arrays, slots)]

    def _collected(self, child: JPlan, slots: list[Slot]) -> list[JExpr]:
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
                if self._collected_kind(s) == "group"
                else b.collect_rids(s.attr, s.kind in ARRAY_SLOTS, repeats and _COLLECTED[s.kind] == "rids"),
                f"__sp_r{next(self._ids)}",
            )
            for s in slots
        ]

    def refers_to_shared(self, slot: Slot) -> bool:
        """Whether ``slot`` is a handle of a shared side (a scalar subquery's row)."""
        return slot.kind == "group" and self.sides[slot.ref].shared

    def _collected_kind(self, slot: Slot) -> str:
        # A reference to a scalar subquery's lineage (a constant handle) is the same for
        # every row: the group keeps one, a scalar, as the subquery's other rows do, and
        # none (NULL) when it has no rows. Everything else is collected into an array.
        return "group" if self.refers_to_shared(slot) else _COLLECTED[slot.kind]

    # ---- grouping operators --------------------------------------------------------
    def rule_aggregate(self, node: JPlan) -> Rewritten:
        b = self.bridge
        (child,) = b.children(node)
        grouping = b.grouping_expressions(node)
        for g in grouping:
            if not b.is_deterministic(g):
                raise UnsupportedOperation(
                    "Aggregate", self._where(node), f"non-deterministic grouping expression {b.expr_sql(g)[:80]}"
                )
        inner = self._rewrite_stable(child, node)
        # two round trips for the key: only asked when some join registered a reduction
        reduced = self._reductions.pop(self._node_key(node), None) if self._reductions else None
        if reduced is not None:
            keys, values, source = reduced
            inner = Rewritten(b.in_subquery_filter(keys, values, source, inner.plan), inner.slots)
        rw = self._aggregate(node, inner, grouping)
        if reduced is not None:
            rw.strategy = f"{rw.strategy or 'group'}; {_REDUCED} {b.node_name(source)}"
        return rw

    def _aggregate(self, node: JPlan, inner: Rewritten, grouping: list[JExpr]) -> Rewritten:
        b = self.bridge
        logical = self._stays_logical(inner, node)
        if logical is None:
            return self._inject(node, inner)
        handle = b.struct(grouping) if grouping else b.int_literal(0)
        # an Aggregate without aggregate functions only removes duplicates (DISTINCT
        # arrives as one)
        computes = any(
            b.has_pattern(e, "AGGREGATE_EXPRESSION") or b.has_pattern(e, "PYTHON_UDF")
            for e in b.aggregate_expressions(node)
        )
        slot = self._group_slot("Aggregate", handle, inner, "values" if computes else "distinct")
        out_alias = b.alias(handle, slot.name)
        plan = b.aggregate_like(node, b.aggregate_expressions(node) + [out_alias], inner.plan)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, [slot], strategy=f"{_STRATEGY['Aggregate']}: {logical}")

    def _stays_logical(self, inner: Rewritten, aggregate: JPlan | None = None) -> str | None:
        """Why this aggregate keeps a side relation rather than injecting (None: it injects)."""
        # Auto injects wherever the input slots can be collected: measured on every
        # TPC-H aggregate and on Smoke's group-bys, that beats running the input again
        # for a side relation, even over a bare scan. It stays logical over an input
        # estimated above the bound: one group's rids are one array in memory, and a
        # global aggregate's one group is its whole input.
        if self.strategy == "logical":
            return "strategy='logical'"
        if self.strategy == "defer":
            return "strategy='defer': the side relation is resolved after the output is written"
        if not all(s.kind in _COLLECTED for s in inner.slots):
            return "a window's ranges are not collected"
        b = self.bridge
        if aggregate is not None and any(b.has_pattern(e, "PYTHON_UDF") for e in b.aggregate_expressions(aggregate)):
            return "Spark evaluates a pandas aggregate UDF only beside other pandas UDFs, not beside rid arrays"
        if self.strategy == "inject":
            return None
        # the rewritten input's leaves: Parquet files, in-memory sources as their copies
        size = self.bridge.leaf_bytes(inner.plan)
        if size >= self.unknown_bytes:  # what Catalyst assumes for a relation it cannot size (an RDD)
            return f"input of unknown size, so possibly above {INJECT_MAX_INPUT_BYTES}"
        if size > self.inject_max_bytes:
            return f"input read from {size:,} bytes, above {INJECT_MAX_INPUT_BYTES}={self.inject_max_bytes:,}"
        return None

    def _inject(self, node: JPlan, inner: Rewritten) -> Rewritten:
        # Smoke's inject: the aggregate keeps its input rows' rids in its own state, one
        # array per slot (an inner aggregate's arrays are flattened), so the output row
        # carries its lineage and no side relation is built. An input slot that is a
        # handle (a semi join's matches, a logical aggregate's group) is collected the
        # same way: the row then names every group its input rows came from.
        b = self.bridge
        (child,) = b.children(node)
        collected = self._collected(child, inner.slots)
        plan = b.aggregate_like(node, b.aggregate_expressions(node) + collected, inner.plan)
        out = b.output(plan)[len(b.output(plan)) - len(collected) :]
        slots = self._collected_slots(out, inner.slots)
        return Rewritten(plan, slots, strategy=_INJECT)

    def rule_distinct(self, node: JPlan) -> Rewritten:
        (child,) = self.bridge.children(node)
        return self._dedup(node, child, self.bridge.output(child))

    def rule_deduplicate(self, node: JPlan) -> Rewritten:
        (child,) = self.bridge.children(node)
        return self._dedup(node, child, self.bridge.dedup_keys(node))

    def _dedup(self, node: JPlan, child: JPlan, keys: list[JExpr]) -> Rewritten:
        # Keep one row per key (as Spark does), drop its slots and name the whole
        # group with a handle instead: every row sharing the key is in the lineage.
        b = self.bridge
        inner = self._rewrite_stable(child, node)
        slot = self._group_slot(b.node_name(node), b.struct(keys), inner, "distinct")
        dedup = b.deduplicate(keys, inner.plan)
        user = b.output(child)
        plan = b.project(user + [b.alias(b.struct(keys), slot.name)], dedup)
        slot.attr = b.output(plan)[-1]
        return Rewritten(plan, [slot])

    def _group_slot(
        self, operator: str, handle: JExpr, inner: Rewritten, combine: str, narrow: JPlan | None = None
    ) -> Slot:
        return self._new_slot("group", self._side(operator, handle, inner, combine=combine, narrow=narrow))

    def _side(
        self,
        operator: str,
        handle: JExpr,
        inner: Rewritten,
        shared: bool = False,
        combine: str = "values",
        narrow: JPlan | None = None,
    ) -> int:
        """A side relation ``(handle, slots)`` over ``inner``; ``narrow``: the same
        input in its broadcasting form (``SideRelation.narrow``)."""
        b = self.bridge

        def side(plan: JPlan) -> JPlan:
            return b.project([b.alias(handle, "__sp_h")] + [s.attr for s in inner.slots], plan)

        self.sides.append(
            SideRelation(
                len(self.sides),
                operator,
                side(inner.plan),
                inner.slots,
                shared,
                combine=combine,
                narrow=side(narrow) if narrow is not None else None,
            )
        )
        return len(self.sides) - 1

    def _rewrite_stable(self, child: JPlan, parent: JPlan) -> Rewritten:
        # The side relation re-runs the input and must see the same rows as the query:
        # an input that could differ between runs (LIMIT, rand()) is computed once and kept.
        inner = self.rewrite(child)
        if self._nondeterminism(child):
            inner = Rewritten(self._kept(inner.plan), inner.slots)
        return inner

    def _kept(self, plan: JPlan) -> JPlan:
        """``plan`` computed now and kept (localCheckpoint keeps the attribute ids, so
        the operators above still resolve); released after the capture."""
        df = self.bridge.to_dataframe(plan).localCheckpoint(eager=True)
        self.checkpoints.append(df)
        return self.bridge.analyzed(df)

    def _cached(self, plan: JPlan) -> JPlan:
        """``plan`` kept when first computed (a cached relation), not now: a scalar
        subquery's row is then computed inside the query's own job, beside the stages
        that do not wait for it, as Spark runs it without capture, and its lineage is
        read from the same row. Only for deterministic plans: a cache evicted and
        computed again gives a deterministic plan's row again (released after the
        capture)."""
        df = self.bridge.to_dataframe(plan).persist(StorageLevel.MEMORY_AND_DISK)
        self.checkpoints.append(df)
        return self.bridge.cached_relation(df)

    def _nondeterminism(self, node: JPlan) -> str | None:
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
            found = self._nondeterminism(c)
            if found:
                return found
        return None

    # ---- Python functions over groups and partitions ------------------------------
    def rule_flat_map_groups(self, node: JPlan) -> Rewritten:
        # applyInPandas / applyInArrow: an output row may come from any row of its
        # group. Each input row gets the group's handle (see _keyed_input), the wrapper
        # copies it to the group's output rows, and the side relation maps it back to
        # the group's rows. The function is called in the form the user's call used.
        b = self.bridge
        (child,) = b.children(node)
        func, _, args = b.python_function(node)
        grouping = b.grouping_attributes(node)
        keyed, slot = self._keyed_input(node, grouping, args, self._rewrite_stable(child, node))
        names, offset = [b.attr_name(a) for a in args], len(grouping)
        arrow = b.node_name(node) == "FlatMapGroupsInArrow"
        if b.python_eval_type(node) in _GROUPED_ITER:
            wrapped = P.grouped_map_iter(func, names, offset, _HANDLE, arrow)
        else:
            wrapped = P.grouped_map(func, names, offset, _HANDLE, arrow)
        grouped = keyed.groupBy(*keyed.columns[:offset])
        schema = self._python_schema(node, StringType())
        result = grouped.applyInArrow(wrapped, schema) if arrow else grouped.applyInPandas(wrapped, schema)
        return self._python_output(node, result, [slot])

    def rule_flat_map_cogroups(self, node: JPlan) -> Rewritten:
        # cogroup().applyInPandas / applyInArrow: an output row may come from any row of
        # both groups with its key; each side's group is named as for applyInPandas.
        b = self.bridge
        func, _, _ = b.python_function(node)
        sides, slots, names = [], [], []
        for child, n in zip(b.children(node), (node.leftGroupingLen(), node.rightGroupingLen())):
            out = b.output(child)
            keyed, slot = self._keyed_input(node, out[:n], out[n:], self._rewrite_stable(child, node))
            sides.append(keyed.groupBy(*keyed.columns[:n]))
            slots.append(slot)
            names.append([b.attr_name(a) for a in out[n:]])
        arrow = b.node_name(node) == "FlatMapCoGroupsInArrow"
        wrapped = P.cogrouped_map(func, names[0], names[1], node.leftGroupingLen(), _HANDLE, arrow)
        schema = self._python_schema(node, StringType(), StringType())
        cogrouped = sides[0].cogroup(sides[1])
        result = cogrouped.applyInArrow(wrapped, schema) if arrow else cogrouped.applyInPandas(wrapped, schema)
        return self._python_output(node, result, slots)

    def _keyed_input(self, node: JPlan, grouping: list[JExpr], args: list[JExpr], inner: Rewritten):
        """The grouped function's input as a DataFrame of keys, arguments and a group
        handle, and the group slot whose side relation maps the handle to its rows.

        The handle is the smallest JSON spelling of the key among the group's rows:
        the same for every row Spark groups together (-0.0 and 0.0 included) and
        different between groups.
        """
        b = self.bridge
        keys = [f"__sp_k{i}" for i in range(len(grouping))]
        cols = [f"__sp_a{i}" for i in range(len(args))]
        named = [b.alias(e, n) for e, n in zip(grouping + args, keys + cols)]
        base = b.to_dataframe(b.project(named + [s.attr for s in inner.slots], inner.plan))
        handle = F.min(F.to_json(F.struct(*keys))).over(Window.partitionBy(*keys)) if keys else F.lit("{}")
        keyed = base.withColumn(_HANDLE, handle)
        plan = b.analyzed(keyed)
        out = b.output(plan)
        moved = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(named) : len(out) - 1])]
        slot = self._new_slot("group", self._side(b.node_name(node), out[-1], Rewritten(plan, moved)))
        return keyed.select(*keys, *cols, _HANDLE), slot

    def _python_schema(self, node: JPlan, *handles) -> StructType:
        fields = list(self.bridge.to_dataframe(node).schema.fields)
        return StructType(fields + [StructField(f"{_HANDLE}{i}", t) for i, t in enumerate(handles)])

    def rule_map_in_batches(self, node: JPlan) -> Rewritten:
        # mapInPandas / mapInArrow: the function sees whole partitions, so an output row
        # may come from any row of its input partition (coarse). The input is computed
        # once, so the function and the side relation see the same partitions.
        b = self.bridge
        (child,) = b.children(node)
        func, _, args = b.python_function(node)
        inner = self.rewrite(child)
        kept = self._kept(b.project(args + [s.attr for s in inner.slots], inner.plan))
        out = b.output(kept)
        moved = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(args) :])]
        slot = self._new_slot("group", self._side(b.node_name(node), b.partition_id(), Rewritten(kept, moved)))
        schema = self._python_schema(node, IntegerType())
        data = b.to_dataframe(b.project(out[: len(args)], kept))
        barrier = bool(node.isBarrier())
        if b.node_name(node) == "MapInPandas":
            result = data.mapInPandas(P.pandas_batches(func, f"{_HANDLE}0"), schema, barrier=barrier)
        else:
            result = data.mapInArrow(P.arrow_batches(func, f"{_HANDLE}0"), schema, barrier=barrier)
        return self._python_output(node, result, [slot])

    def rule_python_udtf(self, node: JPlan) -> Rewritten:
        # Spark pairs the rows eval() yields with the input row it was called on, so
        # each such row comes from that one row (1:N, like a generator). Rows yielded by
        # terminate() come after the whole partition (Spark pairs them with its last
        # row), and a table argument hands the function whole partitions: then every
        # output row may come from any row of its input partition (coarse, as for
        # mapInPandas: the input is computed once so both sides see the same partitions).
        b = self.bridge
        (child,) = b.children(node)
        handler, takes_table = b.python_udtf(node)
        inner = self.rewrite(child)
        if not takes_table and not callable(getattr(handler, "terminate", None)):
            passed = b.udtf_passed_columns(node) + [s.attr for s in inner.slots]
            return Rewritten(b.udtf_generate(node, passed, inner.plan), inner.slots)
        kept = self._kept(inner.plan)
        slot = self._new_slot("group", self._side(b.node_name(node), b.partition_id(), Rewritten(kept, inner.slots)))
        called = b.udtf_generate(node, b.udtf_passed_columns(node), kept)
        plan = b.project(b.output(called) + [b.alias(b.partition_id(), slot.name)], called)
        slot.attr = b.output(plan)[-1]
        why = "takes a table argument" if takes_table else "has terminate()"
        return Rewritten(plan, [slot], coarse=_UDTF_COARSE.format(why))

    def _python_output(self, node: JPlan, result, slots: list[Slot]) -> Rewritten:
        # the function's columns under the node's own attribute ids, so the operators
        # above still resolve, then the handles as group slots
        b = self.bridge
        plan = b.analyzed(result)
        out = b.output(plan)
        user = len(out) - len(slots)
        exprs = [b.alias(new, b.attr_name(old), b.jexpr_id(old)) for new, old in zip(out[:user], b.output(node))]
        plan = b.project([*exprs, *[b.alias(a, s.name) for a, s in zip(out[user:], slots)]], plan)
        for s, a in zip(slots, b.output(plan)[user:]):
            s.attr = a
        return Rewritten(plan, slots)

    # ---- union ---------------------------------------------------------------------
    def rule_union(self, node: JPlan) -> Rewritten:
        b = self.bridge
        if not b.is_positional_union(node):
            raise UnsupportedOperation("Union (by name)", self._where(node))
        branches, kept = [], []
        for c in b.children(node):
            branches.append(self.rewrite(c))
            # a marked branch's slots are dropped: NULL in the union
            kept.append(not any(b.attr_name(a) == NO_LINEAGE for a in b.output(c)))
        all_slots = [s for br, keep in zip(branches, kept) if keep for s in br.slots]
        padded = []
        for br, keep in zip(branches, kept):
            own = {s.name for s in br.slots} if keep else set()
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


RULES: dict[str, Callable[[Rewriter, JPlan], Rewritten]] = {
    **{op: Rewriter.rule_pass_through for op in PASS_THROUGH + PYTHON_EVAL},
    "Project": Rewriter.rule_project,
    "Join": Rewriter.rule_join,
    "Aggregate": Rewriter.rule_aggregate,
    "Distinct": Rewriter.rule_distinct,
    "Deduplicate": Rewriter.rule_deduplicate,
    "Union": Rewriter.rule_union,
    "Generate": Rewriter.rule_generate,
    "Expand": Rewriter.rule_expand,
    "Window": Rewriter.rule_window,
    **dict.fromkeys(("FlatMapGroupsInPandas", "FlatMapGroupsInArrow"), Rewriter.rule_flat_map_groups),
    **dict.fromkeys(("FlatMapCoGroupsInPandas", "FlatMapCoGroupsInArrow"), Rewriter.rule_flat_map_cogroups),
    "MapInPandas": Rewriter.rule_map_in_batches,
    **dict.fromkeys(PYTHON_UDTF, Rewriter.rule_python_udtf),
    "MapInArrow": Rewriter.rule_map_in_batches,
}

SUPPORTED_OPERATORS = tuple(sorted(set(RULES) | set(LEAVES)))
