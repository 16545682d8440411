"""The leaf rule: a source's rows given their rids. Parquet files are read in place
(rid = file number and Parquet row index); any other leaf (CSV, JSON, in-memory data,
``range``) is first copied to Parquet with the capture, and read from the copy. A
source is named (``session.source``, a view's or table's name, its path) and
registered once however often the plan reads it; a workload's predicate leaves the rid
NULL on the rows it does not keep.

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> cap = session.capture(spark.range(4).where("id > 1"), "big")
>>> sorted(r.id for r in cap.backward("id = 3", "range_0").collect())
[3]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.errors import PySparkException
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from ...errors import InvalidArgument
from ...plan.catalyst import JPlan, quiet_analysis
from ...plan.small_writes import PARTITION, small_rows, write_table
from ...plan.written import read_written
from ...sources import identity as S
from ...store.format import Slot
from ..explain import PRUNED_TEXT
from ..shapes import PRUNED, Instance, Rewritten, SourceUse
from ..snapshots import snapshot_key, written_once

if TYPE_CHECKING:
    from ..context import CaptureContext


def rule(cx: CaptureContext, leaf: JPlan) -> Rewritten:
    """A leaf with its rid column (a source slot), or unchanged if no source rows are behind it."""
    b = cx.bridge
    src_index = leaf_source(cx, leaf)
    if src_index is None:
        return Rewritten(leaf, [])
    if cx.sources[src_index].info.kind == PRUNED:
        name = cx.sources[src_index].info.name
        return Rewritten(leaf, [], strategy=f"source {name}: {PRUNED_TEXT}")
    cx.instances.append(Instance(source=src_index))
    slot = cx.new_slot("source", len(cx.instances) - 1)
    use = cx.sources[src_index]
    files = [path for path, _, _ in use.info.files]
    if use.info.kind == "parquet":
        plan = _restricted(cx, b.with_file_rids(leaf, files, S.ROW_BITS, slot.name), slot, src_index)
    else:
        snap_plan = _restricted(cx, b.with_file_rids(use.snapshot_plan, files, S.ROW_BITS, slot.name), slot, src_index)
        snap_out = b.output(snap_plan)
        # keep the leaf's attribute ids so the operators above still resolve
        exprs = [b.alias(new, b.attr_name(old), b.jexpr_id(old)) for new, old in zip(snap_out, b.output(leaf))]
        exprs.append(snap_out[-1])
        plan = b.project(exprs, snap_plan)
    plan = selected(cx, plan, use.info.name)
    slot.attr = b.last_output(plan)
    return Rewritten(plan, [slot])


def leaf_source(cx: CaptureContext, leaf: JPlan) -> int | None:
    """The number of the source ``leaf`` reads (registered on first sight), or None
    for a leaf without source rows."""
    b = cx.bridge
    if b.node_name(leaf) == "OneRowRelation":
        return None  # constants: no input rows behind them
    if b.node_name(leaf) == "LocalRelation" and cx.leaf_id(leaf) not in cx.leaf_names and b.is_empty(leaf):
        return None  # the optimizer's stand-in for a part it proved empty
    return _source_for(cx, leaf, S.leaf_format(b, leaf), cx.leaf_names.get(cx.leaf_id(leaf)))


def selected(cx: CaptureContext, plan: JPlan, name: str) -> JPlan:
    """``plan`` (a leaf's columns, then its rid) with the rid NULL on the rows that
    fail the workload's predicate for source ``name``: those rows are read and
    used as before, but no operator above carries, collects or stores their rid."""
    predicate = cx.where.get(name)
    if predicate is None:
        return plan
    b = cx.bridge
    df = b.to_dataframe(plan)
    *columns, rid = df.columns
    try:
        # the leaf's columns keep their attribute ids: only the rid is replaced
        with quiet_analysis():
            selected = b.analyzed(df.withColumn(rid, F.when(F.expr(predicate), F.col(rid))))
    except PySparkException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgument(
            f"workload where for source {name!r}: {predicate!r} is not a predicate over its columns "
            f"({', '.join(columns)}): {first}"
        ) from None
    if not b.is_plan_deterministic(selected) or b.has_pattern(selected, "PLAN_EXPRESSION"):
        raise InvalidArgument(
            f"workload where for source {name!r}: {predicate!r} must be deterministic and hold no "
            "subquery: it is evaluated on each row as capture reads it"
        )
    return selected


def _restricted(cx: CaptureContext, plan: JPlan, slot: Slot, src_index: int) -> JPlan:
    if cx.restrict is None or src_index not in cx.restrict:  # not restricted: every row
        return plan
    b = cx.bridge
    df = b.to_dataframe(plan)
    keep = cx.restrict[src_index].select(F.col(S.RID).alias("__sp_keep"))
    return b.analyzed(df.join(keep, F.col(slot.name) == keep["__sp_keep"], "left_semi"))


def _source_for(cx: CaptureContext, leaf: JPlan, fmt: str, context: str | None) -> int:
    b = cx.bridge
    key = S.leaf_key(b, leaf)
    for i, use in enumerate(cx.sources):
        if cx.by_occurrence:
            break
        other = use.key
        if (key is not None and key == other) or (key is None and other is None and b.same_result(leaf, use.leaf)):
            return i
    name = _name_for(cx, leaf, key, fmt, context)
    schema = b.schema_json(leaf)
    table = b.catalog_table_name(leaf) if b.node_name(leaf) == "LogicalRelation" else None
    if cx.keep is not None and name not in cx.keep:  # neither read for rids nor copied
        cx.sources.append(SourceUse(S.SourceInfo(name, PRUNED, fmt, schema=schema, table=table), leaf, key=key))
        return len(cx.sources) - 1
    roots, original = S.file_fingerprint(b, leaf)
    if fmt == "parquet":
        info = S.SourceInfo(name, "parquet", fmt, original, roots, original, schema, table)
        cx.sources.append(SourceUse(info, leaf, key=key))
    else:
        info, snap_plan = _snapshot(cx, leaf, name, fmt, roots, original, schema, table)
        cx.sources.append(SourceUse(info, leaf, snap_plan, key=key))
    return len(cx.sources) - 1


def _name_for(cx: CaptureContext, leaf: JPlan, key, fmt: str, context: str | None) -> str:
    b = cx.bridge
    for named in cx.named:
        if S.same_source(b, leaf, key, named):
            return _unique(cx, named.name)
    if context:
        return _unique(cx, context.split(".")[-1])
    if b.node_name(leaf) == "LogicalRelation":
        table = b.catalog_table_name(leaf)
        if table:
            return _unique(cx, table.split(".")[-1])
        fs = b.file_relation(leaf)
        return _unique(cx, S.display_path(b.root_paths(fs)))
    if fmt == "range":
        return _unique(cx, f"range_{len(cx.sources)}")
    if b.is_checkpoint(leaf):
        return _unique(cx, f"checkpoint_{len(cx.sources)}")
    return _unique(cx, f"dataframe_{len(cx.sources)}")


def _unique(cx: CaptureContext, name: str) -> str:
    taken = {u.info.name for u in cx.sources}
    if name not in taken:
        return name
    n = 2
    while f"{name}_{n}" in taken:
        n += 1
    return f"{name}_{n}"


def _snapshot(cx: CaptureContext, leaf, name, fmt, roots, original, schema, table):
    b = cx.bridge
    path = f"{cx.snapshot_dir}/{len(cx.sources)}-{S.safe_id(name)}"
    data = b.to_dataframe(leaf)
    # positional names: the leaf's may repeat or be names Parquet refuses
    fields = data.schema.fields
    names = [S.snapshot_column(i) for i in range(len(fields))]
    # rows the driver holds, when few, written here (Spark's write costs about 200 ms
    # whatever the size), a file per partition as Spark writes them: a function over
    # batches or an order-sensitive aggregate above sees its rows as the query does
    local = fmt == "memory" and "://" not in path.removeprefix("file://")
    rows = small_rows(data, partitions=True) if local else None
    key = None
    if rows is None:
        key = snapshot_key(b, leaf, schema, original)
        earlier = cx.earlier_snapshots().get(key) if key else None
        written_once(key, path, lambda: data.toDF(*names).write.parquet(path), earlier)
    else:
        # the positional schema without analyzing a renamed Dataset (a round trip and an analysis)
        positional = StructType([StructField(n, f.dataType, f.nullable, f.metadata) for n, f in zip(names, fields)])
        write_table(rows.rename_columns([*names, PARTITION]), positional, path)
    snap = read_written(b.spark, path)
    files = sorted(b.files(b.file_relation(b.analyzed(snap))))
    info = S.SourceInfo(name, "snapshot", fmt, files, roots, original, schema, table, key=key or "")
    return info, b.analyzed(snap)
