"""The lineage graph's triples ``(src, dst, op)``: one per pair of every capture in the
store (an input row of a source to an output row), and those imported from outside.

A node is a row of a dataset, ``(dataset, rid)``. A capture's output is the dataset
``name@version``; a source another capture wrote is that capture's output (its rids
are the written files' rids), so triples of consecutive jobs meet at the same nodes.
Files no capture wrote are one dataset wherever read (``source@<key>``, the key a
fingerprint of the files); any other source (a DataFrame made in the script) belongs
to its capture alone (``name@version/source``). An op is one source of one capture
version (its name, version, source, creation time and operators).

>>> sorted(IMPORT_COLUMNS)
['dst_dataset', 'dst_rid', 'op', 'src_dataset', 'src_rid']
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import CaptureFailed, InvalidArgument
from ..plan.versions import try_cast
from ..query.planner import source_pairs, writer_of
from ..store.catalog import Store
from ..store.entry import CaptureEntry
from ..store.format import IN, OUT
from ..store.links import Links

IMPORT_COLUMNS = {
    "src_dataset": T.StringType(),
    "src_rid": T.LongType(),
    "dst_dataset": T.StringType(),
    "dst_rid": T.LongType(),
    "op": T.StringType(),
}
NAMED = T.StructType([T.StructField(k, v) for k, v in IMPORT_COLUMNS.items()])


@dataclass
class Collected:
    """Every triple named by dataset and op names (``NAMED`` columns), and what was read."""

    triples: DataFrame | None
    ops: dict[str, dict]  # op name -> its metadata
    captures: list[list]  # [name, version] of every capture version read


def capture_version_name(entry: CaptureEntry) -> str:
    return f"{entry.name}@{entry.version}"


def source_dataset(store: Store, entry: CaptureEntry, source: str) -> str:
    """The dataset source ``source`` of capture ``entry`` read (module docstring)."""
    info = entry.sources[source]
    writer = writer_of(store, info)
    if writer is not None:
        return capture_version_name(writer)
    if info.kind == "parquet" and info.original:
        return f"{source}@{Links(store.root).key(info.original)[:12]}"
    return f"{capture_version_name(entry)}/{source}"


def committed(store: Store) -> list[CaptureEntry]:
    """Every capture version the store holds that was made (failed attempts left out)."""
    found = []
    for name in store.names():
        for version in store.versions(name):
            try:
                found.append(store.load(name, version))
            except CaptureFailed:
                continue
    return found


def from_captures(spark: SparkSession, store: Store, entries: list[CaptureEntry]) -> Collected:
    """The triples of ``entries`` (their lineage built first where a capture left it for
    later: ``query.planner.source_pairs``)."""
    parts, ops = [], {}
    for entry in entries:
        out = capture_version_name(entry)
        for source in entry.lineage.sources:
            op = f"{out}:{source}"
            ops[op] = {"capture": entry.name, "version": entry.version, "source": source,
                       "created": entry.created, "operators": list(entry.operators or [])}  # fmt: skip
            pairs = source_pairs(spark, entry, source)
            parts.append(
                pairs.select(
                    F.lit(source_dataset(store, entry, source)).alias("src_dataset"),
                    F.col(IN).alias("src_rid"),
                    F.lit(out).alias("dst_dataset"),
                    F.col(OUT).alias("dst_rid"),
                    F.lit(op).alias("op"),
                )
            )
    triples = None
    for part in parts:
        triples = part if triples is None else triples.unionByName(part)
    return Collected(triples, ops, [[e.name, e.version] for e in entries])


def check_imported(df: DataFrame, where: str) -> DataFrame:
    """``df`` with the import columns, cast to their types; a clear error otherwise."""
    missing = [c for c in IMPORT_COLUMNS if c not in df.columns]
    if missing:
        raise InvalidArgument(
            f"{where} lacks column {missing[0]!r}: imported triples have the columns "
            f"{', '.join(IMPORT_COLUMNS)} (src and dst rows named by dataset and rid, op naming the step)"
        )
    # try_cast: an unreadable rid becomes NULL, which the import refuses by name
    return df.select(*[try_cast(c, t).alias(c) for c, t in IMPORT_COLUMNS.items()])
