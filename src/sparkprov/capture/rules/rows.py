"""Rules of the operators through which each output row comes from one input row: the
1:1 ones (Filter, Sort, limits, hints, repartitions, row-level Python UDFs) carry the
slots through, Project appends them, Generate and Expand (1:N) give every row they make
its input row's slots.

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> nums = session.source(spark.createDataFrame([(1, "a b")], ["n", "s"]), "nums")
>>> cap = session.capture(nums.selectExpr("n", "explode(split(s, ' ')) AS w"), "words")
>>> cap.backward("w = 'b'", "nums").count()
1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan.catalyst import JPlan
from ...store.format import Slot
from ..shapes import Rewritten

if TYPE_CHECKING:
    from ..context import CaptureContext


def pass_through(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A 1:1 operator over its rewritten child: its slots carried through."""
    (child,) = cx.bridge.children(node)
    inner = cx.rewrite(child)
    return Rewritten(cx.bridge.with_new_children(node, [inner.plan]), inner.slots)


def project(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A projection with its child's slots appended."""
    b = cx.bridge
    (child,) = b.children(node)
    inner = cx.rewrite(child)
    exprs = b.project_list(node) + [s.attr for s in inner.slots]
    return Rewritten(b.project(exprs, inner.plan), inner.slots)


def generate(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A generator: each row it makes keeps its input row's slots."""
    # explode, inline, stack, ReplicateRows...: each output row comes from one input
    # row. The child's columns are put first so Generate's column indexes still hold.
    (child,) = cx.bridge.children(node)
    inner = cx.user_first(cx.rewrite(child))
    return Rewritten(cx.bridge.with_new_children(node, [inner.plan]), inner.slots)


def expand(cx: CaptureContext, node: JPlan) -> Rewritten:
    """Expand: each copy of a row keeps the row's slots (fresh attributes)."""
    # ROLLUP, CUBE, GROUPING SETS and distinct aggregates: every input row is copied
    # once per projection; each copy keeps the row's slots (fresh attributes, as
    # Expand outputs new ones).
    b = cx.bridge
    (child,) = b.children(node)
    inner = cx.rewrite(child)
    attrs = [s.attr for s in inner.slots]
    fresh = [b.new_instance(a) for a in attrs]
    plan = b.expand_like(node, attrs, fresh, inner.plan)
    return Rewritten(plan, [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, fresh)])
