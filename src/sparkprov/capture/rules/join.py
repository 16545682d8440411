"""The join rule: inner, cross and outer joins concatenate both sides' slots (NULL on a
padded side); an anti join keeps the left row's. An aggregate on one side whose keys the
join equates with a filtered, small other side is first reduced to the keys that side
holds (``plan_reductions``): the groups the join would drop are never computed. An
aggregate whose rows the join repeats (its grouping keys met by many rows of the other
side) keeps its groups' lineage once, as a shared side (``join_repeats``).

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> left = session.source(spark.createDataFrame([(1, "x"), (2, "y")], ["k", "a"]), "left")
>>> right = session.source(spark.createDataFrame([(1, "p"), (1, "q")], ["k", "b"]), "right")
>>> cap = session.capture(left.join(right, "k"), "joined")
>>> sorted(r.b for r in cap.backward("b = 'q'", "right").collect())
['q']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UnsupportedOperation
from ...plan.catalyst import JPlan
from ...sources import identity as S
from ...store.format import Slot
from ..shapes import JOIN_TYPES, Rewritten
from ..strategy import COLLECTED
from . import semi_join
from .join_keys import aggregate_below, equalities, matched_keys, node_key
from .join_repeats import plan_repeats

if TYPE_CHECKING:
    from ..context import CaptureContext


def rule(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A join: both sides' slots (a semi or existence join: ``semi_join.rule``)."""
    b = cx.bridge
    kind = b.join_type(node)
    left, right = b.children(node)
    if kind == "LeftSemi" or kind.startswith("ExistenceJoin"):
        return semi_join.rule(cx, node, left, right)
    if kind.split("(")[0] not in JOIN_TYPES:
        raise UnsupportedOperation(f"Join ({kind})", cx.plan_text(node))
    plan_reductions(cx, node, kind, left, right)
    plan_repeats(cx, node, kind, left, right)
    lw, rw = cx.rewrite(left), cx.rewrite(right)
    plan = _broadcast_as_planned(cx, node, kind, b.with_new_children(node, [lw.plan, rw.plan]), (lw, rw))
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


# the sides Spark can broadcast, per join type (its canBuildBroadcastLeft / Right)
_BUILD_LEFT = ("Inner", "Cross", "RightOuter")
_BUILD_RIGHT = ("Inner", "Cross", "LeftOuter", "LeftAnti")
_ARRAYS = frozenset(COLLECTED.values())  # the slot kinds of collected arrays


def _broadcast_as_planned(
    cx: CaptureContext, node: JPlan, kind: str, plan: JPlan, rewritten: tuple[Rewritten, Rewritten]
) -> JPlan:
    """``plan``, ``node`` over its ``rewritten`` sides, hinted to broadcast the side Spark
    broadcasts for ``node`` without capture. Spark chooses by each side's size estimate
    (``spark.sql.autoBroadcastJoinThreshold``), which the slots widen: TPC-H Q9 at SF 10
    broadcasts part's green parts, but their estimate with a rid passed the threshold
    and the capture shuffled all of lineitem (1.7 GB against 98 MB) to join them. A
    side whose slots are collected arrays is left to Spark: a row's arrays can hold
    any number of rids, so that side can be far larger than its estimate."""
    b = cx.bridge
    hint = node.hint()
    if hint.leftHint().isDefined() or hint.rightHint().isDefined():  # the user's hint stays
        return plan
    if cx.broadcast_limit() < 0:
        return plan
    kind = kind.split("(")[0]
    sides = [(s, left) for s, left, types in ((1, False, _BUILD_RIGHT), (0, True, _BUILD_LEFT)) if kind in types]
    children = b.children(node)
    sizes = [(b.size_estimate(children[s]), left) for s, left in sides]
    if sides and all(size > cx.broadcast_bytes for size, _ in sizes):
        # capture prunes columns only once its slots are in (ColumnPruning is left to
        # the plan it runs), so a side of a wide table estimates above what Spark
        # estimates without capture: Q9's part is 69 MB whole, 7.5 MB pruned to its key
        planned = _planned_sizes(cx).get(_join_key(node))
        sizes = [(planned[s], left) for s, left in sides] if planned else []
    # as Spark picks: the smaller side that fits, the right one of two equal
    fits = sorted((size, left) for size, left in sizes if 0 <= size <= cx.broadcast_bytes)
    if not fits or any(slot.kind in _ARRAYS for slot in rewritten[0 if fits[0][1] else 1].slots):
        return plan
    return b.broadcasting(plan, left=fits[0][1])


