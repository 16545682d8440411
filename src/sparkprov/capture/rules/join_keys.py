"""Which grouping keys a join meets: the aggregate on one side of a join (through
projections and filters), the join's equalities, and the aggregate's grouping keys
they equate with the other side (``rules.join``'s reductions, ``rules.join_repeats``).

>>> import tempfile
>>> from pyspark.sql import SparkSession
>>> from sparkprov.capture.context import CaptureContext
>>> from sparkprov.plan.catalyst import Bridge
>>> b = Bridge(SparkSession.builder.getOrCreate())
>>> sums = b.spark.createDataFrame([(1, 2)], ["k", "v"]).groupBy("k").sum("v")
>>> agg = aggregate_below(CaptureContext(b, tempfile.mkdtemp()), b.analyzed(sums.where("k > 0").select("k")))
>>> [b.expr_sql(g) for g in b.grouping_expressions(agg)]
['k']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan.catalyst import JExpr, JPlan

if TYPE_CHECKING:
    from ..context import CaptureContext


def aggregate_below(cx: CaptureContext, side: JPlan) -> JPlan | None:
    """The grouping aggregate ``side`` is, through projections and filters (which keep
    its rows' identities), or None."""
    b = cx.bridge
    while b.node_name(side) in ("Project", "Filter"):
        (side,) = b.children(side)
    return side if b.node_name(side) == "Aggregate" else None


def equalities(cx: CaptureContext, join: JPlan) -> list[JExpr]:
    """The equalities among the conjuncts of ``join``'s condition."""
    b = cx.bridge
    cond = join.condition()
    if cond.isEmpty():
        return []
    return [c for c in b.conjuncts(cond.get()) if b.class_name(c) == "EqualTo"]


def matched_keys(
    cx: CaptureContext, agg: JPlan, side: JPlan, other: JPlan, conjuncts: list[JExpr]
) -> tuple[list[JExpr], list[JExpr], set[int]]:
    """The grouping keys of ``agg`` (below ``side``) that ``conjuncts`` equate with a
    deterministic expression of ``other``'s columns; those expressions; their columns."""
    b = cx.bridge
    passed = {b.expr_id(a) for a in b.output(side)}
    other_ids = {b.expr_id(a) for a in b.output(other)}
    keys, values, used = [], [], set()
    for c in conjuncts:
        for mine, theirs in ((c.left(), c.right()), (c.right(), c.left())):
            if b.class_name(mine) != "AttributeReference" or b.expr_id(mine) not in passed:
                continue
            refs = {b.expr_id(a) for a in b.to_list(theirs.references().toSeq())}
            key = grouping_key(cx, agg, mine)
            if key is not None and refs and refs <= other_ids and b.is_deterministic(theirs):
                keys.append(key)
                values.append(theirs)
                used |= refs
                break
    return keys, values, used


def covers(cx: CaptureContext, agg: JPlan, keys: list[JExpr]) -> bool:
    """Whether ``keys`` hold every grouping expression of ``agg`` (a global aggregate,
    which has none, is not covered)."""
    grouping = cx.bridge.grouping_expressions(agg)
    return bool(grouping) and all(any(g.semanticEquals(k) for k in keys) for g in grouping)


def node_key(cx: CaptureContext, node: JPlan) -> tuple[int, str]:
    """This very plan node: its JVM identity, and its output attributes (unique to
    it in a plan) in case two nodes' identity numbers coincide."""
    b = cx.bridge
    return b.identity(node), b.output_ids(node)


def grouping_key(cx: CaptureContext, agg: JPlan, attr: JExpr) -> JExpr | None:
    """The grouping expression behind ``attr``, one of ``agg``'s output columns."""
    b = cx.bridge
    for named in b.aggregate_expressions(agg):
        if b.expr_id(named) == b.expr_id(attr):
            value = named if b.class_name(named) == "AttributeReference" else named.child()
            return next((g for g in b.grouping_expressions(agg) if g.semanticEquals(value)), None)
    return None
