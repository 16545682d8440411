"""Sources: naming the relations a query reads and giving their rows stable ids.

Three schemes, all yielding a 64-bit rid ``file_id << 40 | row_index``:

* Parquet files are read in place. ``file_id`` is the file's position in the sorted
  list of the source's files at capture time and ``row_index`` is Parquet's own
  ``_metadata.row_index``, so a row keeps its rid however the scan is split.
* Every other leaf (CSV, JSON, ORC, text, in-memory DataFrames, ``range``) has no
  stable row position, so capture first writes a Parquet snapshot of it into the
  capture and the query reads the snapshot, with rids from the snapshot's files.
* A traced RDD program's ``textFile`` reads text in place: ``file_id`` is the input
  split's number and ``row_index`` the line's number in the split (``sources/text.py``).

A source read from files keeps a fingerprint (path, size, modification time of every
file); traces compare it with the files on disk and raise ``SourceChanged``.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from ..plan.catalyst import Bridge, JPlan
from ..store.format import RID, ROW_BITS  # noqa: F401 - also imported from here
from ..store.source_info import SourceInfo, compare_fingerprint, snapshot_column  # noqa: F401 - also from here


def rid_column(files: list[tuple[str, int, int]]) -> Column:
    """The rid of a row read from ``files`` (needs ``_metadata`` of a Parquet scan)."""
    if len(files) == 1:  # file number 0: the scan reads no other file than the one listed
        return F.col("_metadata.row_index")
    # create_map, not map_from_arrays: the latter missed keys in element_at (Spark 4.3)
    pairs = [x for i, (p, _, _) in enumerate(files) for x in (F.lit(p), F.lit(i).cast("long"))]
    file_id = F.element_at(F.create_map(*pairs), F.col("_metadata.file_path"))
    file_id = F.coalesce(
        file_id,
        F.raise_error(F.concat(F.lit("sparkprov: file not known to the capture: "), F.col("_metadata.file_path"))).cast(
            "long"
        ),
    )
    return F.shiftleft(file_id, ROW_BITS).bitwiseOR(F.col("_metadata.row_index"))


def check_unchanged(bridge: Bridge, info: SourceInfo) -> None:
    """Raise ``SourceChanged`` when the files behind ``info`` differ from capture time."""
    if info.roots:
        compare_fingerprint(info, bridge.list_files(info.roots))


def read_source(bridge: Bridge, info: SourceInfo) -> DataFrame:
    """The source's rows with their ``_sp_rid``, as captured (checks for changes first)."""
    check_unchanged(bridge, info)
    spark: SparkSession = bridge.spark
    schema = StructType.fromJson(json.loads(info.schema))
    # stored as Hadoop spells them (percent-encoded URIs); a path to read is not encoded
    paths = [unquote(p) for p, _, _ in info.files]
    if not paths:
        return spark.createDataFrame([], schema).withColumn(RID, F.lit(None).cast("long"))
    if info.kind == "text":  # each split read again as Hadoop read it
        from .text import ROWS_SCHEMA, split_rows

        splits = spark.sparkContext.parallelize(list(enumerate(info.splits)), max(1, len(info.splits)))
        return spark.createDataFrame(splits.flatMap(split_rows), ROWS_SCHEMA)
    if info.kind == "snapshot":  # stored with positional names; any name survives that
        stored = StructType([StructField(snapshot_column(i), f.dataType) for i, f in enumerate(schema.fields)])
        df = spark.read.schema(stored).parquet(*paths)  # a given schema: no job to read footers
        cols = [F.col(f"`{c}`").alias(f.name) for c, f in zip(df.columns, schema.fields)]
    else:
        reader = spark.read.schema(schema)
        if len(info.roots) == 1 and all(p != info.roots[0] for p, _, _ in info.files):
            reader = reader.option("basePath", unquote(info.roots[0]))  # keeps partition columns
        df = reader.parquet(*paths)
        cols = [F.col(f"`{c}`") for c in df.columns]
    rid = rid_column(info.files)
    if len(info.files) == 1:  # nullable, as the rid of rows from several files and the embedded engine's
        rid = F.coalesce(rid, F.lit(None).cast("long"))
    return df.select(*cols, rid.alias(RID))


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def display_path(roots: list[str]) -> str:
    """A readable source name from file locations."""
    if len(roots) == 1:
        p = roots[0]
        return p[len("file:") :] if p.startswith("file:") else p
    return ",".join(display_path([r]) for r in roots)


def safe_id(name: str) -> str:
    return _SAFE.sub("_", name).strip("_")[:80] or "source"


def leaf_format(bridge: Bridge, leaf: JPlan) -> str:
    fs = bridge.file_relation(leaf)
    if fs is not None:
        return bridge.file_format(fs)
    name = bridge.node_name(leaf)
    return {"Range": "range", "LocalRelation": "memory", "LogicalRDD": "memory"}.get(name, name)


def file_fingerprint(bridge: Bridge, leaf: JPlan) -> tuple[list[str], list[tuple[str, int, int]]]:
    fs = bridge.file_relation(leaf)
    if fs is None:
        return [], []
    return bridge.root_paths(fs), sorted(bridge.files(fs))


def leaf_key(bridge: Bridge, leaf: JPlan) -> Any:
    """Identity of the relation behind a leaf: equal keys mean the same source."""
    fs = bridge.file_relation(leaf)
    if fs is not None:
        return ("files", bridge.file_format(fs), tuple(sorted(bridge.root_paths(fs))))
    return None  # in-memory leaves are matched with sameResult


class NamedLeaf(NamedTuple):
    """A leaf a capture names ``name`` wherever it reads the same relation: its
    ``leaf_key`` (kept, so naming a capture's leaves compares keys, not plans in the
    JVM, where there is one) or, for in-memory data, a plan ``sameResult`` as it."""

    plan: JPlan
    name: str
    key: Any


def named_leaf(bridge: Bridge, leaf: JPlan, name: str) -> NamedLeaf:
    """``leaf`` to be named ``name``, with its key."""
    return NamedLeaf(leaf, name, leaf_key(bridge, leaf))


def same_source(bridge: Bridge, leaf: JPlan, key: Any, named: NamedLeaf) -> bool:
    """Whether ``leaf`` (of ``leaf_key`` ``key``) reads the relation ``named`` names."""
    if key is not None or named.key is not None:
        return key == named.key
    return bridge.same_result(named.plan, leaf)
