"""What an answer needs before it reads a capture's files: lineage completed when the
capture left it for later, the pair table of one source as Spark reads it, and the
captures linked to this one through the datasets they wrote and read (the store's
index of links names them).

One place decides how a capture's lineage is finished (an RDD capture's sides resolved,
lineage kept in the output rows turned into pairs, a lazy capture run again, a deferred
one awaited), so the facade, the command line and later front ends ask it alone.

>>> from sparkprov.store.entry import CaptureEntry, LineageInfo
>>> needs_building(CaptureEntry("c", 1, 1, "", "ab", None, LineageInfo("/s/lineage", {}), {}))
False
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..capture import later, rdd_pairs, row_lineage
from ..capture.lineage import expand_shared
from ..errors import CaptureNotFound, StoreCorrupt
from ..store.catalog import Store
from ..store.entry import CaptureEntry
from ..store.format import IN, OUT, PAIRS_SCHEMA, SHARED_SCHEMA, SRC, shared_path
from ..store.links import dataset_files
from ..store.source_info import SourceInfo


def needs_building(entry: CaptureEntry) -> bool:
    """Whether capture ``entry`` left its pair table to be made by its first answer."""
    stored = entry.lineage
    return bool(stored.rdd or stored.in_output or stored.later)


def ensure_lineage(spark: SparkSession, entry: CaptureEntry) -> None:
    """Make capture ``entry``'s pair table if it is not there yet (nothing otherwise).

    An RDD capture keeps its sides, and a capture whose output rows name their source
    rows keeps them there: their pair tables are made with Spark now. A lazy capture
    runs its query again (only the process that captured it can); a deferred capture's
    background resolution is awaited.
    """
    stored = entry.lineage
    if stored.rdd:
        rdd_pairs.ensure_pairs(spark, entry)
    elif stored.in_output:
        row_lineage.ensure_pairs(spark, entry)
    elif stored.later:
        later.ensure_built(entry)


def source_pairs(spark: SparkSession, entry: CaptureEntry, source: str) -> DataFrame:
    """``(out_rid, in_rid)`` of one source of capture ``entry``, its lineage completed
    first; lineage shared by many output rows (a scalar subquery's) joined in lazily."""
    ensure_lineage(spark, entry)
    stored = entry.lineage
    pairs = spark.read.schema(PAIRS_SCHEMA).parquet(stored.path)
    direct = pairs.where(F.col(SRC) == stored.sources[source]).select(OUT, IN)
    shared = shared_path(stored)
    if not shared:
        return direct
    table = spark.read.schema(SHARED_SCHEMA).parquet(shared)
    return direct.unionByName(expand_shared(pairs, table, stored.sources[source])).distinct()


def writer_of(store: Store, info: SourceInfo) -> CaptureEntry | None:
    """The entry of the capture that wrote exactly the files ``info`` read, if any (the
    store's index of links names the candidates). A damaged candidate matters only when
    no other wrote them: it may have been the writer (``StoreCorrupt``)."""
    if info.kind != "parquet" or not info.original:
        return None
    files = dataset_files(info.original)
    damaged: list[StoreCorrupt] = []
    for entry in _candidates(store, files, damaged, lambda r: r["wrote"], newest=False):
        written = entry.written
        if written and dataset_files(written["files"]) == files:
            return entry  # its own answers check its files
    if damaged:
        raise StoreCorrupt(f"cannot tell which capture wrote source {info.name!r}: {damaged[0]}")
    return None


def readers_of(store: Store, entry: CaptureEntry) -> list[tuple[CaptureEntry, str]]:
    """(entry, source name) for the newest version of every capture that read what
    capture ``entry`` wrote, as that source."""
    written = entry.written
    if not written:
        return []
    files = dataset_files(written["files"])
    found = []
    for reader in _candidates(store, files, None, lambda r: bool(r["read_as"]), newest=True):
        for name, src in reader.sources.items():
            if src.kind == "parquet" and dataset_files(src.original) == files:
                found.append((reader, name))
    return found


def _candidates(store: Store, files: list[tuple], damaged: list | None, wanted, newest: bool):
    """The committed entries that may have written or read ``files`` (``wanted`` of
    their index record), by name, newest version first (``newest``: each name's newest
    only); every entry when the index is not complete. Entries that cannot be read are
    added to ``damaged`` (raised when it is None); failed attempts are skipped."""
    records = store.links_of(files)
    if records is None:  # an index not complete (a store that cannot build it): read them all
        pairs = [(n, v) for n in store.names() for v in reversed(store.versions(n))]
    else:
        pairs = [(r["name"], r["version"]) for r in records if wanted(r)]
    if newest:
        pairs = [(n, v) for n, v in pairs if v == store.latest_version(n)]
    for name, version in pairs:
        try:
            entry = store.load(name, version, failed_ok=True, verify_files=False)
        except CaptureNotFound:  # indexed before a commit that did not happen
            continue
        except StoreCorrupt as exc:
            if damaged is None:
                raise
            damaged.append(exc)
            continue
        if not entry.failed:
            yield entry
