"""The union rule: each branch's rows keep their own slots, NULL for the other branches'
(EXCEPT ALL's right side, marked by ``prepare``, gives none).

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> a = session.source(spark.createDataFrame([(1,)], ["n"]), "a")
>>> b = session.source(spark.createDataFrame([(2,)], ["n"]), "b")
>>> cap = session.capture(a.union(b), "both")
>>> cap.backward("n = 2", "a").count(), cap.backward("n = 2", "b").count()
(0, 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UnsupportedOperation
from ...plan.catalyst import JPlan
from ...store.format import Slot
from ..shapes import NO_LINEAGE, Rewritten

if TYPE_CHECKING:
    from ..context import CaptureContext


def rule(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A positional union: each branch's slots, NULL for the other branches'."""
    b = cx.bridge
    if not b.is_positional_union(node):
        raise UnsupportedOperation("Union (by name)", cx.plan_text(node))
    branches, kept = [], []
    for c in b.children(node):
        branches.append(cx.rewrite(c))
        # a marked branch's slots are dropped: NULL in the union (the mark is the
        # branch's last column, as prepare.py adds it, and a union keeps column order)
        kept.append(b.attr_name(b.last_output(c)) != NO_LINEAGE)
    all_slots = [s for br, keep in zip(branches, kept) if keep for s in br.slots]
    padded = []
    for br, keep in zip(branches, kept):
        own = {s.name for s in br.slots} if keep else set()
        slots = [(s.attr, s.name, s.name in own) for s in all_slots]
        padded.append(b.project_padded(cx.user_output(br), slots, br.plan))
    plan = b.with_new_children(node, padded)
    out = b.output(plan)
    slots = []
    for s, attr in zip(all_slots, out[len(out) - len(all_slots) :]):
        slots.append(Slot(s.name, s.kind, s.ref, attr))
    return Rewritten(plan, slots)
