"""Lineage kept in the output rows themselves, and the pair table made from it on demand.

When every slot of a capture's output names source rows directly (a rid, or an array
of rids an injected aggregate collected) or refers to a shared side's lineage (a scalar
subquery's, a window partition's: stored once at capture, as ``shared/``), the output
files already hold the whole lineage: Smoke's rid array (1:1 operators) and rid index
(an aggregate's groups), one row per output row, in output order. Capture then writes
no pair table. The first answer that needs one builds it from those columns, sorted by
``out_rid`` as capture would have written it, and renames it into ``lineage/`` for
every later answer: with Spark (``ensure_pairs``) or, when small enough, in this
process (``build_locally``).
The catalog entry's ``lineage.in_output`` holds the output's slots (``[name, kind,
source number]``; a reference has kind ``shared`` and its side's pseudo-source number)
and ``unique``: whether no pair can repeat (else the table is made distinct).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..store import fs
from ..store.catalog import publish_written
from ..store.entry import CaptureEntry
from ..store.format import IN, OUT, RID, Slot, slots_from_json
from ..store.parquet import write_local_pairs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# values of the rid arrays one batch of Spark's vectorized Parquet reader may hold: it
# reserves one contiguous vector for a batch's values (4,096 rows by default), and an
# aggregate's groups of a million rids each would need gigabytes
BATCH_VALUES = 1 << 20
_BATCH = "spark.sql.parquet.columnarReaderBatchSize"


def _pending(entry: CaptureEntry) -> tuple[Path, dict, list[Slot]] | None:
    """``(lineage/ path, lineage.in_output, its slots)``, or None when the table is built."""
    lineage = entry.lineage
    if fs.is_dir(lineage.path):  # in the store (local or not), or built in the cache before
        return None
    path = Path(lineage.path)
    kept = lineage.in_output
    return path, kept, slots_from_json(kept["slots"])


def ensure_pairs(spark: SparkSession, entry: CaptureEntry) -> None:
    """Build ``lineage/`` of capture ``entry`` with Spark, unless it is there already."""
    # Spark's side, imported here: the embedded engine builds tables without it
    from pyspark.sql import functions as F

    from ..plan.written import read_written
    from .lineage import SideGraph, source_pairs
    from .writing import publish_pairs

    pending = _pending(entry)
    if pending is None:
        return
    path, kept, slots = pending
    rows = read_written(spark, entry.output.path).select(F.col(RID).alias(OUT), *[s.name for s in slots])
    graph = SideGraph(sides=[], relation=lambda k: None, source_of=lambda i: i)
    before = spark.conf.get(_BATCH, None)
    spark.conf.set(_BATCH, str(_batch_rows(entry, slots, int(before or 4096))))
    try:
        publish_pairs(spark, source_pairs(rows, slots, graph), path, distinct=not kept["unique"])
    finally:
        if before is None:
            spark.conf.unset(_BATCH)
        else:
            spark.conf.set(_BATCH, before)


def _batch_rows(entry: CaptureEntry, slots: list[Slot], default: int) -> int:
    """Output rows per batch of the vectorized reader, so that a batch holds at most
    ``BATCH_VALUES`` rids (the footers say how many values each row has on average)."""
    import pyarrow.parquet as pq

    from ..store.files import parquet_files
    from ..store.parquet import column_chunk_sum

    files = parquet_files(entry.output.path)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    per_row = column_chunk_sum(files, {s.name for s in slots}, "num_values") / max(1, rows)
    return max(1, min(default, int(BATCH_VALUES // max(1.0, per_row))))


def build_locally(entry: CaptureEntry, within_limit: Callable[[int], None]) -> None:
    """Build ``lineage/`` of capture ``entry`` in this process (pyarrow), unless it is
    there already. ``within_limit(n)`` is called first with an upper bound of the
    pairs (the slot columns' values, from the footers) and raises if that is too many."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..store.files import parquet_files
    from ..store.parquet import column_chunk_sum

    pending = _pending(entry)
    if pending is None:
        return
    path, kept, slots = pending
    names = [s.name for s in slots]
    files = parquet_files(entry.output.path)
    within_limit(column_chunk_sum(files, set(names), "num_values"))
    parts = [pq.read_table(f, columns=[RID, *names]) for f in files]
    table = pa.concat_tables(parts) if parts else None
    by_source: dict[int, list] = defaultdict(list)
    for slot in slots if table is not None and table.num_rows else []:
        rid, col = table.column(RID).combine_chunks(), table.column(slot.name).combine_chunks()
        if slot.kind == "rids":
            outs, ins = pc.take(rid, pc.list_parent_indices(col)), pc.list_flatten(col)
        else:
            # a reference to a shared side: (out_rid, set) under the side's number
            valid = pc.is_valid(col)
            outs, ins = rid.filter(valid), col.filter(valid)
        by_source[slot.ref].append(pa.table({OUT: outs.cast(pa.int64()), IN: ins.cast(pa.int64())}))
    publish_local_pairs(path, by_source, distinct=not kept["unique"])


def publish_local_pairs(path: Path, by_source: dict, distinct: bool) -> None:
    """Write a pair table from this process (``write_local_pairs``), renamed into
    ``path`` whole."""
    publish_written(path, lambda tmp: write_local_pairs(tmp, by_source, distinct))
