"""What the page shows, read from the store in this process (no Spark): the captures,
one capture's plan and output rows a page at a time, and traces through its lineage.

Every answer is plain JSON. Rids travel as strings: they are 64-bit and JavaScript's
numbers hold 53 bits exactly. A trace is the embedded engine's (``query/embedded.py``),
so the page shows what ``cap.backward`` and ``cap.forward`` give.

>>> json_value(float("nan")), json_value(2**60), json_value([1, b"x"])
('NaN', '1152921504606846976', [1, "b'x'"])
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument
from ..query.embedded import EmbeddedEngine, duckdb_condition, output_relation
from ..query.linked import LinkedViews, Measure
from ..store.catalog import Store, check_name
from ..store.duck import connection, quote
from ..store.entry import CaptureEntry
from ..store.format import RID
from ..store.listing import describe
from ..store.parquet import rid_array

PAGE_MAX = 1_000  # rows one page may ask for
RIDS_MAX = 100_000  # rows one trace may start from
PROVENANCE_MAX = 50  # rows whose why and how one answer shows
SHOWN_CHARS = 2_000  # of a polynomial
SHOWN_ROWS = 50  # witnesses of a row, and source rows of a witness
PAIRS_MAX = 400  # (a, b) pairs of a functional dependency's violations drawn
_EXACT_INT = 2**53  # larger integers lose digits as JavaScript numbers


def _bars(values: Any) -> list:
    """A chart's measures as JSON: whole counts, or doubles with null where no value is behind a bar."""
    return [None if v != v else v for v in values.tolist()]


