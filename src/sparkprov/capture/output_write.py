"""The output of a capture written for the user (Parquet files or a table) as well as
for the store, each row's rid in the store's copy the rid a later capture reading the
user's files gives it, and the output files' schema.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> stored_output_schema(spark.range(1)).fieldNames()
['id', '_sp_rid']
"""

from __future__ import annotations

import logging
import shutil
import uuid
from concurrent.futures import wait
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ..errors import CaptureFailed, EmbeddedUnsupported
from ..plan.catalyst import Bridge, JPlan
from ..plan.small_writes import arrow_codec, small_rows, write_parquet, write_table
from ..plan.threads import kept_pool
from ..plan.versions import arrow_dataframe
from ..plan.written import read_written, stored_schema
from ..sources.identity import RID, ROW_BITS
from ..store.layout import local_path
from .written_counts import PART, check_row_counts

log = logging.getLogger("sparkprov")


@dataclass(frozen=True)
class Write:
    """Where a capture also writes its output for the user: Parquet files or a table."""

    path: str | None = None
    table: str | None = None
    mode: str = "errorifexists"
    owned: bool = False  # a folder inside the store (a workflow's dataset, a checkpoint): its files are sparkprov's


def stored_output_schema(staged: DataFrame) -> StructType:
    """The output files' schema (kept in the entry as JSON, so reading them back needs no job to infer it)."""
    return StructType([*stored_schema(staged.schema).fields, StructField(RID, LongType())])


_ROW_MASK = (1 << 33) - 1  # monotonically_increasing_id: partition << 33 | position


def write_for_user(bridge: Bridge, staged: DataFrame, display: list[str], write: Write, output_path: str) -> dict:
    """Write the output rows as the user asked, and store them with ``_sp_rid`` equal to
    each row's rid in the written files (file number << 40 | row index), the rid a
    later capture reading those files gives it.

    The rows are computed once (a checkpoint, which also observes the partitions that
    hold rows), then written twice at once from the same partitions: Spark writes
    partition ``p`` as file ``part-p...`` in row order, and no file for an empty one
    but partition 0, so the files are those partitions in order, and
    ``monotonically_increasing_id`` (``p << 33 | position``) names the file and row.
    The files written are checked against that (the store's copy is written again if
    Spark numbered them otherwise), and their row counts afterwards; a mismatch fails
    the capture.

    Small rows (``plan.small_writes``) are collected once instead, and both copies
    written from them, each one file: the rid of a row is then its position. Into a
    new local folder both are written on the driver (a Spark write costs about 150 ms
    however few the rows); elsewhere (a table, a folder that exists, another file
    system, a codec Arrow lacks) Spark writes the user's copy.
    """
    rows = small_rows(staged)
    codec = arrow_codec(bridge.spark) if rows is not None and write.table is None else None
    root = bridge.qualified(write.path) if codec is not None else None
    folder = _new_local_folder(root) if root is not None else None
    if folder is not None:
        # the user's copy as Spark writes it: one part file, Spark's schema in its
        # footer, its codec, and (not in the store's own folders) the _SUCCESS marker
        write_table(_user_rows(rows, display), _user_schema(staged, display), folder, compression=codec)
        if not write.owned:
            (Path(folder) / "_SUCCESS").touch()
        _write_rows(bridge.spark, _with_positions(rows), stored_output_schema(staged), output_path)
        files = bridge.list_files([root])  # as reading the folder would report them
        return {"path": write.path, "table": None, "roots": [root], "files": sorted(files)}
    if rows is not None:
        return _written_from_rows(bridge, rows, staged, display, write, output_path)
    kept, with_rows = _checkpointed(staged)
    spark = bridge.spark
    try:
        user = kept.select(*[F.col(f"`{c}`").alias(d) for c, d in zip(kept.columns, display)])
        # Spark writes a file per partition with rows, and one for partition 0 always
        expected = {p: i for i, p in enumerate(sorted({0, *with_rows}))}
        # the two writes at once: on small outputs most of a write's time is the driver's
        stored = beside().submit(write_parquet, kept.withColumn(RID, _file_rid(expected)), output_path)
        try:
            reread = _saved(spark, user, write)
        finally:
            wait([stored])
        how = stored.result()
        fs, files, number = _listed(bridge, reread)
        if with_rows and number != expected:  # Spark wrote other files than expected: the rids again
            log.info("sparkprov: Spark wrote %d files for %d partitions with rows", len(number), len(with_rows))
            shutil.rmtree(output_path)
            how = write_parquet(kept.withColumn(RID, _file_rid(number)), output_path)
        check_row_counts(spark, reread, output_path, [p for p, _, _ in files], number, how == "arrow")
        return {"path": write.path, "table": write.table, "roots": bridge.root_paths(fs), "files": files}
    finally:
        kept.unpersist()


def beside():
    # threads kept from earlier captures (plan/threads.py) for the writes a capture
    # runs beside its query; one per capture at a time is enough, a few captures at once
    return kept_pool("beside", 8)


