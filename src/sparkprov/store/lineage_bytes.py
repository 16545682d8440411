"""What a capture keeps of its lineage, in bytes: its pair table, its shared lineage (a
scalar subquery's, kept once; functions' kept payloads), its witnesses' side relations
and the slot columns of its output. Benchmarks report it; ``sp.choose_keep`` weighs it
against a budget."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql.types import StructType

from .entry import CaptureEntry
from .files import parquet_files
from .format import shared_path
from .parquet import column_chunk_sum


def _data_bytes(path: str) -> int:
    """The bytes of the data files under ``path`` (not Spark's markers or hidden files)."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file() and not f.name.startswith((".", "_")))


def slot_bytes(entry: CaptureEntry) -> int:
    """Bytes the output files spend on slot columns (handles, rids, rid arrays): lineage
    kept with the output rows, read from the Parquet footers' column chunk sizes."""
    schema = StructType.fromJson(json.loads(entry.output.schema))
    slots = set(schema.fieldNames()) - set(entry.output.stored) - {"_sp_rid"}
    return column_chunk_sum(parquet_files(entry.output.path), slots, "total_compressed_size")


def lineage_bytes(entry: CaptureEntry) -> tuple[int, int, int]:
    """(pair table and shared lineage, witnesses' side relations, slot columns)."""
    shared = shared_path(entry.lineage)
    pair_bytes = _data_bytes(entry.lineage.path) + (_data_bytes(shared) if shared else 0)
    sides = entry.witnesses
    witness_bytes = sum(_data_bytes(s["path"]) for s in sides["sides"].values()) if sides else 0
    return pair_bytes, witness_bytes, slot_bytes(entry)


def stored_lineage_bytes(entry: CaptureEntry) -> int:
    """All the bytes capture ``entry`` keeps of its lineage (``lineage_bytes`` summed)."""
    return sum(lineage_bytes(entry))
