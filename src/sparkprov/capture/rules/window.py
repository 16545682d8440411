"""The window rule: each output row keeps its own slots and gets, per window function,
a range of positions in its partition (the rows the function read), resolved through a
side relation of (partition, position, input slots); functions that read the whole
partition give the row a reference to its partition's set of a shared side instead,
kept once per partition.

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> from pyspark.sql import Window, functions as F
>>> nums = session.source(spark.createDataFrame([(1, 5), (1, 7), (2, 1)], ["g", "v"]), "nums")
>>> w = Window.partitionBy("g").orderBy("v").rowsBetween(Window.unboundedPreceding, Window.currentRow)
>>> cap = session.capture(nums.withColumn("run", F.sum("v").over(w)), "running")
>>> sorted(r.v for r in cap.backward("run = 12", "nums").collect())
[5, 7]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import UnsupportedOperation
from ...plan.catalyst import JExpr, JPlan
from ...store.format import POS, Slot
from ..explain import STRATEGY, WINDOW_BLOCKS, WINDOW_TWIN
from ..shapes import Rewritten, SideRelation

if TYPE_CHECKING:
    from ..context import CaptureContext

RANK_LIKE = ("RowNumber", "Rank", "DenseRank")
WHOLE_PARTITION = ("PercentRank", "CumeDist", "NTile")
WINDOW_FUNCTIONS = (*RANK_LIKE, *WHOLE_PARTITION, "Lag", "Lead", "AggregateExpression", "NthValue")


def rule(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A window: own slots kept, a window slot (partition, lo, hi) per function."""
    # Each output row keeps its own slots and gets, per window function, a *window
    # slot* (partition key, lo, hi): the rows of its partition at sorted positions
    # lo..hi. Positions and bounds are counts computed in the same Window node as
    # the user's functions, so they see the rows in the order the functions saw them:
    #   frame aggregates   hi = count over (UNBOUNDED PRECEDING .. frame end),
    #                      lo = hi - count over the frame + 1 (frames are contiguous)
    #   row_number, rank   1 .. count over (RANGE UNBOUNDED PRECEDING .. CURRENT ROW)
    #   percent_rank, cume_dist, ntile   the whole partition
    #   lag / lead         the one position pos + offset
    # The side relation (partition key, position, input slots) resolves them.
    # A function that reads its whole partition (percent of a total, a z-score, ntile)
    # gives every row of the partition the same lineage: flattened, its pairs grow
    # with the square of the partition. It is kept once per partition, as a shared
    # side (a scalar subquery's form) with a set per partition, and each row refers
    # to its partition's set by an id: 0 for a window over the whole input, else a
    # hash of the partition's key (checked for two keys sharing one when stored).
    b = cx.bridge
    (child,) = b.children(node)
    named, partition, _ = b.window_parts(node)
    inner = cx.user_first(cx.rewrite(child))
    like = b.window_function(named[0])[2]
    counts: list[JExpr] = []

    def count(frame_type: str, lower, upper) -> JExpr:
        alias = b.alias(b.count_over(like, frame_type, lower, upper), f"__sp_w{next(cx.ids)}")
        counts.append(alias)
        return alias

    pos = count("RowFrame", "unbounded_preceding", "current_row")
    bounds: list[tuple[JExpr, JExpr]] = []  # (lo, hi) expressions over the counts
    unstable = False  # positions among ties differ between runs: keep this run's
    # (with witnesses, why and how read every window's side as ranges: query/provenance.py)
    once = not cx.witnesses
    whole = False  # some function reads its whole partition, kept once per partition

    def whole_partition() -> None:
        nonlocal whole
        if once:
            whole = True
        else:
            size = count("RowFrame", "unbounded_preceding", "unbounded_following")
            bounds.append((b.long_literal(1), b.to_attribute(size)))

    for e in named:
        kind, fn, wexpr = b.window_function(e)
        if kind in RANK_LIKE:
            peers = count("RangeFrame", "unbounded_preceding", "current_row")
            bounds.append((b.long_literal(1), b.to_attribute(peers)))
        elif kind in WHOLE_PARTITION:
            whole_partition()
        elif kind in ("Lag", "Lead"):
            if fn.ignoreNulls():
                raise UnsupportedOperation(f"Window ({kind.lower()} IGNORE NULLS)", cx.plan_text(node))
            at = b.arithmetic("+", b.to_attribute(pos), b.long_literal(b.offset_value(fn)))
            bounds.append((at, at))
            unstable = True
        elif kind in ("AggregateExpression", "NthValue"):
            ftype, lower, upper = b.frame(wexpr)
            if b.is_unbounded(lower) and b.is_unbounded(upper):
                whole_partition()
                continue
            hi = count(ftype, "unbounded_preceding", upper)
            size = count(ftype, lower, upper)
            lo = b.arithmetic("+", b.arithmetic("-", b.to_attribute(hi), b.to_attribute(size)), b.long_literal(1))
            bounds.append((lo, b.to_attribute(hi)))
            unstable = unstable or ftype == "RowFrame"
        else:
            raise UnsupportedOperation(f"Window ({kind})", cx.plan_text(node), "this window function is not verified")
    window = b.window_like(node, named + counts, inner.plan)
    handle = b.struct(partition) if partition else b.int_literal(0)
    side_index = len(cx.sides)  # the side relation appended below
    slots, window_cols = [], []
    for lo, hi in bounds:
        slot = cx.new_slot("window", side_index)
        value = b.named_struct([("h", handle), ("lo", lo), ("hi", hi)])
        window_cols.append(b.alias(value, slot.name))
        slots.append(slot)
    shared = cx.new_slot("group", -1) if whole else None  # its side is added below
    if shared is not None:
        window_cols.append(b.alias(b.hash64(partition) if partition else b.int_literal(0), shared.name))
    user = cx.user_output(Rewritten(b.with_new_children(node, [inner.plan]), inner.slots))
    exprs = user + [s.attr for s in inner.slots] + [b.alias(b.to_attribute(pos), POS)] + window_cols
    plan = b.project(exprs, window)
    # The side relation reads the window's rows with their positions from what the
    # query's own job computed, not by running the window and its input again (TPC-DS
    # q47 at SF 1: six windows over three aggregates of store_sales); rows that could
    # differ between runs are computed before the query and kept.
    apart = bool(unstable or cx.nondeterminism(child))
    plan = cx.kept(plan) if apart else cx.computed_once(plan)
    out = b.output(plan)
    own = len(user) + len(inner.slots)
    pos_attr = out[own]
    for slot, attr in zip(slots, out[own + 1 :]):
        slot.attr = attr
    side_slots = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(user) :])]
    # a window over rows computed once (not kept apart) reads the side relation of a
    # window met before whose plan gives the same rows: a CTE read several times
    reused = False
    if slots:
        side_exprs = [b.alias(handle, "__sp_h"), b.alias(pos_attr, POS)]
        side_plan = b.project(side_exprs + out[len(user) : own], plan)
        side = SideRelation(side_index, "Window", side_plan, side_slots, ranged=True, factorable=once)
        k = cx.add_side(side, twins=not apart)
        reused = k < side_index
        for slot in slots:
            slot.ref = k
    if shared is not None:
        key = b.struct(partition) if partition else None  # one set (id 0) without PARTITION BY
        k = cx.side("Window", out[-1], Rewritten(plan, side_slots), shared=True, set_key=key, twins=not apart)
        reused = reused or k < side_index  # (a shared side's twin is never the ranged one above)
        slots.append(Slot(shared.name, "group", k, out[-1]))
    result = b.project(out[:own] + [s.attr for s in slots], plan)
    strategy = STRATEGY["Window"] + (WINDOW_BLOCKS if once else "")
    if whole:
        ranged = "; per other function, a range of positions (side relation: position, input slots)"
        kept = "the whole input's lineage, kept once"
        if partition:
            kept = "its partition's lineage, kept once per partition"
        strategy = f"own slots plus a reference to {kept}" + (ranged + WINDOW_BLOCKS if bounds else "")
    if reused:
        strategy += WINDOW_TWIN
    return Rewritten(result, side_slots + slots, strategy=strategy)
