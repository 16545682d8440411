"""What the capture rules work with: a rule's result (``Rewritten``), the side
relations and sources a capture collects, its explain lines, and the operator names
the rules group by kind.

>>> Rewritten(plan=None, slots=[]).coarse is None
True
>>> "Filter" in PASS_THROUGH and "Range" in LEAVES
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..plan.catalyst import JPlan
from ..plan.observed import ObservedRows
from ..sources import identity as S
from ..store.format import Slot


@dataclass
class PayloadSide:
    """A shared side whose sets are not stored but made by a function's ``map_p`` when a
    trace reaches them (``sp.lineage(..., keep="payload")``): its rows are the
    function's output rows (set id, payload columns); a set holds what its input rows'
    ids name, per id column: ``("source", instance)``, rows of a source (ids carried
    through the function), or ``("side", k)``, sets of shared side ``k`` (the kept
    input's rows, a set each)."""

    inputs: list[tuple[str, int]]
    declaration: bytes  # functions.payloads.kept_declaration

    def sides(self) -> list[int]:
        """The shared sides its sets hold sets of."""
        return [ref for kind, ref in self.inputs if kind == "side"]


@dataclass
class SideRelation:
    """``(handle, slots of the input)`` for one grouping operator."""

    index: int
    operator: str
    plan: JPlan
    slots: list[Slot]
    shared: bool = False  # kept once and referenced (a scalar subquery's result row)
    # a shared side with a set per window partition: its rows' set ids (__sp_h, a hash
    # of the partition's key) beside the keys hashed (SET_KEY), for the check that no
    # two keys share an id before its lineage is stored; None: one set, id 0
    sets: JPlan | None = None
    ranged: bool = False  # a window's: rows are (handle, position, slots), slots name position ranges
    # a window's whose large ranges may be kept as blocks of a shared side (not with
    # witnesses: why and how read every window's side as ranges)
    factorable: bool = False
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
    # its rows gathered by the query's own job (plan/observed.py), where small
    observed: ObservedRows | None = None
    # a shared side with a set per row, its handle a row id (unique: no clash to check)
    set_per_row: bool = False
    payload: PayloadSide | None = None

    @property
    def has_sets(self) -> bool:
        """Whether this is a shared side with a set per window partition or per row."""
        return self.shared and (self.sets is not None or self.set_per_row)


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
    declared: str | None = None  # a Python function's own lineage declaration (exact as declared)


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

    source: int  # index into CaptureContext.sources


# operators through which a row passes unchanged (lineage 1:1, slots carried)
PASS_THROUGH = (
    "Filter",
    "Sort",
    "SubqueryAlias",
    "View",
    "GlobalLimit",
    "LocalLimit",
    "Offset",  # the rows kept depend on the order, as for LIMIT; see CaptureContext.nondeterminism
    "CollectMetrics",  # df.observe(): metrics over the rows that pass
    "Repartition",  # repartition(n), coalesce(n)
    "RepartitionByExpression",  # repartition(n, cols), DISTRIBUTE BY
    "ResolvedHint",  # broadcast() and other hints: kept, so the planner still sees them
    "Sample",  # the kept rows are the ones this run kept; see CaptureContext.rewrite_stable
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
NO_LINEAGE = "__sp_no_lineage"  # marks a union branch whose rows give no lineage (EXCEPT ALL's right side)
SUBQUERY_HOSTS = ("Filter", "Project", "Aggregate")  # operators whose every row depends on the subquery
PRUNED = "pruned"  # the kind of a source outside a declared workload: no lineage kept
SET_KEY = "__sp_k"  # the partition key beside its set id, in SideRelation.sets
