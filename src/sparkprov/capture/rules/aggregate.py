"""The aggregate rule: a group's rids injected into the aggregate's own state (an array
per slot) or, where it stays logical (``strategy.stays_logical``), a handle per output
row and a side relation (handle, input slots).

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

from ...errors import UnsupportedOperation
from ...plan.catalyst import JExpr, JPlan
from .. import strategy
from ..explain import INJECT, REDUCED, STRATEGY
from ..shapes import Rewritten
from . import join

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
    inner = cx.rewrite_stable(child, node)
    # two round trips for the key: only asked when some join registered a reduction
    reduced = cx.reductions.pop(join.node_key(cx, node), None) if cx.reductions else None
    if reduced is not None:
        keys, values, source = reduced
        inner = Rewritten(b.in_subquery_filter(keys, values, source, inner.plan), inner.slots)
    rw = _aggregate(cx, node, inner, grouping)
    if reduced is not None:
        rw.strategy = f"{rw.strategy or 'group'}; {REDUCED} {b.node_name(source)}"
    return rw


def _aggregate(cx: CaptureContext, node: JPlan, inner: Rewritten, grouping: list[JExpr]) -> Rewritten:
    b = cx.bridge
    logical = strategy.stays_logical(cx, inner, node)
    if logical is None:
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
    plan = b.aggregate_like(node, b.aggregate_expressions(node) + [out_alias], cx.observed_input(slot.ref, inner))
    slot.attr = b.output(plan)[-1]
    return Rewritten(plan, [slot], strategy=f"{STRATEGY['Aggregate']}: {logical}")


def _inject(cx: CaptureContext, node: JPlan, inner: Rewritten) -> Rewritten:
    # Smoke's inject: the aggregate keeps its input rows' rids in its own state, one
    # array per slot (an inner aggregate's arrays are flattened), so the output row
    # carries its lineage and no side relation is built. An input slot that is a
    # handle (a semi join's matches, a logical aggregate's group) is collected the
    # same way: the row then names every group its input rows came from.
    b = cx.bridge
    (child,) = b.children(node)
    collected = cx.collected(child, inner.slots)
    plan = b.aggregate_like(node, b.aggregate_expressions(node) + collected, inner.plan)
    out = b.output(plan)[len(b.output(plan)) - len(collected) :]
    slots = cx.collected_slots(out, inner.slots)
    return Rewritten(plan, slots, strategy=INJECT)
