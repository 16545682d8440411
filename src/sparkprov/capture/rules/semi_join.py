"""The semi join rule (LEFT SEMI, and the existence join Spark plans for EXISTS or IN
under OR): the left row and every right row it matches. Injected (the matches' rids
collected into the row, by key or per left row) where it can be; otherwise a group slot
whose side relation is the inner join of the same inputs.

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> left = session.source(spark.createDataFrame([(1,), (2,)], ["k"]), "left")
>>> right = session.source(spark.createDataFrame([(1, "p"), (1, "q")], ["k", "b"]), "right")
>>> cap = session.capture(left.join(right, "k", "left_semi"), "matched")
>>> sorted(r.b for r in cap.backward("k = 1", "right").collect())
['p', 'q']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan.catalyst import JPlan
from .. import strategy
from ..explain import INJECT_EXISTS, INJECT_MATCHES, INJECT_PER_LEFT_ROW
from ..shapes import Rewritten

if TYPE_CHECKING:
    from ..context import CaptureContext

# joins whose rows for a key can be the product of their inputs' (not semi or anti joins)
_MULTIPLYING = ("Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter")
_LARGE = 10 << 20  # an input too large to broadcast, where broadcasts are turned off


def rule(cx: CaptureContext, node: JPlan, left: JPlan, right: JPlan) -> Rewritten:
    """A semi or existence join: the left row's slots and its matches (injected or a group)."""
    # The left row and every right row it matches (a semi join, or the existence
    # join Spark plans for EXISTS/IN under OR or in a projection, which keeps every
    # left row and adds a flag). The matches form a group found by the inner join of
    # the same inputs, named by the left row's slots and the left columns the
    # condition reads: rows equal on both have the same matches.
    b = cx.bridge
    lw = cx.rewrite_stable(left, node)
    cx.grouped_above += 1  # its matches are kept as groups, not as rows of their own
    try:
        rw = cx.rewrite_stable(right, node)
    finally:
        cx.grouped_above -= 1
    semi = b.join_type(node) == "LeftSemi"
    if (
        rw.slots
        and strategy.stays_logical(cx, rw) is None
        and not (cx.strategy == "auto" and _joins_large_inputs(cx, right))
    ):
        # Inject: the group of matches is collected in the query itself. When the
        # left side reads less than the right, the matching pairs are grouped back
        # by left row; otherwise an equi join's right side is grouped by key. Pairs
        # can outnumber the right side when a key has many left rows (TPC-H Q21
        # pairs lineitem with itself, sizes equal: it stays logical). An existence
        # join, which keeps every left row, is grouped by key.
        if semi and cx.input_bytes(lw.plan) < cx.input_bytes(rw.plan):
            return _inject_per_left_row(cx, node, lw, rw, right)
        keys = b.equi_join_keys(node)
        if keys:
            return _inject_matches(cx, node, lw, rw, right, *keys, semi=semi)
    left_ids = {b.expr_id(a) for a in b.output(left)}
    used = [a for a in b.condition_references(node) if b.expr_id(a) in left_ids]
    handle = b.struct([s.attr for s in lw.slots] + used)
    # The side relation's handle is made on the left input, below the inner join:
    # resolving reaches it with a semi join on the handle, which Catalyst then pushes
    # down to that input, so only the left rows the output kept are joined (TPC-H
    # Q21). Made above the join, the semi join stays on top of the whole join.
    left = b.project(b.output(lw.plan) + [b.alias(handle, f"__sp_m{next(cx.ids)}")], lw.plan)
    matches = Rewritten(b.inner_join_like(node, left, rw.plan), rw.slots)
    narrow = b.inner_join_like(node, left, rw.plan, broadcast_left=True)
    operator = f"Join ({b.join_type(node).split('(')[0]})"
    slot = cx.group_slot(operator, b.output(left)[-1], matches, "matches", narrow)
    semi = b.with_new_children(node, [lw.plan, rw.plan])
    plan = b.project(b.output(semi) + [b.alias(handle, slot.name)], semi)
    slot.attr = b.output(plan)[-1]
    return Rewritten(plan, lw.slots + [slot])


