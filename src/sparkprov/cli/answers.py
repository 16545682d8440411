"""Trace answers as the command line shows them: per relation, a count and the first rows.

``trace(...)`` answers with the embedded engine when it can (no Spark started) and
with Spark otherwise, or as ``engine`` says; both give the same rows.

>>> Answer("sums", 1, "backward", "embedded", 1, {"dataframe_0": (2, None)}).counts()
{'dataframe_0': 2}
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..capture.restricted import no_such_source, restricted_note
from ..errors import EmbeddedUnsupported, InvalidArgument, LineageTooLarge, StoreUnsupported
from ..plan.predicate import check_predicate
from ..query.embedded import EMBEDDED_LIMIT, EmbeddedEngine, check_engine
from ..query.provenance import polynomials
from ..store import fs
from ..store.entry import CaptureEntry
from ..store.format import RID
from .text_table import cell, render

DIRECTIONS = ("backward", "forward")


@dataclass
class Answer:
    """One trace: the rows it started from (``matched``) and, per relation reached,
    how many rows it has and the first ``limit`` of them (in rid order)."""

    capture: str
    version: int
    direction: str
    engine: str
    matched: int
    relations: dict[str, tuple[int, pa.Table | None]]
    # what limits the answer: a source whose lineage the workload kept for some rows only
    notes: list[str] = field(default_factory=list)
    # the first rows the trace started from (the output rows a backward trace matched)
    started: pa.Table | None = None

    def counts(self) -> dict[str, int]:
        return {name: count for name, (count, _) in self.relations.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "version": self.version,
            "direction": self.direction,
            "engine": self.engine,
            "matched": self.matched,
            "matched_rows": self.started.to_pylist() if self.started is not None else [],
            "relations": {
                name: {"count": count, "rows": rows.to_pylist() if rows is not None else []}
                for name, (count, rows) in self.relations.items()
            },
            "notes": self.notes,
        }

    def to_text(self, null: str = "NULL") -> str:
        start = ("output row" if self.direction == "backward" else "source row") + ("" if self.matched == 1 else "s")
        lines = [f"capture {self.capture!r} v{self.version}: {self.matched} {start} matched ({self.engine} engine)"]
        if self.started is not None and self.started.num_rows:
            shown = self.started.num_rows
            lines.append(("showing " + str(shown) + ":\n" if shown < self.matched else "") + render(self.started, null))
        for name, (count, rows) in self.relations.items():
            shown = rows.num_rows if rows is not None else 0
            more = f", showing {shown}" if shown < count else ""
            lines.append(f"\n{name}: {count} row{'s' if count != 1 else ''}{more}")
            if shown:
                lines.append(render(rows, null))
        lines.extend(f"\nnote: {note}" for note in self.notes)
        return "\n".join(lines)


def source_named(entry: CaptureEntry, given: str | None) -> str | None:
    """The source of capture ``entry`` that ``given`` names: its name, or the base name of
    a source named by its path (as ``sparkprov run`` names the files a script reads) when
    no other source has that base name.

    >>> from sparkprov.store.entry import CaptureEntry
    >>> entry = CaptureEntry("c", 1, 1, "", None, None, None, {"/data/in/orders.csv": None, "items": None})
    >>> source_named(entry, "orders.csv")
    '/data/in/orders.csv'
    """
    if given is None or given in entry.sources:
        return given
    matches = [n for n in entry.sources if n.rstrip("/").rsplit("/", 1)[-1] == given]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(entry.sources)
    if matches:
        raise InvalidArgument(f"source {given!r} of capture {entry.name!r} is ambiguous: it could be {names}")
    raise no_such_source(entry, given)


def trace(
    store_root: str,
    entry: CaptureEntry,
    direction: str,
    where: str,
    source: str | None = None,
    limit: int = 20,
    engine: str = "auto",
    embedded_limit: int = EMBEDDED_LIMIT,
    end_to_end: bool = False,
    source_where: str | None = None,
) -> Answer:
    """Trace the rows matching ``where`` (Spark SQL): output rows ``backward`` to the
    sources (all, or ``source``), or rows of ``source`` ``forward`` to the output.

    ``auto`` uses the embedded engine unless the answer would read more than
    ``embedded_limit`` pairs (or the capture has something it does not read).
    ``end_to_end`` traces on through the captures that wrote this one's sources
    (backward) or read its output (forward), with Spark. ``source_where`` (backward,
    with ``source``) keeps only the source rows satisfying it, as
    ``Capture.backward(..., where=...)`` does.
    """
    check_predicate(where)
    if source_where is not None:
        check_predicate(source_where)
    source = source_named(entry, source)
    if direction not in DIRECTIONS:
        raise InvalidArgument(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    check_engine(engine)
    if direction == "forward" and source is None:
        raise InvalidArgument("a forward trace starts from one source: give its name")
    if limit < 0:
        raise InvalidArgument("limit must be at least 0")
    if source_where is not None and (direction != "backward" or source is None or end_to_end):
        raise InvalidArgument("a source predicate filters one source's rows of a backward trace: give the source")
    if end_to_end:
        if engine == "embedded":
            raise InvalidArgument("end-to-end traces run on Spark: leave the engine at auto or spark")
        return _spark(store_root, entry, direction, where, source, limit, end_to_end=True)
    if engine != "spark":
        try:
            return _embedded(EmbeddedEngine(entry, embedded_limit), direction, where, source, limit, source_where)
        except (LineageTooLarge, EmbeddedUnsupported) as exc:
            if engine == "embedded" or fs.is_remote(store_root):
                raise
            print(f"sparkprov: {exc}; answering with Spark", file=sys.stderr)
    return _spark(store_root, entry, direction, where, source, limit, source_where=source_where)


def _embedded(
    engine: EmbeddedEngine, direction: str, where: str, source: str | None, limit: int, source_where: str | None
) -> Answer:
    entry = engine.entry
    if source is not None:
        engine.check_source(source)
    relations = {}
    if direction == "backward":
        outs = engine.output_rids(where)
        for name in [source] if source is not None else engine.sources:
            ids = engine.backward_ids(outs, name, source_where)
            relations[name] = (len(ids), engine.source_rows(name, ids[:limit]))
        matched = len(outs)
        notes = _notes(entry, relations)
        started = engine.output_rows(outs[:limit])
    else:
        ins = engine.source_rids(source, where)
        ids = engine.forward_ids(source, ins)
        relations[entry.name] = (len(ids), engine.output_rows(ids[:limit]))
        matched = len(ins)
        notes = []
        started = None
    return Answer(entry.name, entry.version, direction, "embedded", matched, relations, notes, started)


def _spark(
    store_root: str,
    entry: CaptureEntry,
    direction: str,
    where: str,
    source: str | None,
    limit: int,
    end_to_end: bool = False,
    source_where: str | None = None,
) -> Answer:
    from ..plan.versions import to_arrow  # with Spark: an embedded answer imports no PySpark

    cap = _loaded(store_root, entry)
    if direction == "backward":
        # end to end, "auto" reads the store's lineage graph where it is built and holds the trace
        engine = "auto" if end_to_end else "spark"
        traced = cap.backward(where, source=source, end_to_end=end_to_end, engine=engine, where=source_where)
        traced = {source: traced} if source is not None else traced
        picked = cap.output.where(where)
        matched = picked.count()
        notes = _notes(entry, traced)
        started = to_arrow(picked.orderBy(RID).limit(limit))
    else:
        found = cap.forward(source, where, end_to_end=end_to_end)
        traced = found if end_to_end else {cap.name: found}
        matched = cap.sources[source].rows().where(where).count()
        notes = []
        started = None
    relations = {name: (df.count(), to_arrow(df.orderBy(RID).limit(limit))) for name, df in traced.items()}
    return Answer(entry.name, entry.version, direction, "spark", matched, relations, notes, started)


def _loaded(store_root: str, entry: CaptureEntry):
    """Capture ``entry``, loaded in a local Spark session started for the command line."""
    import sparkprov as sp

    if fs.is_remote(store_root):
        raise StoreUnsupported(
            f"{store_root} is in an object store, which sparkprov reads with its embedded engine alone (Spark "
            "would need the store's file system in its own, s3a with its jars); drill-downs and end-to-end "
            "traces run on Spark: read them from a local copy of the store"
        )

    from ..local import local_session

    spark = local_session("sparkprov-trace", quiet=True, **{"spark.ui.showConsoleProgress": "false"})
    return sp.LineageSession(spark, store=store_root).load(entry.name, entry.version)


@dataclass
class DrillDown:
    """A drill-down as the command line shows it: the workload's aggregation of
    ``source`` over the lineage of the output rows a predicate matched, one row per group."""

    capture: str
    version: int
    source: str
    matched: int
    groups: pa.Table

    def to_json(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "version": self.version,
            "source": self.source,
            "matched": self.matched,
            "groups": self.groups.to_pylist(),
        }

    def to_text(self, null: str = "NULL") -> str:
        n = self.groups.num_rows
        lines = [
            f"capture {self.capture!r} v{self.version}: {self.matched} output rows matched; "
            f"{self.source}: {n} group{'s' if n != 1 else ''}"
        ]
        if n:
            lines.append(render(self.groups, null))
        return "\n".join(lines)


def drill_down(store_root: str, entry: CaptureEntry, where: str, source: str) -> DrillDown:
    """``Capture.drill_down`` of the output rows matching ``where`` (Spark SQL), with
    Spark: the aggregation the capture's workload declared for ``source``, by group."""
    check_predicate(where)  # before Spark starts
    source = source_named(entry, source)
    from ..plan.versions import to_arrow  # with Spark, as _spark

    cap = _loaded(store_root, entry)
    # the matched rows found once, as drill_down finds them: few as a list (DuckDB's),
    # counted here; more as rows Spark selects, counted there
    rids = cap._drill_rids(where)
    matched = len(rids) if isinstance(rids, list) else rids.count()
    groups = to_arrow(cap.drill_down(rids, source))
    order = [(name, "ascending") for name in groups.column_names]
    return DrillDown(entry.name, entry.version, source, matched, groups.sort_by(order))


