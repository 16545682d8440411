"""A DataFrame's rows written as Parquet: small ones collected through Arrow and
written on the driver, others by Spark.

Spark's own write costs about 200 ms on this machine however few the rows (every
task opens a Parquet writer, the job commits through a temporary folder); collecting
the same rows as Arrow costs one job and no commit. Captures write several small
files each (the store's copy of the output, side relations, a workflow's datasets), so
on small data that fixed cost was most of what tracking added.

Rows count as small when Catalyst's estimate of the analyzed plan's size is at most
``SMALL_BYTES`` (Spark's own threshold for broadcasting a join's side) and no node in
the plan can make more rows than its estimate says (a generator, a Python function
over batches or groups); their types must be ones Arrow and Parquet keep exactly.
Catalyst cannot size data made from Python objects (``createDataFrame`` of a list, an
RDD's ``toDF``): such a DataFrame, computed without a shuffle from data the driver
sent (a ``ParallelCollectionRDD``), is collected up to ``SMALL_ROWS`` rows and one
more, and counts as small if that found its end within ``SMALL_BYTES``. The
file written holds Spark's schema in its footer, as Spark's files do, so
``plan.written.read_written`` reads it back as it reads those. A copy that a query
reads in place of its source (a capture's snapshot of in-memory rows) is written a
file per partition, as Spark writes it, so that the query sees the same partitions.

>>> import tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> folder = tempfile.TemporaryDirectory()
>>> write_parquet(spark.range(3).selectExpr("id", "'x' AS s"), folder.name + "/t")
'arrow'
>>> spark.read.parquet(folder.name + "/t").count()
3
>>> folder.cleanup()
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
)

from .references import compiled
from .versions import line_of, to_arrow
from .written import SPARK_SCHEMA, stored_schema

SMALL_BYTES = 10 * 1024 * 1024
SMALL_ROWS = 100_000
# the codecs of spark.sql.parquet.compression.codec Arrow writes as Spark does (Spark's
# lz4 is Hadoop's framing, not Parquet's LZ4_RAW; Arrow has no lzo)
ARROW_CODECS = ("none", "snappy", "gzip", "zstd", "brotli")
PARTITION = "__sp_partition"  # small_rows(partitions=True)'s column of partition numbers
# Parquet measures a row group's size first after page.size.row.check.max rows (10,000
# by default): a hundred rows of an aggregate's rid arrays (a million rids each) made
# one 400 MB row group, which a reader holds whole, beyond a 2g driver's heap. Rows
# holding collections are measured after 16 rows, and then as Parquet's estimate says
# (of their compressed size: the size a reader holds).
ROW_GROUP_BYTES = 32 << 20
# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovRows.java
_ROWS_CLASS = "SparkprovRows"
# nodes whose output may hold more rows than Catalyst's estimate (it keeps their input's)
_UNBOUNDED = re.compile(r"^[\s:+\-!]*(Generate|MapInPandas|MapInArrow|PythonMapInArrow|FlatMapGroupsIn"
                        r"|FlatMapCoGroupsIn)", re.MULTILINE)  # fmt: skip
_EXACT = (BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, StringType, CharType,
          VarcharType, BinaryType, DateType, TimestampType, TimestampNTZType, DecimalType)  # fmt: skip


def small_rows(
    df: DataFrame,
    limit: int | None = None,
    partitions: bool = False,
    small_inputs: bool = False,
    most_rows: int | None = None,
) -> pa.Table | None:
    """``df``'s rows as an Arrow table (one Spark job), if they are small by the rules
    above (at most ``limit`` bytes, ``SMALL_BYTES`` by default); None otherwise (nothing
    run, unless Catalyst could not size them: then a prefix of at most ``most_rows``
    rows, ``SMALL_ROWS`` by default, and one more, was). With
    ``partitions``, a last column ``PARTITION`` holds the number of each row's Spark
    partition (the rows come in partition order). With ``small_inputs``, a prefix is
    also tried when what the plan reads is small (its leaves' estimates add up to at
    most ``SMALL_BYTES``): for lineage's own joins, whose estimates multiply their
    inputs' sizes, and which cost little to run twice over such inputs."""
    # estimated on the analyzed plan: optimizing it here would optimize it twice when
    # Spark writes it (the write plans its query anew), seconds for a large plan
    limit = SMALL_BYTES if limit is None else limit
    most_rows = SMALL_ROWS if most_rows is None else most_rows
    plan = df._jdf.queryExecution().analyzed()
    if small_plan(plan, df.schema, limit, df.sparkSession):
        return _collected(df, partitions)
    if not all(_kept_exactly(f.dataType) for f in df.schema.fields):
        return None
    if not _driver_data(plan) and not (small_inputs and _reads_little(plan)):
        return None
    # Catalyst does not know its size: as many rows as could be small, and one more
    table = _collected(df, partitions, most_rows + 1)
    return table if table.num_rows <= most_rows and table.nbytes <= limit else None