def _join_key(join: JPlan) -> tuple[str, str]:
    # the attribute ids in a condition are the analyzed plan's in both optimizations
    return str(join.joinType().toString()), str(join.condition().toString())


def _planned_sizes(cx: CaptureContext) -> dict[tuple[str, str], tuple[int, int]]:
    """The sides' size estimates of each join in the plan Spark runs without capture,
    by join type and condition (a key two joins share is left out): optimized once a
    capture, when a join needs it."""
    if cx.planned_sizes is None:
        b = cx.bridge
        found: dict[tuple[str, str], tuple[int, int] | None] = {}
        todo = [b.optimized_as_is(cx.analyzed)]
        while todo:
            node = todo.pop()
            if b.node_name(node) == "Join":
                key = _join_key(node)
                sizes = (b.size_estimate(node.left()), b.size_estimate(node.right()))
                found[key] = None if key in found else sizes
            todo.extend(b.children(node))
        cx.planned_sizes = {k: v for k, v in found.items() if v is not None}
    return cx.planned_sizes


def plan_reductions(cx: CaptureContext, join: JPlan, kind: str, left: JPlan, right: JPlan) -> None:
    """Register a reduction for an aggregate on one side of ``join`` (through
    projections and filters) whose grouping keys the join equates with the other
    side: its input is first filtered to the keys the other side holds. A group
    whose key is not there cannot meet a row of it, so the join drops that group
    anyway, with every value it computed and every rid it collected (TPC-H Q17
    averages lineitem per part for the 0.1% of parts the other side keeps). The
    groups kept have all their rows: their values and lineage are unchanged. The
    filter is added below the rewritten aggregate (``aggregate.rule``), so it
    brings no lineage of its own, and only when the keys come from a filtered part
    of the other side small enough to broadcast: that part is read once more."""
    b = cx.bridge
    pairs = ([(left, right)] if kind in ("Inner", "RightOuter") else []) + (
        [(right, left)] if kind in ("Inner", "LeftOuter") else []
    )
    # (the aggregate, its side, the other side): cheap questions first
    found = [(agg, side, other) for side, other in pairs if (agg := aggregate_below(cx, side)) is not None]
    conjuncts = equalities(cx, join)
    if not found or not conjuncts:
        return
    limit = cx.broadcast_limit()
    if limit <= 0:
        return
    for agg, side, other in found:
        keys, values, used = matched_keys(cx, agg, side, other, conjuncts)
        if not keys:
            continue
        source = _narrowest(cx, other, used)
        # a part without a filter likely holds every key (a foreign key's table):
        # reading it again would drop nothing
        if (
            _selects(cx, source)
            and _parquet_only(cx, source)
            and b.leaf_bytes(source) <= limit
            and not b.has_pattern(source, "PLAN_EXPRESSION")
            and b.is_plan_deterministic(source)
        ):
            cx.reductions[node_key(cx, agg)] = (keys, values, source)


def _selects(cx: CaptureContext, plan: JPlan) -> bool:
    """Whether ``plan`` holds a filter that can drop rows with values: a condition
    other than the ``IS NOT NULL`` ones Catalyst infers for join keys (Q15's
    supplier table has only those, and every supplier is a key)."""
    b = cx.bridge
    if not b.has_pattern(plan, "FILTER"):
        return False
    if b.node_name(plan) == "Filter" and any(b.class_name(c) != "IsNotNull" for c in b.conjuncts(plan.condition())):
        return True
    return any(_selects(cx, child) for child in b.children(plan))


def _parquet_only(cx: CaptureContext, plan: JPlan) -> bool:
    """Whether every leaf of ``plan`` is Parquet files, which the query reads in place
    too: a second read sees the rows it sees. (Other sources are read from the copy
    the capture makes; a second read of the original could see other rows.)"""
    b = cx.bridge
    return all(S.leaf_format(b, leaf) == "parquet" for leaf in b.to_list(plan.collectLeaves()))


def _narrowest(cx: CaptureContext, plan: JPlan, used: set[int]) -> JPlan:
    """The smallest part of ``plan`` that still yields every value of the columns
    ``used``: down through projections and inner joins, to the child that has them."""
    b = cx.bridge
    while b.node_name(plan) == "Project" or (b.node_name(plan) == "Join" and b.join_type(plan) in ("Inner", "Cross")):
        below = [c for c in b.children(plan) if used <= {b.expr_id(a) for a in b.output(c)}]
        if not below:
            break
        plan = below[0]
    return plan