def _written_from_rows(
    bridge: Bridge, rows: pa.Table, staged: DataFrame, display: list[str], write: Write, output_path: str
) -> dict:
    """Small rows, collected once, written for the user by Spark as one partition (so
    one file, numbered 0, holding them in order) and for the store beside it: a row's
    rid is its position. Neither write runs the query again, and no checkpoint is
    kept (a checkpoint, then two writes of it, cost about 250 ms however few the rows)."""
    spark = bridge.spark
    user = arrow_dataframe(spark, _user_rows(rows, display), _user_schema(staged, display))
    stored = beside().submit(_write_rows, spark, _with_positions(rows), stored_output_schema(staged), output_path)
    try:
        reread = _saved(spark, user.coalesce(1), write)
    finally:
        wait([stored])
    stored.result()
    fs, files, number = _listed(bridge, reread)
    if number != {0: 0}:
        raise CaptureFailed(
            f"sparkprov: Spark wrote {len(files)} files for one partition ({', '.join(p for p, _, _ in files)}); "
            "the written files are untraceable"
        )
    check_row_counts(spark, reread, output_path, [p for p, _, _ in files], number, True)
    return {"path": write.path, "table": write.table, "roots": bridge.root_paths(fs), "files": files}


def _new_local_folder(root: str) -> str | None:
    """The local path of the folder Spark names ``root`` (a qualified URI) if it is on
    this machine's file system and does not exist yet."""
    try:
        folder = local_path(root)
    except EmbeddedUnsupported:  # another file system (a path without a scheme may be on HDFS)
        return None
    return None if Path(folder).exists() else folder


def _user_rows(rows: pa.Table, display: list[str]) -> pa.Table:
    return rows.select(range(len(display))).rename_columns(display)


def _user_schema(staged: DataFrame, display: list[str]) -> StructType:
    return StructType([StructField(d, f.dataType, f.nullable) for f, d in zip(staged.schema.fields, display)])


def _with_positions(rows: pa.Table) -> pa.Table:
    return rows.append_column(RID, pa.array(np.arange(rows.num_rows, dtype=np.int64)))


def _write_rows(spark, rows: pa.Table, schema: StructType, path: str) -> None:
    try:
        local = local_path(path)
    except EmbeddedUnsupported:  # a store on another file system: Spark writes it
        arrow_dataframe(spark, rows, schema).coalesce(1).write.parquet(path)
        return
    write_table(rows, schema, local)


def _saved(spark, user: DataFrame, write: Write) -> DataFrame:
    """``user`` written where ``write`` says, and read back."""
    writer = user.write.mode(write.mode).format("parquet").option("maxRecordsPerFile", 0)
    if write.table:
        writer.saveAsTable(write.table)
        return spark.table(write.table)
    writer.save(write.path)
    return read_written(spark, write.path, user.schema)


def _listed(bridge: Bridge, reread: DataFrame) -> tuple[JPlan, list, dict[int, int]]:
    """The file relation of the files written for the user, read back; its files
    (sorted: their numbers) and their numbers by the partition each was written from."""
    fs = _file_relation(bridge, reread)
    files = sorted(bridge.files(fs))
    return fs, files, _numbered(files)


def _numbered(files: list) -> dict[int, int]:
    """The written files' numbers by the partition each was written from (its name's)."""
    number: dict[int, int] = {}
    for i, (path, _, _) in enumerate(files):
        m = PART.match(path.rsplit("/", 1)[-1])
        if m is None or int(m.group(1)) in number:
            raise CaptureFailed(f"sparkprov: cannot tell which rows {path} holds; the written files are untraceable")
        number[int(m.group(1))] = i
    return number


def _file_relation(bridge: Bridge, written: DataFrame) -> JPlan:
    leaf = bridge.analyzed(written)
    while bridge.children(leaf):  # a table reads as SubqueryAlias over the relation
        (leaf,) = bridge.children(leaf)
    return bridge.file_relation(leaf)


def _checkpointed(staged: DataFrame) -> tuple[DataFrame, list[int]]:
    """``staged`` computed once and kept, and the numbers of its partitions that hold
    rows (observed by the job that computes it, sorted)."""
    from pyspark.sql import Observation

    seen = Observation(f"sparkprov_partitions_{uuid.uuid4().hex}")
    part = "__sp_partition"
    # as one string: the Observations of Spark 4.0 and 3.5 hand an array to Python as a
    # JVM object
    numbers = F.array_join(F.collect_set(F.col(part).cast("string")), ",")
    observed = staged.withColumn(part, F.spark_partition_id()).observe(seen, numbers.alias("p"))
    kept = observed.drop(part).localCheckpoint(eager=True)
    return kept, sorted(int(p) for p in (seen.get["p"] or "").split(",") if p)


def _file_rid(number: dict[int, int]):
    """The rid of each row in the files written from its partition (``number``:
    partition -> file number)."""
    tmp = F.monotonically_increasing_id()
    pairs = [x for p, i in number.items() for x in (F.lit(p), F.lit(i).cast("long"))]
    file_no = F.element_at(F.create_map(*pairs), F.shiftright(tmp, 33)) if pairs else F.lit(None).cast("long")
    return F.shiftleft(file_no, ROW_BITS).bitwiseOR(tmp.bitwiseAND(F.lit(_ROW_MASK)))
