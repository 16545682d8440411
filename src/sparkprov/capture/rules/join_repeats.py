"""Which aggregates a join repeats (``plan_repeats``): an aggregate whose grouping keys
a join all equates with a side not known to hold each key once, so that each of its
rows may meet many, keeps each group's lineage once, a set of a shared side
(``rules.aggregate``), not in every row the join makes.

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession, functions as F
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> sales = session.source(spark.createDataFrame([(1, 5), (1, 7), (2, 1)], ["week", "amount"]), "sales")
>>> days = session.source(spark.createDataFrame([(1, "mon"), (1, "tue"), (2, "mon")], ["week", "day"]), "days")
>>> totals = sales.groupBy("week").agg(F.sum("amount").alias("total"))
>>> cap = session.capture(days.join(totals, "week"), "daily")
>>> sorted(r.amount for r in cap.backward("day = 'tue'", "sales").collect())
[5, 7]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from ...plan.catalyst import JPlan
from ..strategy import keeps_sets
from .join_keys import aggregate_below, covers, equalities, grouping_key, matched_keys, node_key

if TYPE_CHECKING:
    from ..context import CaptureContext


def plan_repeats(cx: CaptureContext, join: JPlan, kind: str, left: JPlan, right: JPlan) -> None:
    """Register an aggregate on one side of ``join`` (through projections and filters)
    whose grouping keys the join all equates with the other side, where the other side
    is not known to hold each key once (``_unique_on``): each of its rows may meet many
    rows of the other side (TPC-DS q2 meets each week's sales with the
    week's seven days; q1, q65 and q81 an average per store or state with every row
    of it). Where the rows the join makes are output without being grouped again, its
    groups' lineage may then be kept once, as a shared side with a set per group
    (``aggregate.rule``, ``strategy.keeps_sets``), each row meeting it referring to
    its set: not flattened once per row (q2's 41 million pairs, of 0.9 million rids)."""
    # (why and how read every aggregate's side as groups; under an aggregate, the rows
    # the join makes are grouped again, their arrays merged, before they are output)
    if cx.witnesses or kind == "LeftAnti" or cx.grouped_above:
        return
    conjuncts = equalities(cx, join)
    if not conjuncts:
        return
    for side, other in ((left, right), (right, left)):
        agg = aggregate_below(cx, side)
        if agg is None:
            continue
        keys, values, _ = matched_keys(cx, agg, side, other, conjuncts)
        if not covers(cx, agg, keys):
            continue
        met = {cx.bridge.expr_id(v) for v in values if cx.bridge.class_name(v) == "AttributeReference"}
        if _unique_on(cx, other, met) or not keeps_sets(cx, cx.bridge.children(agg)[0]):
            continue
        if _distinct_keys(cx, other, met) is not True:
            cx.repeated.add(node_key(cx, agg))


def _distinct_keys(cx: CaptureContext, plan: JPlan, ids: set[int]) -> bool | None:
    """Whether the rows of ``plan``, a filtered table small enough to broadcast, hold
    each combination of its columns ``ids`` once (a job counting them: TPC-H Q15's
    supplier met on its key, TPC-DS q2's days met on their week); None where
    ``plan`` is not such a table, or has no such column."""
    b = cx.bridge
    leaf = plan
    while b.node_name(leaf) in ("Project", "Filter"):
        (leaf,) = b.children(leaf)
    limit = cx.broadcast_limit()
    if b.children(leaf) or limit <= 0 or b.leaf_bytes(plan) > limit or not b.is_plan_deterministic(plan):
        return None
    if not any(b.expr_id(a) in ids for a in b.output(plan)) or b.has_pattern(plan, "PLAN_EXPRESSION"):
        return None
    ids_in_order = [b.expr_id(a) for a in b.output(plan)]
    df = b.to_dataframe(plan).toDF(*[f"c{i}" for i in range(len(ids_in_order))])  # names may repeat
    keys = [F.col(f"c{i}") for i, x in enumerate(ids_in_order) if x in ids]
    rows, distinct = df.select(F.count(F.lit(1)), F.count_distinct(*keys)).first()
    return rows == distinct


def _unique_on(cx: CaptureContext, plan: JPlan, ids: set[int]) -> bool:
    """Whether ``plan``'s rows are known to differ in the columns ``ids``: it is an
    aggregate grouped by some of them, through projections and filters, or a join of
    two such (on those columns, or on columns equal to them: TPC-DS q58's three
    aggregates per item, each met once by the join of the other two)."""
    b = cx.bridge
    name = b.node_name(plan)
    if name == "Filter":
        return _unique_on(cx, b.children(plan)[0], ids)
    if name == "Project":
        below = set()
        for e in b.project_list(plan):
            if b.expr_id(e) in ids:
                inner = e if b.class_name(e) == "AttributeReference" else e.child()
                if b.class_name(inner) == "AttributeReference":
                    below.add(b.expr_id(inner))
        return _unique_on(cx, b.children(plan)[0], below)
    if name == "Aggregate":
        out = {b.expr_id(a): a for a in b.output(plan)}
        return covers(cx, plan, [k for i in ids if i in out and (k := grouping_key(cx, plan, out[i])) is not None])
    if name == "Join" and b.join_type(plan) in ("LeftSemi", "LeftAnti"):
        return _unique_on(cx, b.children(plan)[0], ids)
    if name == "Join" and b.join_type(plan) == "Inner":
        equal = set(ids)  # the columns the condition makes equal to one of ``ids``
        for c in equalities(cx, plan):
            pair = [c.left(), c.right()]
            if all(b.class_name(x) == "AttributeReference" for x in pair):
                found = {b.expr_id(x) for x in pair}
                if found & equal:
                    equal |= found
        return all(_unique_on(cx, child, equal & {b.expr_id(a) for a in b.output(child)}) for child in b.children(plan))
    return False
