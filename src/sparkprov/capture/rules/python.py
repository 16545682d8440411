"""Rules of Python functions over groups and partitions: applyInPandas / applyInArrow and
their cogrouped forms (an output row comes from its group: the group's handle is copied
through the function by a wrapper), mapInPandas / mapInArrow and Python UDTFs that see
whole partitions (coarse: every row of the input partition).

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> import pandas as pd
>>> nums = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], ["k", "v"]), "nums")
>>> top = nums.groupBy("k").applyInPandas(lambda p: p.nlargest(1, "v"), "k string, v long")
>>> cap = session.capture(top, "tops")
>>> sorted(r.v for r in cap.backward("k = 'a'", "nums").collect())
[1, 2]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType

from ...errors import InvalidArgument
from ...functions.declare import Declaration, declaration_of
from ...functions.payloads import kept_declaration
from ...plan.catalyst import Bridge, JExpr, JPlan
from ...plan.versions import python_eval_types
from ...store.format import HANDLE, Slot, pay_columns
from .. import python_functions as P
from ..explain import STRATEGY, UDTF_COARSE
from ..function_keep import KEPT_MODES
from ..shapes import PayloadSide, Rewritten, SideRelation

if TYPE_CHECKING:
    from ..context import CaptureContext

_HANDLE = "__sp_handle"
_PARTITION = "__sp_partition"
_ROW = "__sp_row"  # a declared function's input rows: the row's id in the kept input
_GROUPED_ITER = python_eval_types("SQL_GROUPED_MAP_PANDAS_ITER_UDF", "SQL_GROUPED_MAP_ARROW_ITER_UDF")


def flat_map_groups(cx: CaptureContext, node: JPlan) -> Rewritten:
    """applyInPandas / applyInArrow over groups: each output row names its group."""
    # applyInPandas / applyInArrow: an output row may come from any row of its
    # group. Each input row gets the group's handle (see _keyed_input), the wrapper
    # copies it to the group's output rows, and the side relation maps it back to
    # the group's rows. The function is called in the form the user's call used.
    b = cx.bridge
    (child,) = b.children(node)
    func, _, args = b.python_function(node)
    grouping = b.grouping_attributes(node)
    decl = _declared(cx, func)
    if decl is not None and not _stored_coarse(cx, node, decl, 1):
        return _declared_groups(cx, node, decl.traced(), grouping, args)
    keyed, slot = _keyed_input(cx, node, grouping, args, cx.rewrite_stable(child, node))
    names, offset = [b.attr_name(a) for a in args], len(grouping)
    arrow = b.node_name(node) == "FlatMapGroupsInArrow"
    if b.python_eval_type(node) in _GROUPED_ITER:
        wrapped = P.grouped_map_iter(func, names, offset, _HANDLE, arrow)
    else:
        wrapped = P.grouped_map(func, names, offset, _HANDLE, arrow)
    grouped = keyed.groupBy(*keyed.columns[:offset])
    schema = _python_schema(cx, node, StringType())
    result = grouped.applyInArrow(wrapped, schema) if arrow else grouped.applyInPandas(wrapped, schema)
    return _blackbox(cx, node, decl, _python_output(cx, node, result, [slot]))


def flat_map_cogroups(cx: CaptureContext, node: JPlan) -> Rewritten:
    """cogroup().applyInPandas / applyInArrow: each output row names both groups."""
    # cogroup().applyInPandas / applyInArrow: an output row may come from any row of
    # both groups with its key; each side's group is named as for applyInPandas.
    b = cx.bridge
    func, _, _ = b.python_function(node)
    decl = _declared(cx, func)
    if decl is not None and not _stored_coarse(cx, node, decl, 2):
        return _declared_cogroups(cx, node, _as_pairs(decl.traced(), "cogrouped functions keep pairs"))
    sides, slots, names = [], [], []
    for child, n in zip(b.children(node), (node.leftGroupingLen(), node.rightGroupingLen())):
        out = b.output(child)
        keyed, slot = _keyed_input(cx, node, out[:n], out[n:], cx.rewrite_stable(child, node))
        sides.append(keyed.groupBy(*keyed.columns[:n]))
        slots.append(slot)
        names.append([b.attr_name(a) for a in out[n:]])
    arrow = b.node_name(node) == "FlatMapCoGroupsInArrow"
    wrapped = P.cogrouped_map(func, names[0], names[1], node.leftGroupingLen(), _HANDLE, arrow)
    schema = _python_schema(cx, node, StringType(), StringType())
    cogrouped = sides[0].cogroup(sides[1])
    result = cogrouped.applyInArrow(wrapped, schema) if arrow else cogrouped.applyInPandas(wrapped, schema)
    return _blackbox(cx, node, decl, _python_output(cx, node, result, slots))


def _keyed_input(cx: CaptureContext, node: JPlan, grouping: list[JExpr], args: list[JExpr], inner: Rewritten):
    """The grouped function's input as a DataFrame of keys, arguments and a group
    handle, and the group slot whose side relation maps the handle to its rows.

    The handle is the smallest JSON spelling of the key among the group's rows:
    the same for every row Spark groups together (-0.0 and 0.0 included) and
    different between groups.
    """
    b = cx.bridge
    keys = [f"__sp_k{i}" for i in range(len(grouping))]
    cols = [f"__sp_a{i}" for i in range(len(args))]
    named = [b.alias(e, n) for e, n in zip(grouping + args, keys + cols)]
    base = b.to_dataframe(b.project(named + [s.attr for s in inner.slots], inner.plan))
    handle = F.min(F.to_json(F.struct(*keys))).over(Window.partitionBy(*keys)) if keys else F.lit("{}")
    keyed = base.withColumn(_HANDLE, handle)
    plan = b.analyzed(keyed)
    out = b.output(plan)
    moved = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(named) : len(out) - 1])]
    slot = cx.new_slot("group", cx.side(b.node_name(node), out[-1], Rewritten(plan, moved)))
    return keyed.select(*keys, *cols, _HANDLE), slot


def _python_schema(cx: CaptureContext, node: JPlan, *handles) -> StructType:
    fields = list(cx.bridge.to_dataframe(node).schema.fields)
    return StructType(fields + [StructField(f"{_HANDLE}{i}", t) for i, t in enumerate(handles)])


def map_in_batches(cx: CaptureContext, node: JPlan) -> Rewritten:
    """mapInPandas / mapInArrow: each output row names its input partition (coarse)."""
    # mapInPandas / mapInArrow: the function sees whole partitions, so an output row
    # may come from any row of its input partition (coarse). The input is computed
    # once, so the function and the side relation see the same partitions.
    b = cx.bridge
    (child,) = b.children(node)
    func, _, args = b.python_function(node)
    decl = _declared(cx, func)
    if decl is not None and not _stored_coarse(cx, node, decl, 1):
        return _declared_batches(cx, node, decl.traced(), args)
    inner = cx.rewrite(child)
    kept = _numbered_kept(cx, args + [s.attr for s in inner.slots], inner.plan)
    out = b.output(kept)
    moved = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(args) : -1])]
    slot = cx.new_slot("group", cx.side(b.node_name(node), out[-1], Rewritten(kept, moved)))
    schema = _python_schema(cx, node, IntegerType())
    data = b.to_dataframe(b.project(out[: len(args)] + out[-1:], kept))
    barrier = bool(node.isBarrier())
    if b.node_name(node) == "MapInPandas":
        result = data.mapInPandas(P.pandas_batches(func, _PARTITION, f"{_HANDLE}0"), schema, barrier=barrier)
    else:
        result = data.mapInArrow(P.arrow_batches(func, _PARTITION, f"{_HANDLE}0"), schema, barrier=barrier)
    return _blackbox(cx, node, decl, _python_output(cx, node, result, [slot]))


def python_udtf(cx: CaptureContext, node: JPlan) -> Rewritten:
    """A Python UDTF: 1:N from the row eval() was called on, else its partition (coarse)."""
    # Spark pairs the rows eval() yields with the input row it was called on, so
    # each such row comes from that one row (1:N, like a generator). Rows yielded by
    # terminate() come after the whole partition (Spark pairs them with its last
    # row), and a table argument hands the function whole partitions: then every
    # output row may come from any row of its input partition (coarse, as for
    # mapInPandas: the input is computed once so both sides see the same partitions).
    b = cx.bridge
    (child,) = b.children(node)
    handler, table = b.python_udtf(node)
    whole = table is not None or callable(getattr(handler, "terminate", None))
    decl = _declared(cx, handler)
    if decl is not None and decl.mode == "blackbox" and not whole:
        decl = None  # its rows come from the row eval() was called on: exact, nothing to run again
    inner = cx.rewrite(child)
    if decl is not None and inner.slots and not _stored_coarse(cx, node, decl, 1):
        return _declared_udtf(cx, node, _as_pairs(decl.traced(), "UDTFs keep pairs"), inner)
    if not whole:
        passed = b.udtf_passed_columns(node) + [s.attr for s in inner.slots]
        return Rewritten(b.udtf_generate(node, passed, inner.plan), inner.slots)
    kept = _numbered_kept(cx, b.output(inner.plan), inner.plan)
    number = b.output(kept)[-1]
    slot = cx.new_slot("group", cx.side(b.node_name(node), number, Rewritten(kept, inner.slots)))
    # the number comes through with the row eval() was called on (terminate()'s rows:
    # the partition's last row)
    called = b.udtf_generate(node, b.udtf_passed_columns(node) + [number], kept)
    own = [a for a in b.output(called) if b.expr_id(a) != b.expr_id(number)]
    plan = b.project(own + [b.alias(number, slot.name)], called)
    slot.attr = b.output(plan)[-1]
    why = table or "has terminate()"
    return _blackbox(cx, node, decl, Rewritten(plan, [slot], coarse=UDTF_COARSE.format(why)))


def _declared_udtf(cx: CaptureContext, node: JPlan, decl: Declaration, inner: Rewritten) -> Rewritten:
    """A declared Python UDTF over ``inner`` (its input rewritten, with slots): its eval()
    gets one more argument, the ids that name its input row's lineage (as for the other
    declared functions: its source rows' rids, or its number in the kept input), and its
    rows come out with the ids its declaration names."""
    b = cx.bridge
    if all(s.kind == "source" for s in inner.slots) and not cx.witnesses:
        none = b.long_literal(-1)  # an outer join's missing side: no row (an array of longs holds no null)
        ids, child, how = b.array([b.coalesce([s.attr, none]) for s in inner.slots]), inner.plan, _CARRIED
        slots = [cx.new_slot("rids", s.ref) for s in inner.slots]
    else:  # kept and numbered; the side relation (number, input slots) relates the numbers to its lineage
        child = cx.kept(b.project([*b.output(inner.plan), b.alias(b.row_id(), _ROW)], inner.plan))
        number, how = b.output(child)[-1], _NUMBERED
        ids = b.array([number])
        slots = [cx.new_slot("groups", cx.side(b.node_name(node), number, Rewritten(child, inner.slots)))]
    fields = [(f"{_HANDLE}{i}", ArrayType(LongType())) for i in range(len(slots))]
    call = b.udtf_calling(node, P.declared_udtf(decl, len(slots)), [ids], fields)
    plan = b.udtf_generate(node, b.udtf_passed_columns(node), child, call)
    out = b.output(plan)
    user = len(out) - len(fields)
    plan = b.project([*out[:user], *[b.alias(a, s.name) for a, s in zip(out[user:], slots)]], plan)
    for slot, attr in zip(slots, b.output(plan)[user:]):
        slot.attr = attr
    return Rewritten(plan, slots, strategy=f"declared: {how}", declared=decl.describe())


def _numbered_kept(cx: CaptureContext, columns: list[JExpr], plan: JPlan) -> JPlan:
    """``columns`` of ``plan`` and each row's partition number (``_PARTITION``, last),
    computed once and kept: the side relation and the function above both read the
    number from the rows. Spark's partition number where the function runs is not the
    input's above a union or a coalesce (the union's second input starts after the first's)."""
    b = cx.bridge
    return cx.kept(b.project(columns + [b.alias(b.partition_id(), _PARTITION)], plan))


