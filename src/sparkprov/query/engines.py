"""Which engine answers a trace of the Python API, and the embedded answer as a DataFrame.

``auto`` answers with the embedded engine when the rows to trace are named by rids or
a predicate: the lineage is read in this process, and an answer of at most
``ROWS_LIMIT`` rows is handed to Spark as a small local DataFrame (no Spark job reads
the lineage); a larger one is read by Spark from its rids. Lineage too large to read
here, rows given as a DataFrame, and anything the embedded engine does not read go
to Spark, whose answer stays distributed.

>>> check_engine("auto")
'auto'
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, LongType, MapType, StructField, StructType, TimestampType

from ..errors import EmbeddedUnsupported, LineageTooLarge
from ..plan.versions import arrow_dataframe
from ..sources.identity import RID
from ..store.entry import OutputInfo
from ..store.files import parquet_files
from ..store.fs import is_remote
from .embedded import ENGINES, EmbeddedEngine, check_engine, leaf_types  # noqa: F401 - also from here
from .trace import RowsArg, rid_list

ROWS_LIMIT = 100_000  # rows an embedded answer hands to Spark as a local DataFrame
# an output of at most this many rows in at most OUTPUT_FILES files is read here and
# handed to Spark as rows: 20 ms against 240 ms for Spark to list, plan and read a file
OUTPUT_ROWS_HERE = 10_000
OUTPUT_FILES_HERE = 16
# the types Arrow hands to Spark as Spark wrote them (nested ones of these too)
_HANDED_OVER = {"boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary", "date",
                "timestamp", "timestamp_ntz"}  # fmt: skip


def embedded_or_none(engine: str, answer: Callable[[], DataFrame | dict]) -> DataFrame | dict | None:
    """``answer()`` from the embedded engine, or None when Spark should answer instead
    (always with ``engine="spark"``; with ``auto`` when the embedded engine declines)."""
    if engine == "spark":
        return None
    try:
        return answer()
    except (LineageTooLarge, EmbeddedUnsupported, _NotForEmbedded):
        if engine == "embedded":
            raise
        return None


class _NotForEmbedded(ValueError):
    """Rows the embedded engine does not take (a DataFrame): Spark answers."""


def rids_of(engine: EmbeddedEngine, rows: RowsArg, predicate: Callable[[str], np.ndarray]) -> np.ndarray:
    """The rids ``rows`` names: a predicate through ``predicate``, ints or Rows as given."""
    if isinstance(rows, DataFrame):
        raise _NotForEmbedded("the embedded engine takes rids or a predicate, not a DataFrame")
    if isinstance(rows, str):
        return predicate(rows)
    return np.array(sorted(set(rid_list(rows))), dtype=np.int64)


def check_rows(count: int, what: str) -> None:
    """Raise ``LineageTooLarge`` when an answer of ``count`` rows is too many to hand over."""
    if count > ROWS_LIMIT:
        raise LineageTooLarge(f"{what}: {count:,} rows is more than an embedded answer hands to Spark")


def local_dataframe(spark: SparkSession, table: pa.Table, schema: StructType) -> DataFrame:
    """``table`` (rows counted with ``check_rows`` first) as a DataFrame with Spark's own ``schema``."""
    if table.num_rows == 0:  # Arrow has no column types to give for nothing
        return spark.createDataFrame([], schema)
    return arrow_dataframe(spark, utc_instants(table, schema), schema)


def output_here(output: OutputInfo) -> pa.Table | None:
    """The stored output rows (the files' columns, ``_sp_rid`` among them) read in this
    process when they are few, local and of types Arrow hands over unchanged; None
    otherwise (Spark reads them)."""
    fields = json.loads(output.schema)["fields"]
    if is_remote(output.path) or not all(_handed_over(f["type"]) for f in fields):
        return None
    files = parquet_files(output.path)
    if len(files) > OUTPUT_FILES_HERE or sum(pq.read_metadata(f).num_rows for f in files) > OUTPUT_ROWS_HERE:
        return None
    names = [f["name"] for f in fields]
    if not files:
        return pa.table({n: [] for n in names})
    return pq.read_table(files, columns=names)


def _handed_over(kind) -> bool:
    return all(t in _HANDED_OVER or t.startswith("decimal(") for t in leaf_types(kind))


def utc_instants(table: pa.Table, schema: StructType) -> pa.Table:
    """``table`` with its timestamps that Spark reads as instants (``TimestampType``)
    marked as UTC where the files left them without a zone.

    Spark writes such timestamps normalized to UTC; as INT96 (its default) Arrow reads
    them without a zone, and Spark would take them for wall-clock times of the
    session's zone, shifted by its offset (02:30 read back as 06:30 in New York).

    >>> t = pa.table({"ts": pa.array([0], pa.timestamp("ns"))})
    >>> from pyspark.sql.types import TimestampType
    >>> str(utc_instants(t, StructType([StructField("ts", TimestampType())])).schema.field("ts").type)
    'timestamp[ns, tz=UTC]'
    """
    fields = [f.with_type(_utc_type(f.type, s.dataType)) for f, s in zip(table.schema, schema.fields)]
    fields += list(table.schema)[len(fields) :]
    wanted = pa.schema(fields, table.schema.metadata)
    return table if wanted.equals(table.schema) else table.cast(wanted)


def _utc_type(kind: pa.DataType, spark_type: DataType) -> pa.DataType:
    if isinstance(spark_type, TimestampType) and pa.types.is_timestamp(kind) and kind.tz is None:
        return pa.timestamp(kind.unit, "UTC")
    if isinstance(spark_type, StructType) and pa.types.is_struct(kind):
        by_name = {f.name: f.dataType for f in spark_type.fields}
        return pa.struct([f.with_type(_utc_type(f.type, by_name[f.name])) if f.name in by_name else f for f in kind])
    if isinstance(spark_type, ArrayType) and (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        item = kind.value_field
        inner = item.with_type(_utc_type(item.type, spark_type.elementType))
        return pa.large_list(inner) if pa.types.is_large_list(kind) else pa.list_(inner)
    if isinstance(spark_type, MapType) and pa.types.is_map(kind):
        key = kind.key_field.with_type(_utc_type(kind.key_type, spark_type.keyType))
        return pa.map_(key, kind.item_field.with_type(_utc_type(kind.item_type, spark_type.valueType)))
    return kind


def rows_by_rid(spark: SparkSession, relation: DataFrame, rids: np.ndarray) -> DataFrame:
    """The rows of ``relation`` whose ``_sp_rid`` is in ``rids``: the rids found in this
    process, too many to hand over as rows, and the rows read by Spark."""
    wanted = arrow_dataframe(spark, pa.table({"__sp_wanted": pa.array(rids, pa.int64())}))
    return relation.join(wanted, relation[RID] == wanted["__sp_wanted"], "left_semi")  # keeps the columns' order


def source_schema(info_schema: str) -> StructType:
    """A source's rows as traces return them: its columns and ``_sp_rid``."""
    fields = StructType.fromJson(json.loads(info_schema)).fields
    return StructType([*fields, StructField(RID, LongType())])


def output_schema(output: OutputInfo) -> StructType:
    """The output rows as traces return them (display names and ``_sp_rid``)."""
    stored = {f.name: f for f in StructType.fromJson(json.loads(output.schema)).fields}
    fields = [StructField(d, stored[s].dataType) for s, d in zip(output.stored, output.columns)]
    return StructType([*fields, StructField(RID, LongType())])
