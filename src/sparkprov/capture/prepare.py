"""The plan made ready before it is optimized and rewritten: EXCEPT ALL planned as an
aggregate over both sides with the right side marked as giving no lineage, an
uncorrelated EXISTS made a semi join, and the names of the views its leaves are read
through (the optimizer removes views).

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> a = session.source(spark.createDataFrame([(1,), (1,), (2,)], ["n"]), "a")
>>> b = session.source(spark.createDataFrame([(1,)], ["n"]), "b")
>>> cap = session.capture(a.exceptAll(b), "left_over")
>>> sorted(r.n for r in cap.output.collect()), cap.backward("n = 1", "b").count()
([1, 2], 0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from ..errors import UnsupportedOperation
from ..plan.catalyst import JPlan
from .shapes import LEAVES, NO_LINEAGE, SUBQUERY_HOSTS

if TYPE_CHECKING:
    from .context import CaptureContext

_COUNT = "__sp_count"


def prepared(cx: CaptureContext, plan: JPlan) -> JPlan:
    """``plan`` with EXCEPT ALL and uncorrelated EXISTS planned for capture (itself if none)."""
    b = cx.bridge
    # one look at Catalyst's pattern bits spares walking a plan with nothing to change
    if b.has_pattern(plan, "EXCEPT") or b.has_pattern(plan, "PLAN_EXPRESSION"):
        return _prepare(cx, plan)
    return plan


def _prepare(cx: CaptureContext, node: JPlan) -> JPlan:
    # Spark plans EXCEPT ALL as an aggregate over the union of both sides; capture
    # plans it the same way itself, with the right side marked as giving no lineage.
    b = cx.bridge
    kids = b.children(node)
    new = [_prepare(cx, c) for c in kids]
    if any(n is not o for n, o in zip(new, kids)):
        node = b.with_new_children(node, new)
    if b.is_except_all(node):
        return _except_all(cx, node)
    # The optimizer would turn an uncorrelated EXISTS into "the first row of the
    # subquery exists" (a LIMIT 1): its lineage would be one matching row, not all
    # of them. As a semi join without condition, every row of the subquery counts.
    exists, rest = b.uncorrelated_exists_conjuncts(node)
    if exists:
        if any(b.outputs_overlap(b.children(node)[0], plan) for plan in exists):
            raise UnsupportedOperation(
                "uncorrelated EXISTS", cx.plan_text(node), "its subquery reads the same relation as the query"
            )
        node = b.filter_semi_joins(node, exists, rest)
    if any(_has_except_all(cx, plan) for plan in cx.subquery_plans(node)):
        if b.node_name(node) not in SUBQUERY_HOSTS:
            raise UnsupportedOperation(
                f"EXCEPT ALL inside a subquery expression of {b.node_name(node)}", cx.plan_text(node)
            )
        node = b.map_subquery_plans(node, lambda p: _prepare(cx, p) if _has_except_all(cx, p) else p)
    return node


def _has_except_all(cx: CaptureContext, node: JPlan) -> bool:
    b = cx.bridge
    if not b.has_pattern(node, "EXCEPT"):  # no EXCEPT of any kind below
        return False
    return b.is_except_all(node) or any(_has_except_all(cx, c) for c in b.children(node))


def _except_all(cx: CaptureContext, node: JPlan) -> JPlan:
    b = cx.bridge
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


def collect_view_names(cx: CaptureContext, node: JPlan, name: str | None) -> None:
    """Note, per leaf, the view it is read through (``name``: of the view above)."""
    # The optimizer removes views; their names still name the relations they read.
    b = cx.bridge
    b.prefetch(node)  # the whole tree in one round trip, the first time
    op = b.node_name(node)
    if op in LEAVES:
        cx.leaf_names.setdefault(cx.leaf_id(node), name)
    elif op == "View":
        name = b.view_name(node)
    elif op not in ("SubqueryAlias", "Project", "Filter"):
        name = None  # a view name applies to its leaf only through simple wrappers
    subqueries = cx.subquery_plans(node)  # first: its pattern bits spare the children's
    for child in b.children(node):
        collect_view_names(cx, child, name)
    for plan in subqueries:
        collect_view_names(cx, plan, None)