def _python_output(cx: CaptureContext, node: JPlan, result, slots: list[Slot]) -> Rewritten:
    # the function's columns under the node's own attribute ids, so the operators
    # above still resolve, then the handles as group slots
    b = cx.bridge
    plan = b.analyzed(result)
    out = b.output(plan)
    user = len(out) - len(slots)
    exprs = [b.alias(new, b.attr_name(old), b.jexpr_id(old)) for new, old in zip(out[:user], b.output(node))]
    plan = b.project([*exprs, *[b.alias(a, s.name) for a, s in zip(out[user:], slots)]], plan)
    for s, a in zip(slots, b.output(plan)[user:]):
        s.attr = a
    return Rewritten(plan, slots)


# Functions that declare their lineage (functions/declare.py): each output row gets,
# per input, the ids of the rows its declaration names (exact, where the undeclared
# function is per group or partition). Where each input row carries its source rows'
# rids (slots of kind "source" only: scans, filters, projections, joins of sources),
# those rids go through the function with the rows and come out as "rids" slots: the
# input is neither kept nor related to its ids afterwards (not with witnesses, whose
# side relations why and how read: no "rids" slot is made there). Otherwise the input is
# computed once and kept, each row with an id of its own (monotonically_increasing_id,
# fixed by the keeping): the function sees the rows the side relation (id, input
# slots) holds, and its output rows get those ids as a "groups" slot. A rowwise
# function's output row has one input row: its ids come back as longs, a "source" slot
# per source or a "group" slot, not arrays.