def _collected(df: DataFrame, partitions: bool, rows: int | None = None) -> pa.Table:
    # a null struct's fields hold nulls, whatever the schema says, which PySpark's
    # conversion refuses where it says they cannot: collected as nullable
    nullable = StructType([StructField(f.name, nullable_type(f.dataType), f.nullable, f.metadata) for f in df.schema])
    df = df if nullable == df.schema else df.to(nullable)
    if partitions:  # numbered below the limit: the partitions of df's own rows
        df = df.withColumn(PARTITION, F.spark_partition_id())
    return to_arrow(df if rows is None else df.limit(rows))


def _reads_little(plan) -> bool:
    leaves = plan.collectLeaves()
    total = 0
    for i in range(leaves.size()):
        total += _plan_bytes(leaves.apply(i))
        if total > SMALL_BYTES:
            return False
    return True


def _driver_data(plan) -> bool:
    """Whether the resolved ``plan`` is an RDD's rows (a ``LogicalRDD``) computed without
    a shuffle from a collection the driver holds: collecting a prefix of it costs
    little, whatever its size."""
    if plan.nodeName() != "LogicalRDD":
        return False
    lineage = plan.rdd().toDebugString().splitlines()  # a shuffle shows as a "+-" branch
    return "+-" not in "".join(lineage[1:]) and "ParallelCollectionRDD" in lineage[-1]


def small_plan(plan, schema: StructType, limit: int, spark: SparkSession) -> bool:
    """Whether the rows of the resolved logical ``plan`` (of ``schema``) are small by
    the rules above: at most ``limit`` bytes by Catalyst's estimate, or where that is
    above ``limit``, with rows counted through joins (``SparkprovRows.java``)."""
    if not all(_kept_exactly(f.dataType) for f in schema.fields):
        return False
    if _plan_bytes(plan) > limit:
        rows = compiled(spark, _ROWS_CLASS, line_of(spark).java_source(_ROWS_CLASS))
        if rows is None or rows.bytes(plan) > limit:
            return False
    # the plan's text only for plans that may be small: a large plan's runs to megabytes
    return not _UNBOUNDED.search(plan.treeString())


def estimated_bytes(df: DataFrame) -> int:
    """Catalyst's estimate of ``df``'s size (of its analyzed plan: its files' sizes
    where it reads files; unknown sizes are huge)."""
    return _plan_bytes(df._jdf.queryExecution().analyzed())


def _plan_bytes(plan) -> int:
    return int(str(plan.stats().sizeInBytes()))  # a Scala BigInt


def write_table(
    table: pa.Table,
    schema: StructType,
    path: str | os.PathLike,
    row_group_bytes: int | None = None,
    compression: str = "snappy",
) -> None:
    """``table`` written as one part file of the new folder ``path``, Spark's schema
    ``schema`` in its footer; each file appears whole (written under a hidden name,
    then renamed). A table from ``small_rows(partitions=True)`` is written as Spark
    writes its partitions: a file for each that holds rows (one empty file if none
    does), numbered in their order, each larger than the next, so that Spark reads
    them back in that order (it reads a folder's small files a partition each, the
    largest first), each partition with the same rows in the same order. Row groups
    hold about ``row_group_bytes`` in memory (default ``ROW_GROUP_BYTES``); pages are
    compressed with ``compression`` (a codec of ``ARROW_CODECS``), named as Spark
    names its files."""
    folder = Path(str(path).removeprefix("file://").removeprefix("file:"))
    folder.mkdir(parents=True)
    parts = [(0, table)]
    if PARTITION in table.column_names:
        numbers = table.column(PARTITION).to_numpy()
        table = table.drop_columns([PARTITION])
        starts = [0, *(np.flatnonzero(numbers[1:] != numbers[:-1]) + 1).tolist()]
        ends = [*starts[1:], table.num_rows]
        parts = [(int(numbers[s]) if e else 0, table.slice(s, e - s)) for s, e in zip(starts, ends)]
    group = row_group_bytes or ROW_GROUP_BYTES
    encoded = [_encoded(t, schema, group, compression) for _, t in parts]
    for i in reversed(range(len(parts) - 1)):
        if encoded[i].size <= encoded[i + 1].size:
            padding = encoded[i + 1].size - encoded[i].size + 1
            encoded[i] = _encoded(parts[i][1], schema, group, compression, padding)
    suffix = {"none": "", "gzip": ".gz", "brotli": ".br"}.get(compression, f".{compression}")  # as Parquet names them
    for (number, _), data in zip(parts, encoded):
        name = f"part-{number:05d}-{uuid.uuid4()}-c000{suffix}.parquet"
        with open(folder / f".{name}", "wb") as out:
            out.write(data)
        os.replace(folder / f".{name}", folder / name)


