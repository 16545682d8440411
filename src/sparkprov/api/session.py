"""LineageSession: captures made and loaded over one SparkSession and one store.

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"])
>>> cap = session.capture(df.groupBy("k").sum("v"), name="sums")
>>> top = cap.output.where("k = 'a'")
>>> sorted(r.v for r in cap.backward(top, source="dataframe_0").collect())
[1, 2]
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..capture.function_keep import FunctionKeep
from ..capture.marks import capture_marks, mark_names
from ..capture.output_write import Write
from ..capture.run import run_capture
from ..capture.strategy import STRATEGIES
from ..capture.workload import Workload
from ..errors import InvalidArgument, one_line
from ..executors import ship
from ..local import region_hint
from ..plan.catalyst import Bridge
from ..plan.replies import quick_replies
from ..plan.written import read_written
from ..query import drill_down
from ..sources.identity import NamedLeaf, named_leaf
from ..store.catalog import Store, check_name
from ..store.collect import Garbage, collect_garbage, remove
from ..store.entry import CaptureEntry
from ..store.layout import StoreFolders
from ..store.lease import claim, release
from . import front_ends
from .capture import Capture

DEFAULT_STORE = ".sparkprov"

log = logging.getLogger("sparkprov")


class LineageSession:
    """Captures queries on ``spark`` into a store and reopens them.

    ``store`` defaults to ``$SPARKPROV_STORE`` or ``./.sparkprov``.
    """

    def __init__(self, spark: SparkSession, store: str | os.PathLike | None = None) -> None:
        if not isinstance(spark, SparkSession):
            raise InvalidArgument(f"spark must be a SparkSession, not {type(spark).__name__}")
        self.spark = spark
        self._bridge = Bridge(spark)
        self.store = Store(store or os.environ.get("SPARKPROV_STORE") or DEFAULT_STORE)
        # wrappers around applyInPandas-style functions run sparkprov's code in the workers
        ship(spark.sparkContext)
        quick_replies(spark)  # Py4J's replies over 8 KB without a 40 ms wait (plan/replies.py)
        self._named: list[NamedLeaf] = []
        self._queries: dict[tuple[str, int], tuple[DataFrame, dict]] = {}
        self._rdd_context: Any = None
        hint = region_hint(self._bridge.g1_region_bytes())
        if hint:
            log.info(hint)

    @property
    def rdd(self) -> Any:
        """A ``sparkprov.LineageContext`` over this session: RDD programs traced into its
        store (the RDD front end, ``sparkprov.rdd``, makes it).

        >>> words = session.rdd.parallelize(["a b", "b"]).flatMap(str.split)  # doctest: +SKIP
        """
        if self._rdd_context is None:
            self._rdd_context = front_ends.made("rdd", self)
        return self._rdd_context

    def source(self, df: DataFrame, name: str) -> DataFrame:
        """Name the relation ``df`` reads; captures then call it ``name``. Returns ``df``."""
        if not isinstance(df, DataFrame):
            raise InvalidArgument(f"df must be a DataFrame, not {type(df).__name__}")
        check_name(name)
        plan = self._bridge.analyzed(df)
        leaves = _leaves(self._bridge, plan)
        if len(leaves) != 1:
            raise InvalidArgument(
                f"session.source() needs a DataFrame reading one relation; this one reads {len(leaves)}"
            )
        self._named = [n for n in self._named if n.name != name]
        self._named.append(named_leaf(self._bridge, leaves[0], name))
        return df

    def graph(self) -> Any:
        """The store's lineage graph (``sparkprov.graphs.LineageGraph``): every capture's
        pairs as triples between rows of datasets, with their connected components;
        ``build()``, then ``backward(dataset, rid)`` and ``forward(dataset, rid)``.

        >>> session.graph().build()["edges"]  # doctest: +SKIP
        >>> session.graph().backward("totals@1", 0).rows()  # doctest: +SKIP
        """
        return front_ends.made("graphs", self)

    def ui(self, port: int = 0, host: str = "127.0.0.1", open: bool = False) -> Any:
        """The web page over this session's store (``sparkprov ui``), served from this
        process until ``stop()``: what it adds to the command's page is what-if, since
        replaying a capture needs the session that made it. Prints the address (with
        its token) and returns the server (``url``, ``stop()``).

        >>> server = session.ui(port=8765, open=True)  # doctest: +SKIP
        >>> server.stop()  # doctest: +SKIP
        """
        return front_ends.made("web", self)(port=port, host=host, open=open)

    def capture(
        self,
        df: DataFrame,
        name: str,
        *,
        path: str | os.PathLike | None = None,
        table: str | None = None,
        mode: str = "errorifexists",
        witnesses: bool = False,
        strategy: str = "auto",
        workload: Workload | dict | None = None,
        keep: dict[str, str] | None = None,
    ) -> Capture:
        """Run ``df`` once with capture; store its output and lineage under ``name``.

        With ``path`` (Parquet files) or ``table`` (a Parquet table), the output rows
        are also written there, as ``df.write`` would (``mode``: ``errorifexists``
        or ``overwrite``). A later capture that reads them links to this one, so
        ``backward(..., end_to_end=True)`` and ``forward(..., end_to_end=True)``
        trace a pipeline of several jobs end to end.

        ``witnesses=True`` also keeps how each output row was derived (which rows were
        joined, grouped, matched), for :meth:`Capture.why` and :meth:`Capture.how`.
        It stores each grouping operator's groups, which costs time and space;
        unless a window's ranges are among them, the pair table traces read is then
        made from them by the first answer that needs it (joins in DuckDB, in the
        process that asks).

        ``strategy`` is how aggregates keep their groups' input rows (``explain()``
        shows the choice per operator): ``"inject"`` collects the rids inside the
        aggregate, ``"logical"`` names each group by its key and joins the aggregate's
        input again afterwards, ``"auto"`` injects unless the relations below the
        aggregate add up to more than the conf ``spark.sparkprov.injectMaxInputBytes``
        (by Spark's size estimate; unset, a quarter of the heap of the JVM that runs
        the tasks, at least ``1g``: one group's rids are one array in memory). ``"defer"`` is
        logical, but the capture returns once the output is written and the groups
        are resolved in the background (answers wait for it).
        All give the same lineage. ``"lazy"`` captures nothing: the query
        runs as it is, and the first answer that needs lineage (or
        :meth:`Capture.build_lineage`) runs it again with capture, in this process;
        a query that could give other rows the second time is refused. With
        ``witnesses``, aggregates keep side relations: under ``"auto"`` (within its
        bound) and ``"inject"`` each group's witnesses are collected in the
        aggregate, and its side relation read from the rows the query kept; under
        ``"logical"`` the input runs again. ``"defer"`` stores the witnesses
        only: the pair table is made from them by the first answer that needs it, in
        the process that asks and without Spark (from every output row's derivation,
        so up to the rows why and how read at once).

        ``workload`` declares the lineage queries to come (Smoke's workload-aware
        capture): ``Workload(sources=[...])`` or ``{"sources": [...]}`` keeps lineage
        only for those sources (traces reach them backward or start from them
        forward); the query's other sources are read without rids, which costs less.
        Tracing them raises an error saying so. ``"where": {source: predicate}``
        pushes the predicate that backward traces to that source will apply into
        capture (Spark SQL over the source's columns): only its rows that satisfy it
        keep lineage, so less is collected and stored; backward answers to it hold
        those rows alone (with a ``RestrictedLineageWarning``) and a forward trace from
        it raises ``LineageRestricted``. ``"partition_by": {source: column}`` keeps
        that source's lineage partitioned by the column's value, so a backward trace
        with a ``where`` on that column (a value picked at query time) reads only its
        partitions. ``"group_by": {source: [columns]}`` (or
        ``{source: {"by": [...], "aggregates": ["sum(c)", ...]}}``; ``count(*)`` by
        default; count, sum, min, max and avg) declares an aggregation the consuming
        queries run over the backward lineage: capture computes it per output row, and
        :meth:`Capture.drill_down` answers from that.

        >>> cap = session.capture(df.groupBy("k").count(), "counts", strategy="inject")  # doctest: +SKIP
        >>> cap = session.capture(joined, "j", workload={"sources": ["orders"]})  # doctest: +SKIP
        >>> only = {"sources": ["lineitem"], "where": {"lineitem": "l_tax > 0.05"}}
        >>> cap = session.capture(q, "q", workload=only)  # doctest: +SKIP

        ``keep`` chooses, per function the query calls that declares payload or
        composite lineage (named by its ``__qualname__``, as ``explain()`` names it),
        whether its payloads are kept for the query (``"payload"``) or its input rows
        stored as it runs (``"pairs"``), whatever its declaration says:
        :func:`sparkprov.choose_keep` picks them under budgets.

        >>> cap = session.capture(q, "q", keep={"rolling_mean": "payload"})  # doctest: +SKIP
        """
        if not isinstance(df, DataFrame):
            raise InvalidArgument(f"df must be a DataFrame, not {type(df).__name__}")
        check_name(name)
        write = None
        if path is not None or table is not None:
            if path is not None and table is not None:
                raise InvalidArgument("give path or table, not both")
            if mode not in ("errorifexists", "error", "overwrite"):
                raise InvalidArgument(
                    f"mode {mode!r} is not supported: a capture writes a complete output "
                    "(errorifexists or overwrite), so its rows keep their ids"
                )
            write = Write(str(path) if path is not None else None, table, mode)
        if not isinstance(witnesses, bool):
            raise InvalidArgument(f"witnesses must be True or False, not {witnesses!r}")
        if strategy not in STRATEGIES:
            raise InvalidArgument(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        if strategy == "lazy" and witnesses:
            raise InvalidArgument("witnesses=True keeps what capture records; strategy='lazy' records nothing")
        chosen = Workload.of(workload)
        function_keep = FunctionKeep.of(keep)
        if strategy == "lazy" and function_keep is not None:
            raise InvalidArgument("keep= chooses what capture stores; strategy='lazy' stores nothing until asked")
        if witnesses and chosen is not None and chosen.where:
            raise InvalidArgument(
                "witnesses=True keeps how every row was derived; a workload where drops the lineage of "
                "the rows it does not select: give one or the other"
            )
        return Capture(
            self,
            self._capture(
                df, name, write=write, witnesses=witnesses, strategy=strategy, workload=chosen, keep=function_keep
            ),
        )

    def checkpoint(self, df: DataFrame, name: str) -> DataFrame:
        """``df`` computed once and stored, as ``df.checkpoint()`` does, but traceable.

        ``df.checkpoint()`` cuts the plan, so a capture over its result starts at its
        rows. This captures ``df`` under ``name``, writing its rows into the store, and
        returns a DataFrame reading them: a later capture over it traces on through
        ``name`` with ``backward(..., end_to_end=True)`` and ``forward(..., end_to_end=True)``.

        >>> stage = session.checkpoint(df.where("v > 1"), "stage")  # doctest: +SKIP
        >>> cap = session.capture(stage.groupBy("k").count(), "counts")  # doctest: +SKIP
        >>> list(cap.backward([0], end_to_end=True))  # doctest: +SKIP
        ['stage/dataframe_0']
        """
        path = StoreFolders(self.store.root).checkpoint(check_name(name), uuid.uuid4().hex)
        claim(self.store.root, path)  # rows no entry names yet: not garbage while this process writes them
        try:
            self.capture(df, name, path=path)
        finally:
            release(path)
        return read_written(self.spark, path)

    def _capture(
        self,
        df: DataFrame,
        name: str,
        by_occurrence: bool = False,
        write: Write | None = None,
        witnesses: bool = False,
        strategy: str = "auto",
        workload: Workload | None = None,
        keep: FunctionKeep | None = None,
    ) -> dict:
        leaves: dict = {}  # every source's leaf, marked parts' too: replay runs the whole query
        # With marks, each part gets the workload, and keeps the lineage of the marks
        # too (the steps to the sources it names); its tables are built by the part
        # that reads their source, and the outer part checks that every name is read.
        marks = mark_names(self._bridge, df) if workload is not None else []
        if marks:
            workload = dataclasses.replace(workload, sources=[*workload.sources, *marks])
        read_below = set(marks)
        parts: list[str] = []  # the marks' parts committed so far

        def capture_mark(sub: DataFrame, mark_name: str, named: list, path: str) -> dict:
            entry = run_capture(
                self._bridge,
                self.store,
                sub,
                mark_name,
                named,
                write=Write(path),
                leaves=leaves,
                witnesses=witnesses,
                strategy=strategy,
                workload=workload,
                read_elsewhere=None,
                function_keep=keep,
            )
            parts.append(entry.name)
            read_below.update(entry.sources)
            self._build_workload_tables(entry, strategy)
            return entry

        query = df
        try:
            df, named = capture_marks(self._bridge, df, name, self._named, self.store.root, capture_mark)
            entry = run_capture(
                self._bridge,
                self.store,
                df,
                name,
                named,
                by_occurrence,
                write,
                leaves,
                witnesses,
                strategy,
                workload,
                read_elsewhere=frozenset(read_below),
                function_keep=keep,
            )
        except BaseException as exc:
            # the parts already committed belong to a capture that was not made: their
            # newest version says so (load refuses it, naming the version before)
            for part in parts:
                self.store.commit_failed(part, f"part of capture {name!r}, which failed: {one_line(exc)}", part_of=name)
            raise
        self._queries[(entry.name, entry.version)] = (query, leaves)
        self._build_workload_tables(entry, strategy)
        return entry

    def _build_workload_tables(self, entry: CaptureEntry, strategy: str) -> None:
        """The drill-down and partitioned tables of the sources ``entry`` reads that its
        workload names; a lazy capture builds them with its lineage, on first use."""
        workload = entry.workload or {}
        if strategy == "lazy" or not (workload.get("group_by") or workload.get("partition_by")):
            return
        plan = Capture(self, entry)._plan
        for source in workload.get("group_by", {}):
            plan.drill_table(source, drill_down.spec(entry, source))
        for source in workload.get("partition_by", {}):
            plan.partitioned(source)

    def load(self, name: str, version: int | None = None) -> Capture:
        """Reopen a stored capture (the newest version unless ``version`` is given)."""
        return Capture(self, self.store.load(name, version))

    def captures(self) -> list[str]:
        """Names of the captures in the store."""
        return self.store.names()

    def remove(self, name: str, version: int | None = None, force: bool = False, dry_run: bool = False) -> Garbage:
        """Remove capture ``name`` (every version, or ``version``) and its files, as
        ``sparkprov rm`` does. A capture other captures read (their traces continue
        through it) or a workflow names is kept unless ``force``; the result says what
        was removed and kept. Version numbers are never given again.

        >>> session.remove("sums", 1).removed  # doctest: +SKIP
        [{'version': 'sums@1', 'bytes': 20480, 'why': 'removed by request'}]
        """
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise InvalidArgument(f"a capture version is a whole number from 1, not {version!r}")
        return remove(self.store, name if version is None else f"{name}@{version}", force=force, dry_run=dry_run)

    def collect_garbage(
        self,
        keep_versions: int | None = None,
        older_than: float | None = None,
        dry_run: bool = False,
        force: bool = False,
    ) -> Garbage:
        """Remove what killed captures left in the store and, by policy, old versions:
        all but each name's newest ``keep_versions``, those made more than
        ``older_than`` seconds ago (never a name's newest), as ``sparkprov gc`` does.
        Nothing a live process is writing is touched.

        >>> session.collect_garbage(keep_versions=2, dry_run=True).to_text()  # doctest: +SKIP
        'would remove 0 item(s), 0 B'
        """
        return collect_garbage(
            self.store, keep_versions=keep_versions, older_than=older_than, dry_run=dry_run, force=force
        )


def _leaves(bridge: Bridge, plan: Any) -> list:
    kids = bridge.children(plan)
    if not kids:
        return [plan]
    return [leaf for k in kids for leaf in _leaves(bridge, k)]
