"""Rules of DISTINCT and dropDuplicates: one row kept per key, as Spark keeps it, named by
a handle whose side relation holds every row with that key (any one of them derives it).

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> nums = session.source(spark.createDataFrame([("a", 1), ("a", 2)], ["k", "v"]), "nums")
>>> cap = session.capture(nums.dropDuplicates(["k"]), "firsts")
>>> cap.backward("k = 'a'", "nums").count()
2
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan.catalyst import JExpr, JPlan
from ..shapes import Rewritten

if TYPE_CHECKING:
    from ..context import CaptureContext


def distinct(cx: CaptureContext, node: JPlan) -> Rewritten:
    """DISTINCT: one row per distinct row, named by a handle of all its columns."""
    (child,) = cx.bridge.children(node)
    return _dedup(cx, node, child, cx.bridge.output(child))


def deduplicate(cx: CaptureContext, node: JPlan) -> Rewritten:
    """dropDuplicates: one row per key, named by a handle of the key."""
    (child,) = cx.bridge.children(node)
    return _dedup(cx, node, child, cx.bridge.dedup_keys(node))


def _dedup(cx: CaptureContext, node: JPlan, child: JPlan, keys: list[JExpr]) -> Rewritten:
    # Keep one row per key (as Spark does), drop its slots and name the whole
    # group with a handle instead: every row sharing the key is in the lineage.
    b = cx.bridge
    inner = cx.rewrite_stable(child, node)
    slot = cx.group_slot(b.node_name(node), b.struct(keys), inner, "distinct")
    dedup = b.deduplicate(keys, cx.observed_input(slot.ref, inner))
    user = b.output(child)
    plan = b.project(user + [b.alias(b.struct(keys), slot.name)], dedup)
    slot.attr = b.output(plan)[-1]
    return Rewritten(plan, [slot])