_CARRIED = "their source rows' rids, carried through the function with its input rows, per output row"
_NUMBERED = "the ids of its input rows (kept, numbered), per output row; side relation (id, input slots)"


@dataclass
class _Input:
    """A declared function's input as a DataFrame: ``names`` (the function's columns),
    then ``ids``, columns of longs that name each row's lineage; ``slots``: the output's
    lineage, an array of ids per output row for each of ``ids``."""

    frame: DataFrame
    ids: list[str]
    slots: list[Slot]
    how: str
    # payloads kept: what each id column names, ("source", instance) or ("side", shared side of its rows)
    inputs: list[tuple[str, int]] | None = None


def _with_ids(
    cx: CaptureContext,
    node: JPlan,
    exprs: list[JExpr],
    names: list[str],
    child: JPlan,
    side: int = 0,
    scalar: bool = False,
    payloads: bool = False,
):
    """``exprs`` (as ``names``) of ``child``'s rewritten rows with the ids that name
    their lineage (see above); ``scalar``: an output row has one id each (rowwise
    lineage), a long rather than an array; ``payloads``: kept for the query (no
    slots: ``_payload_output`` makes the output's), the kept input's side shared with a
    set per row."""
    b = cx.bridge
    inner = cx.rewrite(child)
    named = [b.alias(e, n) for e, n in zip(exprs, names)]
    if inner.slots and all(s.kind == "source" for s in inner.slots) and not cx.witnesses:
        ids = [f"{_ROW}{side}_{i}" for i in range(len(inner.slots))]
        # no row (an outer join's missing side) is -1, never null: pandas makes a column
        # of longs with nulls a float one, which cannot hold every rid
        none = b.long_literal(-1)
        carried = [b.alias(b.coalesce([s.attr, none]), c) for s, c in zip(inner.slots, ids)]
        frame = b.to_dataframe(b.project(named + carried, inner.plan))
        if payloads:
            return _Input(frame, ids, [], _PAYLOADS + _CARRIED_IDS, [("source", s.ref) for s in inner.slots])
        return _Input(frame, ids, [cx.new_slot("source" if scalar else "rids", s.ref) for s in inner.slots], _CARRIED)
    frame, k = _numbered_input(cx, node, named, inner, shared=payloads)
    if payloads:
        return _Input(frame, [_ROW], [], _PAYLOADS + _NUMBERED_IDS, [("side", k)])
    return _Input(frame, [_ROW], [cx.new_slot("group" if scalar else "groups", k)], _NUMBERED)