def _inject_matches(
    cx: CaptureContext, node: JPlan, lw: Rewritten, rw: Rewritten, right: JPlan, left_keys, right_keys, semi: bool
):
    # A semi join on key equalities alone: a left row's matches are the right rows
    # with its key. The right side is grouped by the key, collecting its slots (as an
    # injected aggregate does), and inner-joined in place of the semi join: one row
    # per key, so each left row is kept once, as the semi join keeps it, carrying
    # its matches' rids. No side relation re-runs the join afterwards. An existence
    # join (EXISTS under OR: TPC-DS q10, q35) keeps every left row: left-outer-joined,
    # its flag is whether the row met a key's group, and a row without has no arrays
    # (NULL), no matches.
    b = cx.bridge
    keys = [b.alias(k, f"__sp_k{next(cx.ids)}") for k in right_keys]
    met = [] if semi else [b.alias(b.int_literal(1), f"__sp_e{next(cx.ids)}")]
    collected = cx.collected(right, rw.slots)
    grouped = b.group_by(right_keys, keys + met + collected, rw.plan)
    out = b.output(grouped)
    joined = b.key_join(node, lw.plan, grouped, left_keys, out[: len(keys)], "inner" if semi else "left_outer")
    # the join's own attributes: a left outer join makes the grouped side's nullable
    by_id = {b.expr_id(a): a for a in b.output(joined)}
    arrays = [by_id[b.expr_id(a)] for a in out[len(keys) + len(met) :]]
    flag = []
    if not semi:
        exists = node.joinType().exists()
        flag = [b.alias(b.is_not_null(by_id[b.expr_id(out[len(keys)])]), b.attr_name(exists), b.jexpr_id(exists))]
    plan = b.project(b.output(lw.plan) + flag + arrays, joined)
    slots = cx.collected_slots(b.output(plan)[len(b.output(plan)) - len(arrays) :], rw.slots)
    return Rewritten(plan, lw.slots + slots, strategy=INJECT_MATCHES if semi else INJECT_EXISTS)


def _inject_per_left_row(cx: CaptureContext, node: JPlan, lw: Rewritten, rw: Rewritten, right: JPlan) -> Rewritten:
    # A semi join over a left side smaller than its right: the left rows are
    # numbered, inner-joined to the right with the semi join's condition (any
    # condition), and grouped back by their number, collecting their matches'
    # slots. Only matching pairs are grouped, not the whole right side (TPC-H Q4:
    # 140K pairs for the quarter's 57K orders, against 3.8M lineitem rows grouped by
    # order). A left row with a match comes out once with its own values, as the
    # semi join keeps it; one without, not at all. The number tells apart left rows
    # that are equal in every column and slot (rows of constants, an explode's copies).
    b = cx.bridge
    left = b.output(lw.plan)
    number = b.alias(b.row_id(), f"__sp_n{next(cx.ids)}")
    joined = b.inner_join_like(node, b.project(left + [number], lw.plan), rw.plan)
    # the left columns keep their attribute ids, so the operators above still resolve
    kept = [b.alias(b.first(a), b.attr_name(a), b.jexpr_id(a)) for a in left]
    collected = cx.collected(right, rw.slots)
    plan = b.group_by([b.to_attribute(number)], kept + collected, joined)
    arrays = b.output(plan)[len(kept) :]
    slots = cx.collected_slots(arrays, rw.slots)
    return Rewritten(plan, lw.slots + slots, strategy=INJECT_PER_LEFT_ROW)


def _joins_large_inputs(cx: CaptureContext, plan: JPlan) -> bool:
    """Whether ``plan`` joins two inputs that each read more than Spark broadcasts and
    are not aggregated (a table with itself, a fact with a fact): its rows for one key
    can be the product of both inputs' rows for it, and injected, every left row would
    gather them all (an aggregated input has a row a group: TPC-H Q20's partsupp joined
    with lineitem's sums stays injected).
    Kept as a side, the matches are resolved for the left rows the output keeps
    (TPC-DS q95 at SF 1: a semi join on web_sales joined with itself by order, 64 s
    injected against a plain run's 8 s, for the 1,141 pairs of one output row)."""
    b = cx.bridge
    limit = cx.broadcast_limit()
    large = limit if limit > 0 else _LARGE
    todo = [plan]
    while todo:
        node = todo.pop()
        if not b.has_pattern(node, "JOIN"):
            continue
        children = b.children(node)
        multiplies = b.node_name(node) == "Join" and b.join_type(node).split("(")[0] in _MULTIPLYING
        if multiplies and all(cx.input_bytes(c) > large and not b.has_pattern(c, "AGGREGATE") for c in children):
            return True
        todo.extend(children)
    return False