def _encoded(table: pa.Table, schema: StructType, group: int, compression: str, padding: int = 0) -> pa.Buffer:
    """``table`` as a Parquet file's bytes, in row groups of about ``group`` bytes,
    Spark's ``schema`` in its footer and at least ``padding`` bytes more than without."""
    footer = {**(table.schema.metadata or {}), SPARK_SCHEMA: stored_schema(schema).json()}
    if padding:
        footer[b"sparkprov.padding"] = b" " * padding
    out = pa.BufferOutputStream()
    # row groups of at most ``group`` bytes in memory (Spark's writes of collections
    # bound their compressed size: these are no larger)
    rows = max(1, table.num_rows * group // max(table.nbytes, 1))
    # without Arrow's own copy of the schema (Spark's is there): Catalyst sizes a
    # relation by its files' bytes, and that copy doubled a small file's
    # no dictionary for lists of integers (rid arrays): their values rarely repeat, and
    # Arrow's writer gives up on the dictionary only after building a page of it: half
    # the time of writing an output's rid arrays (TPC-DS q43 at SF 1: 600,000 rids)
    dictionary = [path for f in table.schema for path in _dictionary_leaves(f.name, f.type)]
    with pq.ParquetWriter(
        out, table.schema, store_schema=False, compression=compression, use_dictionary=dictionary
    ) as writer:
        writer.write_table(table, row_group_size=min(rows, 1 << 20))
        writer.add_key_value_metadata(footer)
    return out.getvalue()


def _dictionary_leaves(path: str, kind: pa.DataType) -> list[str]:
    """The Parquet column paths, as Arrow's writer names them, of a field's leaves but
    the elements of lists of integers.

    >>> _dictionary_leaves("s", pa.struct([("a", pa.string()), ("r", pa.list_(pa.int64()))]))
    ['s.a']
    """
    if pa.types.is_struct(kind):
        return [leaf for f in kind for leaf in _dictionary_leaves(f"{path}.{f.name}", f.type)]
    if pa.types.is_map(kind):
        key, value = f"{path}.key_value.key", f"{path}.key_value.value"
        return [*_dictionary_leaves(key, kind.key_type), *_dictionary_leaves(value, kind.item_type)]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        if pa.types.is_integer(kind.value_type):
            return []
        return _dictionary_leaves(f"{path}.list.element", kind.value_type)
    return [path]


def arrow_codec(spark) -> str | None:
    """The codec Spark's Parquet writes would use (``spark.sql.parquet.compression.codec``),
    if Arrow writes it as Spark does (one of ``ARROW_CODECS``); None otherwise."""
    codec = spark.conf.get("spark.sql.parquet.compression.codec", "snappy").lower()
    codec = "none" if codec == "uncompressed" else codec
    return codec if codec in ARROW_CODECS else None


def write_parquet(df: DataFrame, path: str | os.PathLike, small_inputs: bool = False) -> str:
    """``df`` written as Parquet to the new folder ``path``: through Arrow when its rows
    are small (``small_rows``, with ``small_inputs``) and ``path`` is local, else by
    Spark. Returns which wrote it (``"arrow"`` or ``"spark"``)."""
    if "://" not in str(path).removeprefix("file://"):
        table = small_rows(df, small_inputs=small_inputs)
        if table is not None:
            write_table(table, df.schema, path)
            return "arrow"
    bounded_writer(df).parquet(str(path))
    return "spark"


def bounded_writer(df: DataFrame) -> DataFrameWriter:
    """``df.write``, its row groups bounded to about ``ROW_GROUP_BYTES`` (compressed)
    when its rows hold collections (see ``ROW_GROUP_BYTES``)."""
    if not any(isinstance(f.dataType, (ArrayType, MapType)) for f in df.schema.fields):
        return df.write
    return df.write.options(
        **{
            "parquet.page.size.row.check.max": "16",
            "parquet.page.size.row.check.min": "1",
            "parquet.block.size": str(ROW_GROUP_BYTES),
        }
    )


def nullable_type(t: DataType) -> DataType:
    """``t`` with every field, element and value nullable, as Spark reads files.

    >>> nullable_type(ArrayType(LongType(), False)).containsNull
    True
    """
    if isinstance(t, ArrayType):
        return ArrayType(nullable_type(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(t.keyType, nullable_type(t.valueType), True)
    if isinstance(t, StructType):
        return StructType([StructField(f.name, nullable_type(f.dataType), True, f.metadata) for f in t.fields])
    return t


def _kept_exactly(t: DataType) -> bool:
    if isinstance(t, ArrayType):
        return _kept_exactly(t.elementType)
    if isinstance(t, MapType):
        return _kept_exactly(t.keyType) and _kept_exactly(t.valueType)
    if isinstance(t, StructType):
        return all(_kept_exactly(f.dataType) for f in t.fields)
    return isinstance(t, _EXACT)