def _numbered_input(cx: CaptureContext, node: JPlan, named: list[JExpr], inner: Rewritten, shared: bool = False):
    """The input (``named``, then each row's id) computed once and kept, and the side
    relation (id, input slots) of its rows; ``shared``: a shared side with a set per row."""
    b = cx.bridge
    kept = cx.kept(b.project(named + [s.attr for s in inner.slots] + [b.alias(b.row_id(), _ROW)], inner.plan))
    out = b.output(kept)
    moved = [Slot(s.name, s.kind, s.ref, a) for s, a in zip(inner.slots, out[len(named) : len(out) - 1])]
    k = cx.side(b.node_name(node), out[-1], Rewritten(kept, moved), shared=shared)
    cx.sides[k].set_per_row = shared
    return b.to_dataframe(b.project([*out[: len(named)], out[-1]], kept)), k


# Payloads kept for the query (keep="payload"): the input's rows carry their ids as above
# (source rids; else a row id of the kept input, whose side is then shared with a set
# per row, its lineage stored once); the function's output rows carry their payload
# columns (functions/payloads.py) and are kept, each with the set id of a shared side
# whose sets are made from the payloads when a trace reaches them.

_PAYLOADS = "payloads kept, a row per output row (map_p runs when a trace reaches it); "
_CARRIED_IDS = "its input rows' source rids carried through the function"
_NUMBERED_IDS = "its input rows kept, numbered, each a set of a shared side"
_SET = "__sp_set"