def _notes(entry: CaptureEntry, reached) -> list[str]:
    return [note for name in reached if (note := restricted_note(entry, name)) is not None]


@dataclass
class Derivations:
    """Why or how provenance of the output rows a predicate matched: the first
    ``limit`` rows, each with its polynomial (``how``) or its witnesses (``why``)."""

    capture: str
    version: int
    kind: str
    matched: int
    rows: list[dict[str, Any]]  # {"row": output row, "how": text} or {"row": ..., "why": [[[source, rid], ...]]}

    def to_json(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "version": self.version,
            "kind": self.kind,
            "matched": self.matched,
            "rows": self.rows,
        }

    def to_text(self, null: str = "NULL") -> str:
        more = f", showing {len(self.rows)}" if len(self.rows) < self.matched else ""
        lines = [f"capture {self.capture!r} v{self.version}: {self.matched} output rows matched{more}"]
        for item in self.rows:
            row = dict(item["row"])
            rid = row.pop(RID)
            lines.append(f"\n{RID} {rid}: " + ", ".join(f"{k}={cell(v, null)}" for k, v in row.items()))
            if self.kind == "how":
                lines.append(f"  {item['how']}")
            else:
                for i, w in enumerate(item["why"], 1):
                    lines.append(f"  witness {i}: " + ", ".join(f"{s}#{r}" for s, r in w))
        return "\n".join(lines)


def derivations(entry: CaptureEntry, kind: str, where: str, limit: int = 20) -> Derivations:
    """Why (``kind="why"``) or how provenance of the output rows matching ``where``,
    read in this process (the capture must keep witnesses)."""
    if kind not in ("why", "how"):
        raise InvalidArgument(f"kind must be why or how, not {kind!r}")
    if limit < 0:
        raise InvalidArgument("limit must be at least 0")
    engine = EmbeddedEngine(entry)
    outs = engine.output_rids(where)
    shown = outs[:limit]
    found = polynomials(entry, shown)
    rows = []
    for row in engine.output_rows(shown).to_pylist():
        p = found[row[RID]]
        if kind == "how":
            rows.append({"row": row, "how": str(p)})
        else:
            rows.append({"row": row, "why": sorted([list(m) for m in sorted(w)] for w in p.witnesses())})
    return Derivations(entry.name, entry.version, kind, len(outs), rows)


def dumps(answer: Answer | Derivations | DrillDown) -> str:
    """JSON text of an answer (dates, decimals and other values as strings)."""
    return json.dumps(answer.to_json(), indent=1, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    return str(value)
