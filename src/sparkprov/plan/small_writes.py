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
``plan.written.read_written`` reads it back as it reads those.

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

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, DataFrameWriter
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

from .written import SPARK_SCHEMA, stored_schema

SMALL_BYTES = 10 * 1024 * 1024
SMALL_ROWS = 100_000
# Parquet measures a row group's size first after page.size.row.check.max rows (10,000
# by default): a hundred rows of an aggregate's rid arrays (a million rids each) made
# one 400 MB row group, which a reader holds whole, beyond a 2g driver's heap. Rows
# holding collections are measured after 16 rows, and then as Parquet's estimate says
# (of their compressed size: the size a reader holds).
ROW_GROUP_BYTES = 32 << 20
# nodes whose output may hold more rows than Catalyst's estimate (it keeps their input's)
_UNBOUNDED = re.compile(r"^[\s:+\-!]*(Generate|MapInPandas|MapInArrow|PythonMapInArrow|FlatMapGroupsIn"
                        r"|FlatMapCoGroupsIn)", re.MULTILINE)  # fmt: skip
_EXACT = (BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, StringType, CharType,
          VarcharType, BinaryType, DateType, TimestampType, TimestampNTZType, DecimalType)  # fmt: skip


def small_rows(df: DataFrame, limit: int | None = None) -> pa.Table | None:
    """``df``'s rows as an Arrow table (one Spark job), if they are small by the rules
    above (at most ``limit`` bytes, ``SMALL_BYTES`` by default); None otherwise (nothing
    run, unless Catalyst could not size them: then a prefix of them was)."""
    # estimated on the analyzed plan: optimizing it here would optimize it twice when
    # Spark writes it (the write plans its query anew), seconds for a large plan
    limit = SMALL_BYTES if limit is None else limit
    plan = df._jdf.queryExecution().analyzed()
    if small_plan(plan, df.schema, limit):
        return _collected(df)
    if not all(_kept_exactly(f.dataType) for f in df.schema.fields) or not _driver_data(plan):
        return None
    # Catalyst does not know its size: as many rows as could be small, and one more
    table = _collected(df.limit(SMALL_ROWS + 1))
    return table if table.num_rows <= SMALL_ROWS and table.nbytes <= limit else None


def _collected(df: DataFrame) -> pa.Table:
    # a null struct's fields hold nulls, whatever the schema says, which PySpark's
    # conversion refuses where it says they cannot: collected as nullable
    nullable = StructType([StructField(f.name, _nullable(f.dataType), f.nullable, f.metadata) for f in df.schema])
    return (df if nullable == df.schema else df.to(nullable)).toArrow()


def _driver_data(plan) -> bool:
    """Whether the resolved ``plan`` is an RDD's rows (a ``LogicalRDD``) computed without
    a shuffle from a collection the driver holds: collecting a prefix of it costs
    little, whatever its size."""
    if plan.nodeName() != "LogicalRDD":
        return False
    lineage = plan.rdd().toDebugString().splitlines()  # a shuffle shows as a "+-" branch
    return "+-" not in "".join(lineage[1:]) and "ParallelCollectionRDD" in lineage[-1]


def small_plan(plan, schema: StructType, limit: int) -> bool:
    """Whether the rows of the resolved logical ``plan`` (of ``schema``) are small by
    the rules above: at most ``limit`` bytes."""
    if not all(_kept_exactly(f.dataType) for f in schema.fields):
        return False
    return int(str(plan.stats().sizeInBytes())) <= limit and not _UNBOUNDED.search(plan.treeString())


def write_table(table: pa.Table, schema: StructType, path: str | os.PathLike) -> None:
    """``table`` written as the one part file of the new folder ``path``, Spark's schema
    ``schema`` in its footer; the file appears whole (written under a hidden name,
    then renamed)."""
    folder = Path(str(path).removeprefix("file://").removeprefix("file:"))
    folder.mkdir(parents=True)
    kept = table.replace_schema_metadata({**(table.schema.metadata or {}), SPARK_SCHEMA: stored_schema(schema).json()})
    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    # row groups of at most ROW_GROUP_BYTES in memory (Spark's writes of collections
    # bound their compressed size: these are no larger)
    rows = max(1, table.num_rows * ROW_GROUP_BYTES // max(table.nbytes, 1))
    pq.write_table(kept, folder / f".{name}", row_group_size=min(rows, 1 << 20))
    os.replace(folder / f".{name}", folder / name)


def write_parquet(df: DataFrame, path: str | os.PathLike) -> str:
    """``df`` written as Parquet to the new folder ``path``: through Arrow when its rows
    are small and ``path`` is local, else by Spark. Returns which wrote it (``"arrow"``
    or ``"spark"``)."""
    if "://" not in str(path).removeprefix("file://"):
        table = small_rows(df)
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


def _nullable(t: DataType) -> DataType:
    if isinstance(t, ArrayType):
        return ArrayType(_nullable(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(t.keyType, _nullable(t.valueType), True)
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in t.fields])
    return t


def _kept_exactly(t: DataType) -> bool:
    if isinstance(t, ArrayType):
        return _kept_exactly(t.elementType)
    if isinstance(t, MapType):
        return _kept_exactly(t.keyType) and _kept_exactly(t.valueType)
    if isinstance(t, StructType):
        return all(_kept_exactly(f.dataType) for f in t.fields)
    return isinstance(t, _EXACT)