def _keeps_payloads(cx: CaptureContext, decl: Declaration) -> bool:
    """Whether ``decl``'s payloads are kept for this capture."""
    return decl.keep == "payload" and not cx.witnesses and not cx.trace_blackbox


_AGAIN = "the query is run again (a lazy capture, a blackbox function traced)"


def _why_pairs(cx: CaptureContext) -> str:
    return "not with witnesses" if cx.witnesses else _AGAIN


def _as_pairs(decl: Declaration, why: str) -> Declaration:
    # keep="payload" not taken: map_p runs as the function runs, and explain() says why
    if decl.keep != "payload":
        return decl
    return dataclasses.replace(decl, keep="pairs", why_pairs=why)


def _payload_schema(cx: CaptureContext, node: JPlan, rows: _Input) -> StructType:
    fields = list(cx.bridge.to_dataframe(node).schema.fields)
    kinds = [LongType()] * 3 + [BinaryType(), LongType(), BinaryType()] + [ArrayType(LongType())] * len(rows.ids)
    return StructType(fields + [StructField(n, t) for n, t in zip(pay_columns(len(rows.ids)), kinds)])


def _payload_output(cx: CaptureContext, node: JPlan, decl: Declaration, result: DataFrame, rows: _Input) -> Rewritten:
    b = cx.bridge
    declaration = kept_declaration(decl)
    kept = cx.kept(b.analyzed(result.withColumn(_SET, F.monotonically_increasing_id())))
    out = b.output(kept)
    user = len(out) - len(pay_columns(len(rows.ids))) - 1
    side = b.project([b.alias(out[-1], HANDLE), *out[user:-1]], kept)
    k = len(cx.sides)
    payload = PayloadSide(rows.inputs, declaration)
    cx.sides.append(SideRelation(k, b.node_name(node), side, [], shared=True, set_per_row=True, payload=payload))
    slot = cx.new_slot("group", k)
    rw = _python_output(cx, node, b.to_dataframe(b.project([*out[:user], out[-1]], kept)), [slot])
    return Rewritten(rw.plan, rw.slots, strategy=f"declared: {rows.how}", declared=decl.describe())


def _declared_output(cx: CaptureContext, node: JPlan, decl: Declaration, result, inputs: list[_Input]) -> Rewritten:
    rw = _python_output(cx, node, result, [s for i in inputs for s in i.slots])
    hows = [i.how for i in inputs]
    how = hows[0] if len(set(hows)) == 1 else "; ".join(f"{s}: {h}" for s, h in zip(("left", "right"), hows))
    return Rewritten(rw.plan, rw.slots, strategy=f"declared: {how}", declared=decl.describe())


