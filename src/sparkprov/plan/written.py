"""Reading back Parquet files Spark has just written, without the Spark job that
inferring their schema costs (one job per read, about 70 ms on this machine: a
workflow execution or a capture reads back what it wrote several times).

The schema is the one the writer had (given), or the one Spark keeps in every file's
footer, read on the driver for a local folder; anything else is read as Spark reads it.

>>> import tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> folder = tempfile.TemporaryDirectory()
>>> spark.range(3).selectExpr("id", "'x' AS s").write.parquet(folder.name + "/t")
>>> read_written(spark, folder.name + "/t").columns
['id', 's']
>>> folder.cleanup()
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import CharType, StringType, StructField, StructType, VarcharType

SPARK_SCHEMA = b"org.apache.spark.sql.parquet.row.metadata"  # Spark's own schema in a file's footer


def stored_schema(schema: StructType) -> StructType:
    """``schema`` as Parquet files keep it: CHAR and VARCHAR columns as plain strings."""
    plain = (CharType, VarcharType)
    return StructType(
        [StructField(f.name, StringType() if isinstance(f.dataType, plain) else f.dataType) for f in schema]
    )


def read_written(spark: SparkSession, path: str | os.PathLike, schema: StructType | None = None) -> DataFrame:
    """The Parquet files under ``path`` as a DataFrame; with ``schema`` (the writer's)
    or a local folder of part files, without a job to infer the schema."""
    path = str(path)
    if schema is None:
        schema = _footer_schema(path)
    reader = spark.read if schema is None else spark.read.schema(stored_schema(schema))
    return reader.parquet(path)


def _footer_schema(path: str) -> StructType | None:
    local = path[len("file:") :] if path.startswith("file:") else path
    if "://" in local or not os.path.isdir(local):
        return None
    # a folder partitioned into subfolders has columns no file holds: Spark finds them
    entries = [p for p in Path(local).iterdir() if not p.name.startswith((".", "_"))]
    parts = sorted(p for p in entries if p.name.startswith("part-") and p.is_file())
    if not parts or len(parts) < len(entries):
        return None
    kept = (pq.read_metadata(parts[0]).metadata or {}).get(SPARK_SCHEMA)
    return StructType.fromJson(json.loads(kept)) if kept else None
