"""``session.graph()``: the store's lineage graph, built on Spark (a small one in this
process) and queried in this process (``LineageGraph`` shows it at work)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from ..api.session import LineageSession
from ..errors import InvalidArgument
from ..store.layout import StoreFolders
from . import build as building
from . import end_to_end
from . import update as updating
from .queries import GraphNotBuilt, StoredGraph, Trace
from .triples import capture_version_name, check_imported, committed


def stale_versions(store, meta: dict) -> list[str]:
    """The capture versions of ``store`` made or removed since the build ``meta``
    describes (``name@version``)."""
    built = {f"{n}@{v}" for n, v in meta["captures"]}
    now = {capture_version_name(e) for e in committed(store)}
    return sorted(built ^ now)


def graph_status(store) -> dict:
    """The current build of ``store``'s lineage graph (``StoredGraph.stats`` and the
    stale capture versions), or ``{"built": False}``; read from the store's files."""
    try:
        graph = StoredGraph(StoreFolders(store.root).graph)
    except GraphNotBuilt:
        return {"built": False}
    return {"built": True, **graph.stats(), "stale": stale_versions(store, graph.meta)}


class LineageGraph:
    r"""The lineage graph of ``session``'s store: ``build()``, ``update()``,
    ``backward()``, ``forward()``, ``stats()``, ``import_triples()``.

    >>> import pathlib, tempfile, sparkprov as sp
    >>> from pyspark.sql import SparkSession
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> header = "src_dataset,src_rid,dst_dataset,dst_rid,op"
    >>> _ = (folder / "day1.csv").write_text(f"{header}\nraw,1,clean,10,filter\nclean,10,report,100,sum\n")
    >>> g = sp.LineageSession(SparkSession.builder.getOrCreate(), store=folder / "store").graph()
    >>> g.import_triples(folder / "day1.csv")
    2
    >>> g.build(progress=lambda text: None)["components"]
    1
    >>> g.backward("report", 100).rows().to_pylist()
    [{'dataset': 'clean', 'rid': 10}, {'dataset': 'raw', 'rid': 1}]
    >>> _ = (folder / "day2.csv").write_text(f"{header}\nraw,2,clean,10,filter\n")
    >>> g.import_triples(folder / "day2.csv")
    1
    >>> g.update(progress=lambda text: None)["added"]
    {'triples': 1, 'nodes': 1, 'components_merged': 0}
    >>> g.backward("report", 100, method="csprov").rows().column("rid").to_pylist()
    [10, 1, 2]
    """

    def __init__(self, session: LineageSession) -> None:
        self._session = session
        self._folders = StoreFolders(session.store.root).graph
        self._stored: StoredGraph | None = None

    def build(
        self,
        buckets: int = building.BUCKETS,
        progress=print,
        threshold: int = building.THRESHOLD,
        split_depth: int = building.SPLIT_DEPTH,
    ) -> dict:
        """Build the graph from every capture in the store and every import (on Spark,
        or in this process for up to a million triples: ``graphs/build_here.py``);
        returns the build's sizes and timings. Components of ``threshold`` nodes or more
        are split into connected sets (CSProv) along splits of ``split_depth`` levels of
        the graph of datasets. A build replaces the one before only once it is whole."""
        for name, value in (("buckets", buckets), ("threshold", threshold), ("split_depth", split_depth)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(f"{name} is a whole number from 1, not {value!r}")
        meta = building.build(self._session.spark, self._session.store, buckets, progress, threshold, split_depth)
        self._stored = None
        return meta

    def update(self, progress=print) -> dict:
        """Add the captures and imports made since the current build, without building
        the graph again (``graphs/update.py``: a layer on top of the build, merging the
        components the new triples join); returns the new build's sizes and timings,
        with ``added`` (triples, rows and merged components). Removed capture versions
        need :meth:`build`; so does a graph that should be split into sets anew."""
        meta = updating.update(self._session.spark, self._session.store, progress)
        self._stored = None
        return meta

    def _graph(self) -> StoredGraph:
        number = building.current_build(self._folders)
        if self._stored is None or self._stored.meta["build"] != number:
            self._stored = StoredGraph(self._folders)
        return self._stored

    def backward(self, dataset: str, rid: int, method: str = "ccprov") -> Trace:
        """The triples behind row ``rid`` of ``dataset`` (a capture's output is
        ``name@version``), found by ``method``: ``ccprov`` (its component), ``csprov``
        (the connected sets its lineage passes through) or ``rq`` (hop by hop)."""
        return self._graph().trace(dataset, rid, "backward", method)

    def forward(self, dataset: str, rid: int, method: str = "ccprov") -> Trace:
        """The triples from row ``rid`` of ``dataset`` to every row derived from it."""
        return self._graph().trace(dataset, rid, "forward", method)

    def end_to_end(self, planner, out_rids) -> dict | None:
        """``{key: source rows}`` behind output rows ``out_rids`` of ``planner``'s capture,
        end to end, from the current build; None when there is none or it cannot answer
        (``graphs/end_to_end.py``). ``Capture.backward(..., end_to_end=True)`` asks it first."""
        return end_to_end.backward(end_to_end.stored_graph(self._folders), planner, out_rids)

    def stats(self) -> dict:
        """Sizes, timings and freshness of the current build."""
        graph = self._graph()
        return graph.stats() | {"stale": self.stale()}

    def stale(self) -> list[str]:
        """The capture versions made or removed since the build (``name@version``)."""
        return stale_versions(self._session.store, self._graph().meta)

    def import_triples(self, path: str | os.PathLike, format: str | None = None) -> int:
        """Add triples made elsewhere (Parquet or CSV with a header: ``src_dataset,
        src_rid, dst_dataset, dst_rid, op``) to the next build; returns how many."""
        path = str(path)
        fmt = format or ("csv" if path.endswith(".csv") else "parquet")
        if fmt not in ("csv", "parquet"):
            raise InvalidArgument(f"triples are imported from csv or parquet, not {fmt!r}")
        if not Path(path).exists():
            raise InvalidArgument(f"no file or folder {path}")
        spark = self._session.spark
        df = spark.read.option("header", True).csv(path) if fmt == "csv" else spark.read.parquet(path)
        triples = check_imported(df, path)
        bad = triples.where(" OR ".join(f"{c} IS NULL" for c in triples.columns)).limit(1).collect()
        if bad:
            raise InvalidArgument(f"{path} has a triple with an empty or unreadable field: {bad[0].asDict()}")
        target = self._folders.imported / f"{Path(path).stem}-{uuid.uuid4().hex[:8]}"
        tmp = target.with_name(f".tmp-{target.name}")
        triples.write.parquet(str(tmp))
        os.replace(tmp, target)
        return self._session.spark.read.parquet(str(target)).count()
