"""Capture: one stored capture as the user holds it (its output, sources, traces).

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> cap = session.capture(spark.createDataFrame([("a", 1), ("b", 2)], ["k", "v"]).where("v > 1"), name="big")
>>> [r.k for r in cap.output.collect()]
['b']
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..capture.lineage import IN, OUT
from ..capture.workload import restriction, warn_restricted
from ..errors import EmbeddedUnsupported, InvalidArgument
from ..plan.predicate import check_predicate
from ..query import blackbox, drill_down, engines, trace
from ..query.planner import Planner
from ..query.provenance import Polynomial, polynomials
from ..query.replay import Replay, SourceLeaf, replay
from ..query.trace import RowsArg
from ..query.verify import Verification, verify
from ..sources.identity import RID, check_unchanged
from ..store.entry import CaptureEntry
from .cursor import LineageCursor, Point
from .html import Traced, table_html

if TYPE_CHECKING:
    from .session import LineageSession


@dataclass(frozen=True)
class Source:
    """A relation a capture read, and how its rows are identified.

    ``kind`` is ``"parquet"`` (rows read in place; rid = file number and row index),
    ``"text"`` (an RDD program's text read in place; rid = input split and line number)
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
        return self._capture._plan.source_rows(self.name)

    def __repr__(self) -> str:
        return f"Source({self.name!r}, kind={self.kind!r}, format={self.format!r}, files={self.files})"


class Capture:
    """One stored capture: its output rows and their lineage to every source."""

    def __init__(self, session: LineageSession, entry: CaptureEntry) -> None:
        self._session = session
        self._entry = entry
        # every answer is made by the planner; this type checks what the user passes
        self._plan = Planner(session.spark, session._bridge, session.store, entry)
        # the captured DataFrame and its sources' leaves, while this session lives (replay)
        self._query: tuple[DataFrame, dict] | None = session._queries.get((entry.name, entry.version))
        self.name: str = entry.name
        self.version: int = entry.version
        self._infos = entry.sources

    def __repr__(self) -> str:
        return f"Capture({self.name!r}, version={self.version}, sources={list(self._infos)})"

    def _repr_html_(self) -> str:
        """A notebook's view: the capture, its sources and its plan (read from the store, no job)."""
        e = self._entry
        lines = e.explain or []
        coarse = sum(1 for _, _, g, _ in lines if not g.startswith("exact"))
        head = (
            f"<p><b>capture {escape(self.name)}</b> version {self.version} · {escape(e.created or '')} · "
            f"strategy {escape(e.strategy or '')} · {len(lines)} operators, "
            f"{f'{coarse} coarse' if coarse else 'all exact'}{' · witnesses kept' if e.witnesses else ''}</p>"
        )
        sources = table_html(
            ["source", "format", "rows identified by", "files"],
            [[s.name, s.format, s.kind, s.files] for s in self.sources.values()],
        )
        plan = table_html(
            ["operator", "lineage", "how captured"],
            [["\u2003" * (d - 1) + op, g, s] for d, op, g, s in lines],
        )
        return head + sources + plan

    @property
    def output(self) -> DataFrame:
        """The output rows, in the query's order, plus ``_sp_rid``."""
        return self._plan.output(ordered=True)

    @property
    def sources(self) -> dict[str, Source]:
        """Every source the query read, by name."""
        return {
            n: Source(n, i.kind, i.format, len(i.original) or len(i.files), i.table, self)
            for n, i in self._infos.items()
        }

    def lineage(self, rows: RowsArg, source: str | None = None) -> LineageCursor:
        """A cursor at ``rows`` of the output (or of ``source``), for stepping through the
        pipeline's lineage: ``go_back``, ``go_next``, ``go_back_all``, ``go_next_all``,
        then ``show``, ``count``, ``to_df`` or any DataFrame method. Lazy until an action.

        >>> cap.lineage("k = 'a'").go_back().count()  # doctest: +SKIP
        2
        """
        self._plan.trusted()
        blackbox.warn_coarse(self._entry, "a cursor steps through the stored lineage")
        if source is None:
            point, relation, what = Point(self._plan), self._plan.output(), f"the output of capture {self.name!r}"
        else:
            self._plan.check_source(source)
            point, relation, what = Point(self._plan, source), self._plan.source_rows(source), f"source {source!r}"
        rids = trace.rid_set(rows, relation, what)
        if isinstance(rids, list):
            rids = relation.where(F.col(RID).isin(rids)).select(RID)
        return LineageCursor.start(point, rids)

    def pairs(self, source: str) -> DataFrame:
        """The ``(out_rid, in_rid)`` pairs for one source.

        Lineage shared by many output rows (a scalar subquery's result) is stored once
        and joined in here, lazily: filtering the result by ``out_rid`` or ``in_rid``
        reads only what is needed. For a source the capture's workload restricted
        (``where``), only the pairs of its rows that satisfy the predicate are kept.
        """
        self._plan.trusted()
        self._plan.check_source(source)
        blackbox.warn_coarse(self._entry, "pairs are the stored lineage")
        return self._plan.pairs(source)

    def build_lineage(self) -> float:
        """Build the pair table now, if this capture left it for its first answer;
        returns the seconds that took (0 when it was built already).

        A lazy capture (``strategy="lazy"``) runs its query again with capture, which
        only the process that captured it can do: build before that process ends to
        trace later from elsewhere. A defer capture's lineage is being resolved in the
        background: this waits for it. Lineage kept in the output rows (an RDD's, or
        one whose slots are all rids) is turned into its pair table.

        >>> cap = session.capture(df.groupBy("k").count(), "counts", strategy="lazy")  # doctest: +SKIP
        >>> cap.build_lineage() > 0  # doctest: +SKIP
        True
        """
        started = time.perf_counter()
        self._plan.ensure_lineage()
        return time.perf_counter() - started

    def backward(
        self,
        rows: RowsArg,
        source: str | None = None,
        end_to_end: bool = False,
        engine: str = "auto",
        where: str | None = None,
    ) -> dict[str, DataFrame] | DataFrame:
        """Input rows behind ``rows`` of the output.

        Returns ``{source name: DataFrame}`` (each with all the source's columns and
        ``_sp_rid``), or one DataFrame when ``source`` is given. With ``end_to_end``,
        a source that an earlier capture wrote (``capture(..., path=...)``) is traced
        on through that capture, recursively: its entries are the earlier capture's
        sources, named ``"<earlier capture>/<source>"``. Where the store's lineage
        graph is built (``session.graph().build()``) and holds every capture on the
        way, ``"auto"`` answers from it (the components of the rows alone); ``"spark"``
        traces job by job.

        ``engine``: ``"auto"`` answers a trace of rids or a predicate in this process
        (the embedded engine) when the answer is small, and with Spark otherwise;
        ``"spark"`` or ``"embedded"`` force one. Both give the same rows.

        ``where`` (with ``source``): only the source rows that satisfy this predicate
        (Spark SQL over the source's columns). The answer is on Spark unless ``engine``
        is ``"embedded"``: when the capture's workload partitioned the source's lineage
        by a column (``partition_by``) and the predicate reads that column alone, only
        the partitions it keeps are read.

        >>> cap.backward("region = 'EU'", "orders", where="status = 'returned'")  # doctest: +SKIP
        """
        self._plan.trusted()
        engines.check_engine(engine)
        if where is not None:
            return self._backward_where(rows, source, end_to_end, where, engine)
        if source is not None and not end_to_end:
            self._plan.check_source(source)
        warn_restricted(self._entry, [source] if source is not None else list(self._infos))
        names = [source] if source is not None and not end_to_end else list(self._infos)
        result = None
        if end_to_end:
            blackbox.warn_coarse(self._entry, "an end-to-end trace reads the stored lineage")
        elif blackbox.exact_here(self._entry):
            out_rids = self._output_rids(rows)
            coarse = self._plan.backward(out_rids, list(self._infos), engine)
            result = blackbox.backward(self._entry, out_rids, coarse, names)
        if end_to_end and engine == "auto":  # from the store's lineage graph, where built and holding the trace
            result = self._session.graph().end_to_end(self._plan, self._plan.output_rids(rows))
        if result is None:
            result = self._plan.backward(rows, names, engine, end_to_end)
        if source is None:
            return Traced(result)
        if source not in result:
            raise InvalidArgument(f"no source {source!r} end to end; sources: {', '.join(result)}")
        return result[source]

    def _backward_where(
        self, rows: RowsArg, source: str | None, end_to_end: bool, where: str, engine: str
    ) -> DataFrame:
        if source is None or end_to_end:
            raise InvalidArgument("where filters one source's rows: give source, without end_to_end")
        check_predicate(where)
        self._plan.check_source(source)
        warn_restricted(self._entry, [source])
        blackbox.warn_coarse(self._entry, "a trace with where= filters the stored lineage", 4)
        return self._plan.backward_where(rows, source, where, engine)

    def drill_down(self, rows: RowsArg, source: str) -> DataFrame:
        """The aggregation the capture's workload declared for ``source`` (``group_by``)
        over the source rows behind ``rows`` of the output: the same rows as
        ``backward(rows, source).groupBy(*by).agg(*aggregates)``, one per group, with the
        grouping columns and one column per aggregate, named as declared.

        Capture stored that aggregation per output row, so the answer combines a few
        stored partial rows instead of reading the lineage and the source rows (Smoke's
        group-by push-down). Combining is exact when no source row is behind two output
        rows (an aggregate's groups), or when ``rows`` is one rid; otherwise the answer
        is computed from the lineage.

        >>> spec = {"sources": ["lineitem"], "group_by": {"lineitem": ["l_shipmode"]}}
        >>> cap = session.capture(q1, "q1", workload=spec)  # doctest: +SKIP
        >>> cap.drill_down("l_returnflag = 'R'", "lineitem").show()  # doctest: +SKIP
        """
        self._plan.trusted()
        self._plan.check_source(source)
        group_by = drill_down.spec(self._entry, source)
        if group_by is None:
            raise InvalidArgument(
                f"capture {self.name!r} has no drill-down for source {source!r}: capture with "
                f"workload={{'sources': [..., {source!r}], 'group_by': {{{source!r}: [columns]}}}}"
            )
        warn_restricted(self._entry, [source])
        blackbox.warn_coarse(self._entry, "a drill-down combines the stored lineage")
        # the stored aggregates hold the rows as captured: a changed source is said, as a trace says it
        check_unchanged(self._session._bridge, self._infos[source])
        out_rids = self._drill_rids(rows)
        path = self._plan.drill_table(source, group_by)
        plan = self._plan

        def traced():
            return trace.backward(plan.pairs(source, outs=out_rids), out_rids, plan.source_rows(source))

        return drill_down.answer(self._session.spark, path, group_by, out_rids, traced)

    def _drill_rids(self, rows: RowsArg) -> trace.RidSet:
        # rids as a list are merged in this process (query/drill_down.py): given ones,
        # whatever their number, and a predicate's when DuckDB finds few; the rest on Spark
        if isinstance(rows, str):
            found = self._matched_here(rows)
            if found is not None and len(found) <= drill_down.MERGED_HERE_MAX:
                return found.tolist()
        if isinstance(rows, (str, DataFrame)):
            return trace.rid_set(rows, self._plan.output(), f"the output of capture {self.name!r}")
        return trace.rid_list(rows)

    def forward(
        self, source: str, rows: RowsArg, end_to_end: bool = False, engine: str = "auto"
    ) -> DataFrame | dict[str, DataFrame]:
        """Output rows (with ``_sp_rid``) that ``rows`` of ``source`` contributed to.

        With ``end_to_end``, returns ``{capture name: its output rows}`` for this
        capture and every later capture that read what it wrote, recursively.
        ``engine`` is as for :meth:`backward`.
        """
        self._plan.trusted()
        engines.check_engine(engine)
        self._plan.check_source(source)
        found = self._plan.forward(source, rows, engine, end_to_end)
        if end_to_end:
            blackbox.warn_coarse(self._entry, "an end-to-end trace reads the stored lineage")
        elif blackbox.exact_here(self._entry):
            in_rids = trace.rid_set(rows, self._plan.source_rows(source), f"source {source!r}")
            if isinstance(in_rids, DataFrame):
                in_rids = [r[0] for r in in_rids.limit(engines.ROWS_LIMIT + 1).collect()]
                engines.check_rows(len(in_rids), f"the rows of source {source!r} asked for")
            every = list(self._infos)
            found = blackbox.forward(
                self._entry, source, in_rids, found, lambda out: self._plan.backward(out, every, engine)
            )
        return Traced(found) if isinstance(found, dict) else found

    def how(self, rows: RowsArg) -> DataFrame:
        """How-provenance: the provenance polynomial of each of ``rows`` of the output,
        as a DataFrame (``_sp_rid``, ``how``). Source rows are ``source#rid``; ``·`` is
        joint use (a join), ``+`` alternatives (a semi join's matches), ``δ(...)`` a
        group (aggregate, DISTINCT, window frame), as in Lipstick section 2.3. Needs a
        capture made with ``witnesses=True``; answered in this process.

        >>> cap.how("k = 'a'").first().how  # doctest: +SKIP
        'numbers#0 · δ(orders#3 + orders#8)'
        """
        found = self.polynomials(rows)
        data = [(rid, str(p)) for rid, p in sorted(found.items())]
        return self._session.spark.createDataFrame(data, f"{RID} long, how string")

    def why(self, rows: RowsArg) -> DataFrame:
        """Why-provenance: the witnesses of each of ``rows`` of the output, the sets of
        source rows that together derive it, one row per witness (``_sp_rid``,
        ``witness``: an array of ``(source, rid)``). A group that only removes
        duplicates is derived by any one of its rows; one whose values are computed
        (an aggregate, a window) needs all of them. Needs ``witnesses=True`` at capture.

        >>> cap.why([0]).first().witness  # doctest: +SKIP
        [Row(source='orders', rid=3), Row(source='numbers', rid=0)]
        """
        data = []
        for rid, p in sorted(self.polynomials(rows).items()):
            for w in sorted(sorted(w) for w in p.witnesses()):
                data.append((rid, w))
        schema = f"{RID} long, witness array<struct<source: string, rid: long>>"
        return self._session.spark.createDataFrame(data, schema)

    def polynomials(self, rows: RowsArg | None = None) -> dict[int, Polynomial]:
        """``{output rid: Polynomial}`` for ``rows`` of the output (None: every row):
        what :meth:`how` and :meth:`why` print, as objects (``str(p)``,
        ``p.witnesses()``, ``p.variables()``).

        >>> {rid: str(p) for rid, p in cap.polynomials().items()}  # doctest: +SKIP
        {0: 'numbers#0 · δ(orders#3 + orders#8)'}
        """
        self._plan.trusted()
        blackbox.warn_coarse(self._entry, "why and how read the stored structure")
        return polynomials(self._entry, None if rows is None else self._output_rids(rows))

    def _matched_here(self, predicate: str) -> np.ndarray | None:
        """Rids of the output rows matching ``predicate``, found by DuckDB in this
        process; None when DuckDB cannot evaluate it (Spark then decides)."""
        try:
            return self._plan.embedded().output_rids(predicate)
        except EmbeddedUnsupported:
            return None

    def _output_rids(self, rows: RowsArg) -> list[int]:
        # rids for answers built in this process: a predicate goes to DuckDB, or to
        # Spark when DuckDB cannot evaluate it; a DataFrame's rids are collected
        if isinstance(rows, str):
            found = self._matched_here(rows)
            if found is not None:
                return found.tolist()
            rows = self._plan.output().where(rows)
        if isinstance(rows, DataFrame):
            if RID not in rows.columns:
                raise InvalidArgument(f"the DataFrame passed as rows has no {RID} column; pass rows of the output")
            found = [r[0] for r in rows.select(RID).limit(engines.ROWS_LIMIT + 1).collect()]
            engines.check_rows(len(found), f"the rows of capture {self.name!r} asked for")
            return found
        return trace.rid_list(rows)

    def register_views(self) -> dict[str, str]:
        """Register temp views for SQL over this capture's lineage; returns ``{view: what}``.

        ``<capture>_output`` holds the output rows. Per source, ``<capture>_backward_<source>``
        holds the source's rows behind each output row, with that output row's rid as
        ``_sp_rid`` and the row's own rid as ``_sp_in_rid``; ``<capture>_forward_<source>``
        holds the output rows each source row contributed to, with the source row's rid as
        ``_sp_in_rid``. Names are the capture's and source's, with other characters than
        letters, digits and ``_`` replaced by ``_``. A source whose lineage the
        workload restricted (``where``) has a backward view of the rows it kept, and
        no forward view.

        >>> views = cap.register_views()  # doctest: +SKIP
        >>> spark.sql("SELECT k, sum(v) FROM sums_backward_numbers WHERE _sp_rid = 0 GROUP BY k")  # doctest: +SKIP
        """
        self._plan.trusted()
        base = _identifier(self.name)
        views = {f"{base}_output": f"the output rows of capture {self.name!r}"}
        out = self._plan.output()
        out.createOrReplaceTempView(f"{base}_output")
        for source in self._infos:
            pairs = self._plan.pairs(source).select(F.col(OUT).alias(RID), F.col(IN).alias(IN_RID))
            rows = self._plan.source_rows(source).withColumnRenamed(RID, IN_RID)
            name = f"{base}_backward_{_identifier(source)}"
            rows.join(pairs, IN_RID).select(*[F.col(f"`{c}`") for c in rows.columns], RID).createOrReplaceTempView(name)
            views[name] = f"rows of source {source!r} with the rid of an output row they are behind (_sp_rid)"
            predicate = restriction(self._entry, source)
            if predicate is not None:  # a forward view would miss the rows the workload dropped
                views[name] += f", only rows where {predicate} (workload where)"
                continue
            name = f"{base}_forward_{_identifier(source)}"
            out.join(pairs, RID).select(*[F.col(f"`{c}`") for c in out.columns], IN_RID).createOrReplaceTempView(name)
            views[name] = f"output rows with the rid of a row of source {source!r} behind them (_sp_in_rid)"
        return views

    def verify(self, rows: RowsArg | None = None, sample: int = 20) -> Verification:
        """The re-execution check: re-run the captured query over each checked output
        row's own lineage (``backward``) and see the row come out again. Flags rows
        whose lineage misses what they depend on, as a declared function's wrong
        declaration does. ``rows``: rids (default: ``sample`` rows at random). Works in
        the session that made the capture; one Spark job per row.

        >>> report = cap.verify()  # doctest: +SKIP
        >>> report.ok, str(report)  # doctest: +SKIP
        (True, 'all 20 checked rows came out again from their lineage')
        """
        query, leaves = self._replayable("verify")
        found = {n: SourceLeaf(k, leaf) for n, (k, leaf) in leaves.items()}
        if rows is not None and not (isinstance(rows, list) and all(isinstance(r, int) for r in rows)):
            raise InvalidArgument("verify(rows=...) takes a list of output rids")
        if not isinstance(sample, int) or sample < 1:
            raise InvalidArgument(f"sample must be a positive number of rows, not {sample!r}")
        original = self.output.drop(RID)

        def rerun(replacements: dict[str, DataFrame]) -> DataFrame:
            return replay(self._session._bridge, query, found, replacements, original).output

        return verify(self.output, lambda rids: self.backward(rids), rerun, rows, sample)

    @property
    def replayable(self) -> bool:
        """Whether :meth:`replay` and :meth:`verify` can run here: the session that made
        the capture holds its query."""
        return self._query is not None

    def _replayable(self, what: str):
        if self._query is None:
            raise InvalidArgument(
                f"capture {self.name!r} v{self.version} was not made in this session: {what} needs the "
                "captured DataFrame, which only the LineageSession that captured it holds"
            )
        return self._query

    def replay(self, replacements: dict[str, DataFrame], key: str | list[str] | None = None) -> Replay:
        """Re-run the captured query with sources replaced (``{source name: DataFrame}``),
        for example without the rows a trace found bad; returns the new output and its
        diff with the captured output (rows ``added``, ``removed``, and with ``key``
        (output columns naming a row) ``changed``). Works in the session that made the
        capture, which holds the query.

        >>> fixed = cap.replay({"log": log_rows.where("user != 'Guest'")}, key="code")  # doctest: +SKIP
        >>> fixed.changed.show()  # doctest: +SKIP
        """
        query, leaves = self._replayable("replay")
        found = {n: SourceLeaf(k, leaf) for n, (k, leaf) in leaves.items()}
        return replay(self._session._bridge, query, found, replacements, self.output.drop(RID), key)

    def operators(self) -> list[str]:
        """The captured plan's operators, top first, as :meth:`explain` names them.

        >>> cap.operators()[0]  # doctest: +SKIP
        'Aggregate [k#1], [k#1, sum(v#2L) AS sum(v)#5L]'
        """
        return [op for _, op, _, _ in self._entry.explain or []]

    def explain(self) -> str:
        """A readable report: one line per operator of the captured plan, with its
        lineage granularity (exact, or coarse and why) and how capture recorded it.

        >>> print(cap.explain().splitlines()[0])  # doctest: +SKIP
        capture 'sums' version 1: 2 operators, all exact
        """
        lines = self._entry.explain or []
        coarse = [g for _, _, g, _ in lines if not g.startswith("exact")]
        summary = f"{len(coarse)} coarse" if coarse else "all exact"
        out = [f"capture {self.name!r} version {self.version}: {len(lines)} operators, {summary}"]
        width = max((2 * d + len(op) for d, op, _, _ in lines), default=0)
        width = min(width, 72)
        for depth, op, granularity, strategy in lines:
            label = ("  " * (depth - 1) + op)[:72]
            out.append(f"  {label:<{width}}  {granularity:<6}  {strategy}")
        for s in self.sources.values():
            how = {
                "parquet": "file number + Parquet row index",
                "text": "input split + line number in it, read in place",
            }.get(s.kind, "position in a Parquet copy")
            out.append(f"source {s.name}: {s.format}, {s.files} file(s), rid = {how}")
        if self._entry.witnesses:
            out.append("witnesses kept: why() and how() answer from the stored groups")
        return "\n".join(out)


IN_RID = "_sp_in_rid"


def _identifier(name: str) -> str:
    """``name`` as a plain SQL identifier (letters, digits and ``_``)."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "source"
