"""How every answer about one capture is made: the planner between the facade and the
engines. A trace is one descent: the facade (``api``) checks the user's arguments and
asks a ``Planner``; the planner completes lineage the capture left for later, picks the
engine (embedded in this process, or Spark), follows the links to the captures that
wrote this one's sources or read its output, and the engines read the store's files.

``ensure_lineage`` is the one place that decides how a capture's lineage is finished
(an RDD capture's sides resolved, lineage kept in the output rows turned into pairs, a
lazy capture run again, a deferred one awaited); ``writer_of`` and ``readers_of`` ask
the store's index of links which captures wrote or read a dataset.

>>> from sparkprov.store.entry import CaptureEntry, LineageInfo
>>> needs_building(CaptureEntry("c", 1, 1, "", "ab", None, LineageInfo("/s/lineage", {}), {}))
False
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from pyspark.sql.utils import AnalysisException

from ..capture import later, rdd_pairs, row_lineage
from ..capture.lineage import expand_shared, expand_shared_forward
from ..capture.restricted import no_such_source, refuse_forward, warn_restricted
from ..errors import CaptureNotFound, InvalidArgument, StoreCorrupt
from ..plan.catalyst import Bridge, quiet_analysis
from ..plan.small_writes import nullable_type
from ..sources.identity import RID, read_source
from ..store.catalog import Store
from ..store.entry import CaptureEntry
from ..store.format import GRP, IN, OUT, PAIRS_SCHEMA, SHARED_SCHEMA, SRC, shared_path
from ..store.links import dataset_files
from ..store.source_info import SourceInfo
from . import drill_down, engines, partitioned, provenance, trace
from .embedded import EmbeddedEngine
from .payload_sets import payload_sets
from .trace import RowsArg


def needs_building(entry: CaptureEntry) -> bool:
    """Whether capture ``entry`` left its pair table to be made by its first answer."""
    stored = entry.lineage
    return bool(stored.rdd or stored.in_output or stored.later)


def ensure_lineage(spark: SparkSession, entry: CaptureEntry) -> None:
    """Make capture ``entry``'s pair table if it is not there yet (nothing otherwise).

    An RDD capture keeps its sides, and a capture whose output rows name their source
    rows keeps them there: their pair tables are made with Spark now. A lazy capture
    runs its query again (only the process that captured it can); a deferred capture's
    background resolution is awaited; one deferred with witnesses reads its pairs from
    them, in this process.
    """
    stored = entry.lineage
    if stored.rdd:
        rdd_pairs.ensure_pairs(spark, entry)
    elif stored.in_output:
        row_lineage.ensure_pairs(spark, entry)
    elif stored.later == "witnesses":
        provenance.write_pairs(entry)
    elif stored.later:
        later.ensure_built(entry)


def source_pairs(
    spark: SparkSession,
    entry: CaptureEntry,
    source: str,
    outs: trace.RidSet | None = None,
    ins: trace.RidSet | None = None,
) -> DataFrame:
    """``(out_rid, in_rid)`` of one source of capture ``entry``, its lineage completed
    first; lineage shared by many output rows (a scalar subquery's, a window
    partition's, a window's blocks) joined in lazily. ``outs`` or ``ins``: only the
    pairs of those output or source rows (the shared lineage is then followed from
    them, not expanded for every row)."""
    ensure_lineage(spark, entry)
    stored = entry.lineage
    pairs = spark.read.schema(PAIRS_SCHEMA).parquet(stored.path)
    if outs is not None:
        pairs = trace.restrict(pairs, OUT, outs)
    number = stored.sources[source]
    direct = pairs.where(F.col(SRC) == number).select(OUT, IN)
    if ins is not None:
        direct = trace.restrict(direct, IN, ins)
    shared = shared_path(stored)
    if not shared:
        return direct
    table = spark.read.schema(SHARED_SCHEMA).parquet(shared)
    # files written before sides had many sets have no set column: all are set 0
    table = table.withColumn(GRP, F.coalesce(F.col(GRP), F.lit(0).cast("long")))
    made = payload_sets(spark, shared, f"capture {entry.name!r}", table, pairs, number, outs, ins)
    if made is not None:  # sets made by functions' map_p from their kept payloads, once per trace
        table = table.unionByName(made)
    if ins is not None:
        held = trace.restrict(table.where(F.col(SRC) == number), IN, ins)
        return direct.unionByName(expand_shared_forward(pairs, table, held)).distinct()
    return direct.unionByName(expand_shared(pairs, table, number, now=outs is not None)).distinct()


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


class Planner:
    """Every answer about capture ``entry``: its rows, its pairs, traces on the engine
    ``auto`` picks, and the captures linked to it. Arguments are the facade's to check;
    what the planner is given is taken as valid.

    >>> plan = Planner(session.spark, session._bridge, session.store, session.store.load("sums"))  # doctest: +SKIP
    >>> plan.backward("k = 'a'", list(plan.infos), "auto")  # doctest: +SKIP
    """

    def __init__(self, spark: SparkSession, bridge: Bridge, store: Store, entry: CaptureEntry) -> None:
        self.spark, self.bridge, self.store, self.entry = spark, bridge, store, entry
        self.name, self.version = entry.name, entry.version
        self.infos: dict[str, SourceInfo] = entry.sources
        self._engine: EmbeddedEngine | None = None

    # what an answer reads ------------------------------------------------------------

    def trusted(self) -> None:
        """Check the files the capture wrote (``StoreCorrupt`` names one missing, resized
        or stray): a missing pair file would otherwise read as no lineage."""
        self.store.verify(self.entry)

    def check_source(self, source: Any) -> None:
        if not isinstance(source, str) or source not in self.infos:
            raise no_such_source(self.entry, source)

    def output(self, ordered: bool = False) -> DataFrame:
        """The output rows with ``_sp_rid``; ``ordered``: in the query's order."""
        out = self.entry.output
        # the schema it keeps (no job to read footers), every field nullable as Spark reads files
        schema = nullable_type(StructType.fromJson(json.loads(out.schema)))
        few = engines.output_here(out)
        if few is not None:
            # in rid order already: only an ORDER BY the capture kept needs a sort (a job)
            df = engines.local_dataframe(self.spark, few.sort_by(RID), schema)
            ordered = ordered and bool(out.order)
        else:
            df = self.spark.read.schema(schema).parquet(out.path)
        if ordered:
            # a top-level ORDER BY the capture kept rather than applied (rules/rows.py);
            # rows equal on it, and every row of an unordered query, in rid order
            keys = [_sort_key(F.col(f"`{out.stored[i]}`"), asc, first) for i, asc, first in out.order or []]
            df = df.orderBy(*keys, RID)
        cols = [F.col(f"`{s}`").alias(d) for s, d in zip(out.stored, out.columns)]
        return df.select(*cols, F.col(RID))

    def source_rows(self, name: str) -> DataFrame:
        """Every row of source ``name`` with its ``_sp_rid`` (``SourceChanged`` if modified)."""
        return read_source(self.bridge, self.infos[name])

    def pairs(self, source: str, outs: trace.RidSet | None = None, ins: trace.RidSet | None = None) -> DataFrame:
        """``(out_rid, in_rid)`` of ``source``, the lineage completed first; ``outs`` or
        ``ins``: only those of these output or source rows."""
        return source_pairs(self.spark, self.entry, source, outs, ins)

    def ensure_lineage(self) -> None:
        ensure_lineage(self.spark, self.entry)

    def embedded(self) -> EmbeddedEngine:
        """The embedded engine over this capture (made once)."""
        if self._engine is None:
            self._engine = EmbeddedEngine(self.entry)
        return self._engine

    def output_rids(self, rows: RowsArg) -> trace.RidSet:
        return trace.rid_set(rows, self.output(), f"the output of capture {self.name!r}")

    # traces --------------------------------------------------------------------------

    def backward(self, rows: RowsArg, names: list[str], engine: str, end_to_end: bool = False) -> dict[str, DataFrame]:
        """``{source: rows behind rows of the output}`` for ``names``; ``end_to_end``: every
        source, a source an earlier capture wrote traced on through it (``writer/source``)."""
        local = engines.embedded_or_none(engine, lambda: self._embedded_backward(rows, names, end_to_end=end_to_end))
        if local is not None:
            return local
        out_rids = self.output_rids(rows)
        names = list(self.infos) if end_to_end else names
        found = {n: trace.backward(self.pairs(n, outs=out_rids), out_rids, self.source_rows(n)) for n in names}
        return self._through_writers(found) if end_to_end else found

    def backward_where(self, rows: RowsArg, source: str, where: str, engine: str) -> DataFrame:
        """The rows of ``source`` satisfying ``where`` behind rows of the output: on Spark
        (unless ``engine`` is embedded), reading only the partitions of the lineage the
        predicate keeps when the workload partitioned it by the column it reads."""
        if engine == "embedded":  # "auto" takes Spark: it reads only the partitions and columns it needs
            return self._embedded_backward(rows, [source], where)[source]
        try:
            with quiet_analysis():
                kept = self.source_rows(source).where(where)
                kept.schema  # noqa: B018 - resolves the predicate now, to fail early
        except AnalysisException as exc:
            raise InvalidArgument(f"cannot evaluate predicate {where!r} on source {source!r}: {exc}") from None
        out_rids = self.output_rids(rows)
        pairs = None
        if partitioned.column(self.entry, source) is not None:
            pairs = partitioned.pairs_where(self.spark, self.partitioned(source), where)
        if pairs is None:  # not partitioned, or by another column: every pair is read
            pairs = self.pairs(source, outs=out_rids)
        return trace.backward(pairs, out_rids, kept)

    def forward(
        self, source: str, rows: RowsArg, engine: str, end_to_end: bool = False
    ) -> DataFrame | dict[str, DataFrame]:
        """Output rows ``rows`` of ``source`` contributed to; ``end_to_end``: ``{capture:
        its output rows}`` for this capture and every later one that read what it wrote."""
        refuse_forward(self.entry, source)
        local = engines.embedded_or_none(engine, lambda: self._embedded_forward(source, rows, end_to_end))
        if local is not None:
            return local
        in_rids = trace.rid_set(rows, self.source_rows(source), f"source {source!r}")
        found = trace.forward(self.pairs(source, ins=in_rids), in_rids, self.output())
        if not end_to_end:
            return found
        result = {self.name: found}
        for reader, read_as in self.readers():
            reader.trusted()
            for name, reached in reader.forward(read_as, found.select(RID), "spark", end_to_end=True).items():
                # a capture reached along two paths (a diamond): the rows of both
                result[name] = result[name].unionByName(reached).dropDuplicates([RID]) if name in result else reached
        return result

    def _embedded_backward(
        self, rows: RowsArg, names: list[str], where: str | None = None, end_to_end: bool = False
    ) -> dict[str, DataFrame]:
        engine = self.embedded()
        outs = engines.rids_of(engine, rows, engine.output_rids)
        if end_to_end:
            found = self._sources_behind(outs)
        else:
            found = {n: (self, n, engine.backward_ids(outs, n, where)) for n in names}
        return {key: planner._source_rows_of(n, ids) for key, (planner, n, ids) in found.items()}

    def _sources_behind(self, outs: np.ndarray) -> dict[str, tuple[Planner, str, np.ndarray]]:
        """``{key: (planner, source, rids)}`` behind output rids ``outs``, found in this
        process: a source an earlier capture wrote traced on through it (``writer/source``),
        as ``_through_writers`` does on Spark."""
        engine = self.embedded()
        found = {}
        for name in self.infos:
            ids = engine.backward_ids(outs, name)
            writer = self.writer_of(name)
            if writer is None:
                found[name] = (self, name, ids)
                continue
            writer.trusted()
            warn_restricted(writer.entry, list(writer.infos))
            # the rows' rids in the written files are the writer's output rids
            for inner, behind in writer._sources_behind(ids).items():
                found[f"{writer.name}/{inner}"] = behind
        return found

    def _source_rows_of(self, source: str, ids: np.ndarray) -> DataFrame:
        if len(ids) > engines.ROWS_LIMIT:
            return engines.rows_by_rid(self.spark, self.source_rows(source), ids)
        schema = engines.source_schema(self.infos[source].schema)
        return engines.local_dataframe(self.spark, self.embedded().source_rows(source, ids), schema)

    def _embedded_forward(self, source: str, rows: RowsArg, end_to_end: bool = False) -> DataFrame | dict:
        engine = self.embedded()
        ins = engines.rids_of(engine, rows, lambda p: engine.source_rids(source, p))
        outs = engine.forward_ids(source, ins)
        if not end_to_end:
            return self._output_rows_of(outs)
        reached = {self.name: (self, outs)}
        self._readers_reached(outs, reached)
        return {name: planner._output_rows_of(found) for name, (planner, found) in reached.items()}

    def _readers_reached(self, outs: np.ndarray, reached: dict[str, tuple[Planner, np.ndarray]]) -> None:
        """Add to ``reached`` the output rids of every later capture that read output
        rows ``outs`` of this one, found in this process; a capture reached along two
        paths (a diamond) keeps the rows of both, as ``forward`` does on Spark."""
        for reader, read_as in self.readers():
            reader.trusted()
            found = reader.embedded().forward_ids(read_as, outs)
            if reader.name in reached:
                found = np.union1d(reached[reader.name][1], found)
            reached[reader.name] = (reader, found)
            reader._readers_reached(found, reached)

    def _output_rows_of(self, outs: np.ndarray) -> DataFrame:
        if len(outs) > engines.ROWS_LIMIT:
            return engines.rows_by_rid(self.spark, self.output(), outs)
        return engines.local_dataframe(
            self.spark, self.embedded().output_rows(outs), engines.output_schema(self.entry.output)
        )

    # tables a workload keeps beside the lineage --------------------------------------

    def partitioned(self, source: str) -> Path:
        """The partitioned pairs of ``source`` (built now if they are not there yet)."""
        column = partitioned.column(self.entry, source)
        return self._kept(source, partitioned.table_path(self.entry, source), partitioned.build, column)

    def drill_table(self, source: str, group_by: Any) -> Path:
        """The drill-down table of ``source`` (built now if it is not there yet)."""
        return self._kept(source, drill_down.table_path(self.entry, source), drill_down.build, group_by)

    def _kept(self, source: str, path: Path, build: Callable[..., None], spec: Any) -> Path:
        # made by build(pairs, source rows, spec, path) unless there: at capture, or for
        # a lazy capture with its lineage on first use
        if not path.is_dir():
            self.trusted()
            build(self.pairs(source), self.source_rows(source), spec, path)
        return path

    # links between captures ----------------------------------------------------------

    def writer_of(self, source: str) -> Planner | None:
        """The planner of the capture that wrote exactly the files ``source`` read, if any."""
        entry = writer_of(self.store, self.infos[source])
        return self._other(entry) if entry is not None else None

    def readers(self) -> list[tuple[Planner, str]]:
        """(planner, source name) of every capture that read what this one wrote."""
        return [(self._other(entry), name) for entry, name in readers_of(self.store, self.entry)]

    def _other(self, entry: CaptureEntry) -> Planner:
        return Planner(self.spark, self.bridge, self.store, entry)

    def _through_writers(self, traced: dict[str, DataFrame]) -> dict[str, DataFrame]:
        out = {}
        for name, rows in traced.items():
            writer = self.writer_of(name)
            if writer is None:
                out[name] = rows
                continue
            writer.trusted()
            warn_restricted(writer.entry, list(writer.infos))
            # the rows' rids in the written files are the writer's output rids
            for inner, df in writer.backward(rows.select(RID), [], "spark", end_to_end=True).items():
                out[f"{writer.name}/{inner}"] = df
        return out


def _sort_key(col: Column, ascending: bool, nulls_first: bool) -> Column:
    if ascending:
        return col.asc_nulls_first() if nulls_first else col.asc_nulls_last()
    return col.desc_nulls_first() if nulls_first else col.desc_nulls_last()