def json_value(value: Any) -> Any:
    """``value`` as JSON carries it to the page without loss: integers beyond 2^53,
    NaN and infinities, dates, decimals and bytes as text."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -_EXACT_INT < value < _EXACT_INT else str(value)
    if isinstance(value, float):
        # as Spark shows them
        return value if math.isfinite(value) else "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


def _rows(table: pa.Table) -> dict:
    """A table as the page draws it: user columns, rows as lists, rids apart as text."""
    columns = [c for c in table.column_names if c != RID]
    rids = [str(r) for r in table[RID].to_pylist()] if RID in table.column_names else []
    data = table.select(columns).to_pylist() if columns else [{} for _ in rids]
    return {"columns": columns, "rows": [[json_value(r[c]) for c in columns] for r in data], "rids": rids}


def _page(offset: int, limit: int) -> tuple[int, int]:
    for what, n in (("offset", offset), ("limit", limit)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgument(f"{what} must be a whole number from 0, not {n!r}")
    return offset, min(limit, PAGE_MAX)


def parse_rids(given: Any) -> np.ndarray:
    """Rids the page sent (text or numbers), checked, sorted and distinct."""
    if not isinstance(given, list) or not given:
        raise InvalidArgument("rids must be a non-empty list of row ids")
    if len(given) > RIDS_MAX:
        raise InvalidArgument(f"a trace starts from at most {RIDS_MAX:,} rows, not {len(given):,}")
    try:
        return rid_array(int(r) for r in given if not isinstance(r, bool))
    except (TypeError, ValueError):
        raise InvalidArgument("rids must be whole numbers (as text or numbers)") from None


class StoreView:
    """The page's questions about one store, answered from its files.

    Engines (the file metadata they have read) are kept for the captures asked about
    last, so paging through a trace reads only the rows shown.

    >>> import tempfile
    >>> StoreView(str(Store(tempfile.mkdtemp()).root)).captures()
    {'total': 0, 'offset': 0, 'captures': []}
    """

    def __init__(self, root: str, engines: int = 16) -> None:
        self.store = Store(root, create=False)
        self._engines: OrderedDict[tuple[str, int], tuple[EmbeddedEngine, threading.Lock]] = OrderedDict()
        self._keep = engines
        self._lock = threading.Lock()
        self._linked: OrderedDict[tuple, LinkedViews] = OrderedDict()
        self._described: dict[tuple[str, int], tuple[tuple, dict]] = {}

    # captures -----------------------------------------------------------------------

    def captures(self, like: str | None = None, offset: int = 0, limit: int = 100) -> dict:
        """The captures whose name contains ``like`` (any case), by name: how many, and
        the newest version of those from ``offset`` to ``offset + limit``, with their
        versions; failed and damaged versions say why. Only those are described (their
        entries read, their files checked), so a store of many captures lists quickly."""
        offset, limit = _page(offset, limit)
        needle = (like or "").lower()
        names = [n for n in self.store.names() if needle in n.lower()]
        found = []
        for name in names[offset : offset + limit]:
            versions = self.store.versions(name)
            found.append({**self._describe(name, versions[-1]), "versions": versions})
        return {"total": len(names), "offset": offset, "captures": found}

    def _describe(self, name: str, version: int) -> dict:
        """``describe``'s row, kept while the version's entry file is unchanged: a
        committed version does not change, and describing one reads its entry, checks
        its files and reads its output's footers (about a millisecond each)."""
        try:
            st = self.store.folders.entry(name, version).stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        kept = self._described.get((name, version))
        if kept is not None and stamp is not None and kept[0] == stamp:
            return kept[1]
        row = describe(self.store, name, version)
        if stamp is not None:
            self._described[(name, version)] = (stamp, row)
        return row

    def capture(self, name: str, version: int | None = None) -> dict:
        """One capture version: what ``explain()`` says of its plan, its sources, its
        output's columns and rows, and whether it kept witnesses."""
        entry = self.store.load(name, version)  # checks the files again
        sources = [
            {"name": s.name, "kind": s.kind, "format": s.format, "files": len(s.files)} for s in entry.sources.values()
        ]
        from ..query.planner import readers_of, writer_of  # the store's index of links

        writers = {}
        for name_, info in entry.sources.items():
            writer = writer_of(self.store, info)
            if writer is not None:
                writers[name_] = {"name": writer.name, "version": writer.version}
        readers = [{"name": r.name, "version": r.version, "source": s} for r, s in readers_of(self.store, entry)]
        return {
            **self._describe(entry.name, entry.version),  # its files were checked just now
            "versions": self.store.versions(entry.name),
            # across jobs: the captures that wrote its sources, and those that read its output
            "writers": writers,
            "readers": readers,
            "columns": list(entry.output.columns),
            "plan": [
                {"depth": depth, "operator": op, "granularity": granularity, "strategy": strategy}
                for depth, op, granularity, strategy in entry.explain or []
            ],
            "sources": sources,
            "witnesses": bool(entry.witnesses),
        }

    # output rows --------------------------------------------------------------------

    def output_page(
        self,
        name: str,
        version: int,
        where: str | None = None,
        order: str | None = None,
        descending: bool = False,
        offset: int = 0,
        limit: int = 50,
    ) -> dict:
        """Output rows ``offset`` to ``offset + limit`` of those matching ``where``
        (Spark SQL), sorted by column ``order`` (default: the capture's ORDER BY, else
        the rows' ids), with how many match."""
        import duckdb

        offset, limit = _page(offset, limit)
        entry = self.store.load(name, version)
        out = entry.output
        relation = output_relation(entry)
        condition = f"WHERE {duckdb_condition(where)}" if where and where.strip() else ""
        if order is not None:
            if order not in out.columns:
                raise InvalidArgument(f"capture {name!r} has no output column {order!r} (columns: {out.columns})")
            keys = [f"{quote(order)} {'DESC' if descending else 'ASC'}"]
        else:
            keys = [
                f"{quote(out.columns[i])} {'ASC' if asc else 'DESC'} NULLS {'FIRST' if first else 'LAST'}"
                for i, asc, first in out.order or []
            ]
        keys.append(RID)
        with connection() as con:
            try:
                total = con.execute(f"SELECT count(*) FROM {relation} {condition}").fetchone()[0]
                table = con.execute(
                    f"SELECT * FROM {relation} {condition} ORDER BY {', '.join(keys)} LIMIT {limit} OFFSET {offset}"
                ).arrow()
            except duckdb.Error as exc:
                raise InvalidArgument(f"cannot evaluate {where!r} on the output: {str(exc).splitlines()[0]}") from None
        return {"total": total, "offset": offset, **_rows(table)}

    def _output_rows(self, entry: CaptureEntry, rids: np.ndarray) -> pa.Table:
        with connection() as con:
            con.register("picked", pa.table({"rid": pa.array(rids, pa.int64())}))
            table = con.execute(
                f"SELECT o.* FROM {output_relation(entry)} o JOIN picked p ON o.{RID} = p.rid ORDER BY o.{RID}"
            ).arrow()
        return table

    # linked views ---------------------------------------------------------------------

    def _views(self, names: Any, source: str | None, xs: Any, measure: Any = None) -> LinkedViews:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InvalidArgument("linked views name their captures as a list of names")
        if xs is not None and (not isinstance(xs, list) or len(xs) != len(names)):
            raise InvalidArgument("x gives one column (or null) per capture")
        if measure is not None and not isinstance(measure, str):
            raise InvalidArgument("a measure is text, such as avg(arr_delay)")
        # each brush asks again: the newest versions' numbers name the views kept, and
        # entries are loaded (their files checked) only to build them
        key = (
            tuple((n, self.store.latest_version(check_name(n))) for n in names),
            source,
            tuple(xs or ()),
            str(Measure.of(measure or None)),
        )
        with self._lock:
            found = self._linked.get(key)
        if found is None:
            found = LinkedViews([self.store.load(n, v or None) for n, v in key[0]], source, xs, key[3])
            with self._lock:
                self._linked[key] = found
                while len(self._linked) > 4:  # each holds arrays over every source row
                    self._linked.popitem(last=False)
        return found

    def linked(self, names: Any, source: str | None = None, xs: Any = None, measure: Any = None) -> dict:
        """Captures ``names`` (their newest versions) as linked charts over their
        common source: per chart its groups (labels, output rows), the source rows
        behind each and the measure over them; the measures the source allows; and
        which charts' answers to a brush come from drill-down tables."""
        views = self._views(names, source, xs, measure)
        return {
            "source": views.source,
            "rows": len(views.rids),
            "measure": str(views.measure),
            "numeric": views.numeric,
            "drill_down": [[i, j] for (i, j), route in sorted(views.routes.items()) if route == "drill-down"],
            "charts": [
                {
                    "capture": c.capture,
                    "version": c.version,
                    "x": c.x,
                    "columns": c.columns,
                    "labels": c.labels,
                    "values": json_value(c.values),
                    "total": c.total.tolist(),
                    "value": _bars(c.value),
                }
                for c in views.charts
            ],
        }

    def brush(
        self, names: Any, chart: Any, groups: Any, source: str | None = None, xs: Any = None, measure: Any = None
    ) -> dict:
        """Groups ``groups`` of chart ``chart`` brushed: the measure over the source
        rows behind them that are behind each group of every chart."""
        views = self._views(names, source, xs, measure)
        if not isinstance(groups, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in groups):
            raise InvalidArgument("groups is a list of group numbers")
        answers = views.brush(chart, groups)
        return {"brushed": views.brushed_count(chart, groups), "counts": [_bars(a) for a in answers]}

    # profiling ------------------------------------------------------------------------

    def violations(self, name: str, version: int, a: str, b: str, limit: int = 50) -> dict:
        """Output rows of a capture against the functional dependency ``a`` → ``b``
        (Smoke's profiling): the values of ``a`` with more than one value of ``b``
        (the first ``limit``, most rows first), and for each pair (the first
        ``PAIRS_MAX``), how many rows hold it and their rids (the first ``PAGE_MAX``),
        which the page traces backward."""
        entry = self.store.load(name, version)
        for column in (a, b):
            if column not in entry.output.columns:
                raise InvalidArgument(f"capture {name!r} has no output column {column!r} ({entry.output.columns})")
        _, limit = _page(0, limit)
        qa, qb = quote(a), quote(b)
        relation = output_relation(entry)
        with connection() as con:
            total = con.execute(
                f"SELECT count(*) FROM (SELECT {qa} FROM {relation} GROUP BY {qa} HAVING count(DISTINCT {qb}) > 1)"
            ).fetchone()[0]
            table = con.execute(
                f"WITH v AS (SELECT {qa} AS a, count(*) AS n FROM {relation} GROUP BY {qa} "
                f"HAVING count(DISTINCT {qb}) > 1 ORDER BY n DESC, a LIMIT {limit}) "
                f"SELECT v.a, o.{qb} AS b, count(*) AS n, list(o.{RID} ORDER BY o.{RID})[1:{PAGE_MAX}] AS rids "
                f"FROM v JOIN {relation} o ON o.{qa} IS NOT DISTINCT FROM v.a "
                f"GROUP BY v.a, o.{qb} ORDER BY max(v.n) DESC, v.a, n DESC LIMIT {PAIRS_MAX}"
            ).arrow()
        pairs = [
            {"a": json_value(r["a"]), "b": json_value(r["b"]), "n": r["n"], "rids": [str(x) for x in r["rids"]]}
            for r in table.to_pylist()
        ]
        return {"a": a, "b": b, "violating": total, "shown": len({json.dumps(p["a"]) for p in pairs}), "pairs": pairs}

    # why and how ----------------------------------------------------------------------

    def provenance(self, name: str, version: int, rids: Any) -> dict:
        """Why and how provenance of output rows ``rids`` (at most ``PROVENANCE_MAX``),
        from the witnesses the capture kept: each row's values, its polynomial over
        source rows, and its witnesses (sets of source rows that derive it)."""
        from ..query.provenance import polynomials

        entry = self.store.load(name, version)
        outs = parse_rids(rids)
        if len(outs) > PROVENANCE_MAX:
            raise InvalidArgument(f"why and how are shown for at most {PROVENANCE_MAX} rows at once, not {len(outs)}")
        found = polynomials(entry, outs)
        rows = self._output_rows(entry, outs)
        shown = _rows(rows)
        answers = []
        for rid, values in zip(shown["rids"], shown["rows"]):
            p = found[int(rid)]
            witnesses = [[[s, str(r)] for s, r in w] for w in sorted(sorted(w) for w in p.witnesses())]
            how = str(p)
            answers.append(
                {
                    "rid": rid,
                    "row": values,
                    # a group of many rows has a long polynomial and one large witness:
                    # the page shows their start and says how much more there is
                    "how": how[:SHOWN_CHARS],
                    "how_chars": len(how),
                    "why": [{"rows": w[:SHOWN_ROWS], "size": len(w)} for w in witnesses[:SHOWN_ROWS]],
                    "witnesses": len(witnesses),
                }
            )
        return {"columns": shown["columns"], "rows": answers}

    # traces -------------------------------------------------------------------------

    def _engine(self, entry: CaptureEntry) -> tuple[EmbeddedEngine, threading.Lock]:
        key = (entry.name, entry.version)
        with self._lock:
            found = self._engines.pop(key, None) or (EmbeddedEngine(entry), threading.Lock())
            self._engines[key] = found
            while len(self._engines) > self._keep:
                self._engines.popitem(last=False)
        return found

    def backward(
        self,
        name: str,
        version: int,
        rids: Any = None,
        where: str | None = None,
        source: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> dict:
        """The source rows behind output rows ``rids`` (or every output row matching
        ``where``): per source (or ``source`` alone), how many, and rows ``offset`` to
        ``offset + limit`` of them in rid order."""
        offset, limit = _page(offset, limit)
        entry = self.store.load(name, version)
        engine, lock = self._engine(entry)
        with lock:
            outs = parse_rids(rids) if where is None else engine.output_rids(where)
            answer = {}
            for src in [source] if source is not None else engine.sources:
                ids = engine.backward_ids(outs, src)
                rows = engine.source_rows(src, ids[offset : offset + limit])
                answer[src] = {"count": len(ids), "offset": offset, **_rows(rows)}
        return {"matched": len(outs), "sources": answer}

    def forward(self, name: str, version: int, source: str, rids: Any, offset: int = 0, limit: int = 50) -> dict:
        """The output rows that rows ``rids`` of ``source`` contributed to: how many,
        and rows ``offset`` to ``offset + limit`` of them in rid order."""
        offset, limit = _page(offset, limit)
        entry = self.store.load(name, version)
        engine, lock = self._engine(entry)
        ins = parse_rids(rids)
        with lock:
            ids = engine.forward_ids(source, ins)
        rows = self._output_rows(entry, ids[offset : offset + limit])
        return {"matched": len(ins), "count": len(ids), "offset": offset, **_rows(rows)}
