"""The aggregate rule: a group's rids injected into the aggregate's own state (an array
per slot) or, where it stays logical (``strategy.stays_logical``), a handle per output
row and a side relation (handle, input slots). With witnesses, where the strategy
would inject (``strategy.collects_witnesses``), that side relation is read from the
witnesses the aggregate collected as the query ran.

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> nums = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], ["k", "v"]), "nums")
>>> cap = session.capture(nums.groupBy("k").sum("v"), "sums")
>>> sorted(r.v for r in cap.backward("k = 'a'", "nums").collect())
[1, 2]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from ...errors import UnsupportedOperation
from ...plan.catalyst import JExpr, JPlan
from ...store.format import Slot
from .. import strategy
from ..explain import INJECT, INJECT_SHARED, REDUCED, STRATEGY, WITNESSES_COLLECTED
from ..shapes import Rewritten
from .join_keys import node_key

if TYPE_CHECKING:
    from ..context import CaptureContext


def rule(cx: CaptureContext, node: JPlan) -> Rewritten:
    """An aggregate, its input first reduced where a join above registered a reduction."""
    b = cx.bridge
    (child,) = b.children(node)
    grouping = b.grouping_expressions(node)
    for g in grouping:
        if not b.is_deterministic(g):
            raise UnsupportedOperation(
                "Aggregate", cx.plan_text(node), f"non-deterministic grouping expression {b.expr_sql(g)[:80]}"
            )
    cx.grouped_above += 1
    try:
        inner = cx.rewrite_stable(child, node)
    finally:
        cx.grouped_above -= 1
    # two round trips for the key: asked once, only when some join registered a
    # reduction or a repeat
    key = node_key(cx, node) if cx.reductions or cx.repeated else None
    reduced = cx.reductions.pop(key, None) if key is not None else None
    if reduced is not None:
        keys, values, source = reduced
        inner = Rewritten(b.in_subquery_filter(keys, values, source, inner.plan), inner.slots)
    rw = _aggregate(cx, node, inner, grouping, repeated=key in cx.repeated)
    if reduced is not None:
        rw.strategy = f"{rw.strategy or 'group'}; {REDUCED} {b.node_name(source)}"
    return rw


def _aggregate(cx: CaptureContext, node: JPlan, inner: Rewritten, grouping: list[JExpr], repeated: bool) -> Rewritten:
    # ``repeated``: a join above repeats its rows (``join_repeats.plan_repeats``)
    b = cx.bridge
    logical = strategy.stays_logical(cx, inner, node)
    if logical is None:
        if repeated:
            return _inject_shared(cx, node, inner, grouping)
        return _inject(cx, node, inner)
    handle = b.struct(grouping) if grouping else b.int_literal(0)
    # an Aggregate without aggregate functions only removes duplicates (DISTINCT
    # arrives as one)
    computes = any(
        b.has_pattern(e, "AGGREGATE_EXPRESSION") or b.has_pattern(e, "PYTHON_UDF")
        for e in b.aggregate_expressions(node)
    )
    slot = cx.group_slot("Aggregate", handle, inner, "values" if computes else "distinct")
    out_alias = b.alias(handle, slot.name)
    below = cx.observed_input(slot.ref, inner)
    if cx.sides[slot.ref].observed is None and strategy.collects_witnesses(cx, inner, node):
        witnessed = _witnessed(cx, node, inner, slot, out_alias)
        if witnessed is not None:
            return witnessed
    plan = b.aggregate_like(node, b.aggregate_expressions(node) + [out_alias], below)
    slot.attr = b.output(plan)[-1]
    return Rewritten(plan, [slot], strategy=f"{STRATEGY['Aggregate']}: {logical}")


def _witnessed(cx: CaptureContext, node: JPlan, inner: Rewritten, slot: Slot, out_alias: JExpr) -> Rewritten | None:
    # Smoke's inject for the side relation why and how read: each group's witnesses
    # (its input rows' slots, a struct a row) collected in the aggregate's own state,
    # its rows kept as the query computes them, and the side relation (handle, input
    # slots) their arrays exploded, not the aggregate's input run again after the
    # query (TPC-H Q3 at SF 1: its join of three tables). None where the aggregate's
    # rows could differ if computed again: the side relation then runs its input.
    b = cx.bridge
    rids = _one_rid_each(cx, node, inner)
    if rids:  # a long a row: by the rid collector, many times faster than structs by collect_list
        witnesses = b.collect_rids(inner.slots[0].attr, False, False)
    else:
        witnesses = b.collect_list(b.named_struct([(s.name, s.attr) for s in inner.slots]))
    arrays = b.alias(witnesses, f"__sp_wt{next(cx.ids)}")
    plan = b.aggregate_like(node, b.aggregate_expressions(node) + [out_alias, arrays], inner.plan)
    if not b.is_plan_deterministic(plan):
        return None
    kept = cx.computed_once(plan)
    *out, handle, collected = b.output(kept)
    array = F.col(f"`{b.attr_name(collected)}`")
    rows = b.to_dataframe(kept).select(
        F.col(f"`{b.attr_name(handle)}`").alias("__sp_h"),
        F.explode(array).alias(inner.slots[0].name) if rids else F.inline(array),
    )
    side = cx.sides[slot.ref]
    side.plan = b.analyzed(rows)
    side.slots = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, b.output(side.plan)[1:])]
    slot.attr = handle
    return Rewritten(b.project([*out, handle], kept), [slot], strategy=WITNESSES_COLLECTED)


def _one_rid_each(cx: CaptureContext, node: JPlan, inner: Rewritten) -> bool:
    """Whether the aggregate's witnesses are its input rows' rids of one source, never
    NULL: below it no join (an outer one pads with NULL) and no union (a branch without
    the source has none). The rid collector skips NULLs, which as a struct's field stay a
    witness (a row derived from no source row); it keeps repeats, as collect_list does."""
    b = cx.bridge
    if len(inner.slots) != 1 or inner.slots[0].kind != "source":
        return False
    (child,) = b.children(node)
    return not any(b.has_pattern(child, p) for p in ("JOIN", "UNION"))


def _inject_shared(cx: CaptureContext, node: JPlan, inner: Rewritten, grouping: list[JExpr]) -> Rewritten:
    # Inject where a join above repeats the aggregate's rows (``join_repeats.plan_repeats``):
    # the rids are collected as ``_inject`` collects them, but kept once, as a shared
    # side with a set per group, read from the rows the query computed (kept when
    # first computed); each output row carries its group's set id, a hash of its key
    # (checked for two keys sharing one when stored), and the join repeats only that.
    b = cx.bridge
    collected = _collected(cx, node, inner)
    set_id = b.alias(b.hash64(grouping), f"__sp_g{next(cx.ids)}")
    key = b.alias(b.struct(grouping), f"__sp_k{next(cx.ids)}")
    plan = b.aggregate_like(node, b.aggregate_expressions(node) + collected + [set_id, key], inner.plan)
    plan = cx.computed_once(plan) if b.is_plan_deterministic(plan) else cx.kept(plan)
    *out, set_attr, key_attr = b.output(plan)
    user, arrays = out[: len(out) - len(collected)], out[len(out) - len(collected) :]
    kept = Rewritten(plan, cx.collected_slots(arrays, inner.slots))
    k = cx.side("Aggregate", set_attr, kept, shared=True, set_key=key_attr)
    slot = Slot(b.attr_name(set_attr), "group", k, set_attr)
    return Rewritten(b.project([*user, set_attr], plan), [slot], strategy=INJECT_SHARED)


def _inject(cx: CaptureContext, node: JPlan, inner: Rewritten) -> Rewritten:
    # Smoke's inject: the aggregate keeps its input rows' rids in its own state, one
    # array per slot (an inner aggregate's arrays are flattened), so the output row
    # carries its lineage and no side relation is built. An input slot that is a
    # handle (a semi join's matches, a logical aggregate's group) is collected the
    # same way: the row then names every group its input rows came from.
    b = cx.bridge
    collected = _collected(cx, node, inner)
    plan = b.aggregate_like(node, b.aggregate_expressions(node) + collected, inner.plan)
    out = b.output(plan)[len(b.output(plan)) - len(collected) :]
    slots = cx.collected_slots(out, inner.slots)
    return Rewritten(plan, slots, strategy=INJECT)


def _collected(cx: CaptureContext, node: JPlan, inner: Rewritten) -> list[JExpr]:
    # the aggregate expressions that collect the input slots' rids (``_inject``'s and
    # ``_inject_shared``'s), and whether groups are told apart by hashes from now on
    (child,) = cx.bridge.children(node)
    cx.hashed_groups = cx.hashed_groups is not False and strategy.hashes_groups(cx, inner)
    return cx.collected(child, inner.slots)