def _handles(inputs: list[_Input]) -> list[str]:
    return [f"{_HANDLE}{i}" for i in range(sum(len(i.ids) for i in inputs))]


def _declared_groups(cx: CaptureContext, node: JPlan, decl: Declaration, grouping, args) -> Rewritten:
    b = cx.bridge
    (child,) = b.children(node)
    keys = [f"__sp_k{i}" for i in range(len(grouping))]
    cols = [f"__sp_a{i}" for i in range(len(args))]
    payloads = _keeps_payloads(cx, decl)
    decl = decl if payloads else _as_pairs(decl, _why_pairs(cx))
    rows = _with_ids(cx, node, grouping + args, keys + cols, child, scalar=decl.mode == "rowwise", payloads=payloads)
    names, arrow = [b.attr_name(a) for a in args], b.node_name(node) == "FlatMapGroupsInArrow"
    form = P.declared_grouped_map_iter if b.python_eval_type(node) in _GROUPED_ITER else P.declared_grouped_map
    wrapped = form(decl, names, len(keys), rows.ids, _handles([rows]), arrow)
    grouped = rows.frame.groupBy(*keys)
    schema = _payload_schema(cx, node, rows) if payloads else _python_schema(cx, node, *_handle_types(decl, rows))
    result = grouped.applyInArrow(wrapped, schema) if arrow else grouped.applyInPandas(wrapped, schema)
    if payloads:
        return _payload_output(cx, node, decl, result, rows)
    return _declared_output(cx, node, decl, _no_row_null(decl, result, rows), [rows])


def _declared_cogroups(cx: CaptureContext, node: JPlan, decl: Declaration) -> Rewritten:
    b = cx.bridge
    sides, inputs, names = [], [], []
    for side, (child, n) in enumerate(zip(b.children(node), (node.leftGroupingLen(), node.rightGroupingLen()))):
        out = b.output(child)
        keys = [f"__sp_k{i}" for i in range(n)]
        cols = [f"__sp_a{i}" for i in range(len(out) - n)]
        rows = _with_ids(cx, node, out, keys + cols, child, side)
        sides.append(rows.frame.groupBy(*keys))
        inputs.append(rows)
        names.append([b.attr_name(a) for a in out[n:]])
    arrow = b.node_name(node) == "FlatMapCoGroupsInArrow"
    ids = (inputs[0].ids, inputs[1].ids)
    wrapped = P.declared_cogrouped_map(decl, *names, node.leftGroupingLen(), ids, _handles(inputs), arrow)
    schema = _python_schema(cx, node, *[ArrayType(LongType())] * len(_handles(inputs)))
    cogrouped = sides[0].cogroup(sides[1])
    result = cogrouped.applyInArrow(wrapped, schema) if arrow else cogrouped.applyInPandas(wrapped, schema)
    return _declared_output(cx, node, decl, result, inputs)


def _declared_batches(cx: CaptureContext, node: JPlan, decl: Declaration, args) -> Rewritten:
    b = cx.bridge
    (child,) = b.children(node)
    names = [b.attr_name(a) for a in args]
    payloads = _keeps_payloads(cx, decl)
    decl = decl if payloads else _as_pairs(decl, _why_pairs(cx))
    rows = _with_ids(cx, node, args, names, child, scalar=decl.mode == "rowwise", payloads=payloads)
    schema = _payload_schema(cx, node, rows) if payloads else _python_schema(cx, node, *_handle_types(decl, rows))
    wrapped = P.declared_batches(decl, rows.ids, _handles([rows]))
    barrier = bool(node.isBarrier())
    if b.node_name(node) == "MapInPandas":
        result = rows.frame.mapInPandas(wrapped, schema, barrier=barrier)
    else:
        result = rows.frame.mapInArrow(wrapped, schema, barrier=barrier)
    if payloads:
        return _payload_output(cx, node, decl, result, rows)
    return _declared_output(cx, node, decl, _no_row_null(decl, result, rows), [rows])


