"""The public Python surface: ``LineageSession``, ``Capture`` and ``Source``.

>>> import sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> import tempfile
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"])
>>> cap = session.capture(df.groupBy("k").sum("v"), name="sums")
>>> top = cap.output.where("k = 'a'")
>>> sorted(r.v for r in cap.backward(top, source="dataframe_0").collect())
[1, 2]
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .capture.lineage import IN, OUT, PAIRS_SCHEMA, SHARED_SCHEMA, SRC, expand_shared
from .capture.run import run_capture
from .capture.sources import RID, SourceInfo, read_source
from .plan.catalyst import Bridge
from .query import trace
from .query.trace import RowsArg
from .store.catalog import Store, check_name

DEFAULT_STORE = ".sparkprov"


@dataclass(frozen=True)
class Source:
    """A relation a capture read, and how its rows are identified.

    ``kind`` is ``"parquet"`` (rows read in place; rid = file number and row index)
    or ``"snapshot"`` (a copy kept with the capture; rid = position in the copy).
    """

    name: str
    kind: str
    format: str
    files: int
    table: str | None
    _capture: Capture

    def rows(self) -> DataFrame:
        """All rows of the source with their ``_sp_rid`` (raises ``SourceChanged`` if modified)."""
        return self._capture._source_rows(self.name)

    def __repr__(self) -> str:
        return f"Source({self.name!r}, kind={self.kind!r}, format={self.format!r}, files={self.files})"


class Capture:
    """One stored capture: its output rows and their lineage to every source."""

    def __init__(self, session: LineageSession, entry: dict) -> None:
        self._session = session
        self._entry = entry
        self.name: str = entry["name"]
        self.version: int = entry["version"]
        self._infos = {n: SourceInfo.from_json(d) for n, d in entry["sources"].items()}

    def __repr__(self) -> str:
        return f"Capture({self.name!r}, version={self.version}, sources={list(self._infos)})"

    @property
    def output(self) -> DataFrame:
        """The output rows, in the query's order, plus ``_sp_rid``."""
        return self._output().orderBy(RID)

    def _output(self) -> DataFrame:
        out = self._entry["output"]
        df = self._session.spark.read.parquet(out["path"])
        cols = [F.col(f"`{s}`").alias(d) for s, d in zip(out["stored"], out["columns"])]
        return df.select(*cols, F.col(RID))

    @property
    def sources(self) -> dict[str, Source]:
        """Every source the query read, by name."""
        return {
            n: Source(n, i.kind, i.format, len(i.original) or len(i.files), i.table, self)
            for n, i in self._infos.items()
        }

    def lineage(self, source: str) -> DataFrame:
        """The ``(out_rid, in_rid)`` pairs for one source.

        Lineage shared by many output rows (a scalar subquery's result) is stored once
        and joined in here, lazily: filtering the result by ``out_rid`` or ``in_rid``
        reads only what is needed.
        """
        self._check_source(source)
        stored = self._entry["lineage"]
        spark = self._session.spark
        pairs = spark.read.schema(PAIRS_SCHEMA).parquet(stored["path"])
        direct = pairs.where(F.col(SRC) == stored["sources"][source]).select(OUT, IN)
        if not stored.get("shared"):
            return direct
        shared = spark.read.schema(SHARED_SCHEMA).parquet(stored["shared"])
        return direct.unionByName(expand_shared(pairs, shared, stored["sources"][source])).distinct()

    def backward(self, rows: RowsArg, source: str | None = None) -> dict[str, DataFrame] | DataFrame:
        """Input rows behind ``rows`` of the output.

        Returns ``{source name: DataFrame}`` (each with all the source's columns and
        ``_sp_rid``), or one DataFrame when ``source`` is given.
        """
        if source is not None:
            self._check_source(source)
        out_rids = trace.rid_set(rows, self._output(), f"the output of capture {self.name!r}")
        names = [source] if source is not None else list(self._infos)
        result = {n: trace.backward(self.lineage(n), out_rids, self._source_rows(n)) for n in names}
        return result[source] if source is not None else result

    def forward(self, source: str, rows: RowsArg) -> DataFrame:
        """Output rows (with ``_sp_rid``) that ``rows`` of ``source`` contributed to."""
        self._check_source(source)
        src = self._source_rows(source)
        in_rids = trace.rid_set(rows, src, f"source {source!r}")
        return trace.forward(self.lineage(source), in_rids, self._output())

    def explain(self) -> str:
        """A readable report: one line per operator of the captured plan, with its
        lineage granularity (exact, or coarse and why) and how capture recorded it.

        >>> print(cap.explain().splitlines()[0])  # doctest: +SKIP
        capture 'sums' version 1: 2 operators, all exact
        """
        lines = self._entry.get("explain", [])
        coarse = [g for _, _, g, _ in lines if g != "exact"]
        summary = f"{len(coarse)} coarse" if coarse else "all exact"
        out = [f"capture {self.name!r} version {self.version}: {len(lines)} operators, {summary}"]
        width = max((2 * d + len(op) for d, op, _, _ in lines), default=0)
        width = min(width, 72)
        for depth, op, granularity, strategy in lines:
            label = ("  " * (depth - 1) + op)[:72]
            out.append(f"  {label:<{width}}  {granularity:<6}  {strategy}")
        for s in self.sources.values():
            how = "file number + Parquet row index" if s.kind == "parquet" else "position in a Parquet copy"
            out.append(f"source {s.name}: {s.format}, {s.files} file(s), rid = {how}")
        return "\n".join(out)

    def _check_source(self, source: Any) -> None:
        if source not in self._infos:
            raise ValueError(f"capture {self.name!r} has no source {source!r}; sources: {', '.join(self._infos)}")

    def _source_rows(self, name: str) -> DataFrame:
        return read_source(self._session._bridge, self._infos[name])


