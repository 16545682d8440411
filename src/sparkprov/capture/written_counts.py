"""The check that the files written for the user hold the rows a capture stored: the
rows of each written file against the stored rows whose rids name it, counted from
the Parquet footers when the files are local, else by one Spark job.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import CaptureFailed, EmbeddedUnsupported
from ..plan.written import read_written
from ..sources.identity import RID, ROW_BITS
from ..store.files import parquet_files
from ..store.layout import local_path

PART = re.compile(r"^part-(\d+)-")  # a part file's partition number, as Spark names it


def check_row_counts(spark, reread: DataFrame, output_path: str, paths: list[str], number: dict, by_rid: bool) -> None:
    """Raises ``CaptureFailed`` unless file ``number[p]`` of ``paths`` holds as many
    rows as the stored rows of partition ``p`` (``by_rid``: the stored rows are one
    file, counted by the file their rids name)."""
    if footer_counts_match(output_path, paths, number, by_rid):
        return
    # files Python cannot read (another file system): both counts in one Spark job
    files = reread.groupBy(F.col("_metadata.file_path").alias("file"), F.lit(None).cast("long").alias("number"))
    stored = read_written(spark, output_path)
    numbers = stored.groupBy(F.lit(None).cast("string").alias("file"), F.shiftright(RID, ROW_BITS).alias("number"))
    counts = files.count().unionByName(numbers.count()).collect()
    by_file = {r.file: r["count"] for r in counts if r.file is not None}
    by_number = [(r.number, r["count"]) for r in counts if r.file is None]
    if by_file != {paths[n]: count for n, count in by_number if n is not None and n < len(paths)}:
        raise _not_kept()


def _not_kept() -> CaptureFailed:
    return CaptureFailed("sparkprov: the written files do not hold the rows capture stored; the capture is not kept")


def footer_counts_match(output_path: str, paths: list[str], number: dict[int, int], by_rid: bool = False) -> bool:
    """Whether the written files are local, their rows counted from their Parquet
    footers (no Spark job); raises when a count differs. The stored file of partition
    ``p`` holds the rows whose rid names file ``number[p]``, so the two files' counts
    must be equal; ``by_rid``: the stored rows are in one file (written through
    Arrow), counted by the file their rids name."""
    import pyarrow.parquet as pq

    try:
        local = [local_path(p) for p in paths]
    except EmbeddedUnsupported:
        return False
    stored: dict[int, int] = {}  # file number -> rows
    if by_rid:
        rids = pq.read_table(parquet_files(output_path), columns=[RID]).column(RID).to_numpy()
        numbers, counts = np.unique(rids >> ROW_BITS, return_counts=True)
        stored = dict(zip(numbers.tolist(), counts.tolist()))
    else:
        for f in parquet_files(output_path):
            m = PART.match(Path(f).name)
            rows = pq.read_metadata(f).num_rows
            file_no = number.get(int(m.group(1))) if m is not None else None
            if file_no is None or (rows and file_no in stored):
                raise _not_kept()
            if rows:
                stored[file_no] = rows
    written = {i: pq.read_metadata(local[i]).num_rows for i in number.values()}
    if stored != {i: rows for i, rows in written.items() if rows}:
        raise _not_kept()
    return True