def _handle_types(decl: Declaration, rows: _Input) -> list:
    # rowwise lineage: an output row's ids as they are (a long each, what Python hands
    # Spark fastest); other modes: an array of ids per output row
    return [LongType() if decl.mode == "rowwise" else ArrayType(LongType())] * len(rows.ids)


def _no_row_null(decl: Declaration, result: DataFrame, rows: _Input) -> DataFrame:
    # a rowwise function's ids come back as they went (-1: an outer join's missing side), a slot's no row is null
    if decl.mode != "rowwise":
        return result
    return result.withColumns({h: F.when(F.col(h) >= 0, F.col(h)) for h in _handles([rows])})


_FUNCTIONS = ("FlatMapGroupsInPandas", "FlatMapGroupsInArrow", "MapInPandas", "MapInArrow")
_COGROUPED = ("FlatMapCoGroupsInPandas", "FlatMapCoGroupsInArrow")


def lazy_granularity(cx: CaptureContext, node: JPlan) -> str | None:
    """The granularity of ``node`` (a Python function over groups or partitions) whose
    function declares its lineage, in a lazy capture's explain (made before any rule
    runs): its lineage is built by running the query again, where a blackbox function
    reports its positions and payloads are read as the function runs. None: not such
    a node."""
    b = cx.bridge
    if b.node_name(node) not in _FUNCTIONS + _COGROUPED:
        return None
    decl = _declared(cx, b.python_function(node)[0])
    if decl is None:
        return None
    return f"exact as declared: {_as_pairs(decl.traced(), _AGAIN).describe()}"


def _declared(cx: CaptureContext, function) -> Declaration | None:
    """``function``'s declared lineage, with the keep this capture chose for it."""
    decl = declaration_of(function)
    return cx.function_keep.apply(decl) if cx.function_keep is not None else decl


def _stored_coarse(cx: CaptureContext, node: JPlan, decl: Declaration, sides: int) -> bool:
    """Whether a declared function's lineage is stored per group or partition, as an
    undeclared one's: a blackbox function's, except when the query runs again to trace
    it (``CaptureContext.trace_blackbox``)."""
    _check_sides(decl, node, sides)
    if decl.mode != "blackbox" or cx.trace_blackbox:
        return False
    cx.blackbox.append(decl.name)
    return True


def _blackbox(cx: CaptureContext, node: JPlan, decl: Declaration | None, rw: Rewritten) -> Rewritten:
    # a blackbox function's coarse lineage, said as such in explain(), kept as an undeclared one's
    if decl is None or decl.mode != "blackbox":
        return rw
    how = STRATEGY.get(cx.bridge.node_name(node), "")
    return dataclasses.replace(rw, coarse=f"coarse as stored: {decl.describe()}", strategy=how)


def _check_sides(decl: Declaration, node: JPlan, sides: int) -> None:
    # what a declaration must say of a function over one input, or of a cogrouped one
    what = "a cogrouped function (two inputs)" if sides == 2 else "a function of one input"
    if decl.mode == "rowwise" and sides != 1:
        raise InvalidArgument(f"{decl.name!r} declares rowwise lineage, which needs one input; it is {what}")
    if decl.mode in ("full", "blackbox") and len(decl.columns) != sides:
        raise InvalidArgument(
            f"{decl.name!r} declares {decl.mode} lineage in {len(decl.columns)} column(s); {what} needs {sides} "
            "(for cogroup: the left and the right input positions)"
        )


def functions_keeping_payloads(b: Bridge, df: DataFrame) -> dict[str, Declaration]:
    """The functions ``df`` calls whose payloads a capture can keep (payload and
    composite lineage, over groups or partitions; cogrouped functions and UDTFs keep
    pairs), by the names ``keep=`` gives them."""
    found: dict[str, Declaration] = {}
    stack = [b.analyzed(df)]
    while stack:
        node = stack.pop()
        stack.extend(b.children(node))
        if b.node_name(node) in _FUNCTIONS:
            decl = declaration_of(b.python_function(node)[0])
            if decl is not None and decl.mode in KEPT_MODES:
                found[decl.name] = decl
    return found