class LineageSession:
    """Captures queries on ``spark`` into a store and reopens them.

    ``store`` defaults to ``$SPARKPROV_STORE`` or ``./.sparkprov``.
    """

    def __init__(self, spark: SparkSession, store: str | os.PathLike | None = None) -> None:
        if not isinstance(spark, SparkSession):
            raise ValueError(f"spark must be a SparkSession, not {type(spark).__name__}")
        self.spark = spark
        self._bridge = Bridge(spark)
        self.store = Store(store or os.environ.get("SPARKPROV_STORE") or DEFAULT_STORE)
        self._named: list[tuple[Any, str]] = []

    def source(self, df: DataFrame, name: str) -> DataFrame:
        """Name the relation ``df`` reads; captures then call it ``name``. Returns ``df``."""
        if not isinstance(df, DataFrame):
            raise ValueError(f"df must be a DataFrame, not {type(df).__name__}")
        check_name(name)
        plan = self._bridge.analyzed(df)
        leaves = _leaves(self._bridge, plan)
        if len(leaves) != 1:
            raise ValueError(f"session.source() needs a DataFrame reading one relation; this one reads {len(leaves)}")
        self._named = [(p, n) for p, n in self._named if n != name]
        self._named.append((leaves[0], name))
        return df

    def capture(self, df: DataFrame, name: str) -> Capture:
        """Run ``df`` once with capture; store its output and lineage under ``name``."""
        if not isinstance(df, DataFrame):
            raise ValueError(f"df must be a DataFrame, not {type(df).__name__}")
        check_name(name)
        return Capture(self, self._capture(df, name))

    def _capture(self, df: DataFrame, name: str, by_occurrence: bool = False) -> dict:
        return run_capture(self._bridge, self.store, df, name, self._named, by_occurrence)

    def load(self, name: str, version: int | None = None) -> Capture:
        """Reopen a stored capture (the newest version unless ``version`` is given)."""
        return Capture(self, self.store.load(name, version))

    def captures(self) -> list[str]:
        """Names of the captures in the store."""
        return self.store.names()


def _leaves(bridge: Bridge, plan: Any) -> list:
    kids = bridge.children(plan)
    if not kids:
        return [plan]
    return [leaf for k in kids for leaf in _leaves(bridge, k)]
