"""Trace answers as the command line shows them: per relation, a count and the first rows.

``trace(...)`` answers with the embedded engine when it can (no Spark started) and
with Spark otherwise, or as ``engine`` says; both give the same rows.

>>> Answer("sums", 1, "backward", "embedded", 1, {"dataframe_0": (2, None)}).counts()
{'dataframe_0': 2}
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..capture.sources import RID
from ..errors import LineageTooLarge
from .embedded import EMBEDDED_LIMIT, EmbeddedEngine, EmbeddedUnsupported
from .engines import check_engine

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

    def counts(self) -> dict[str, int]:
        return {name: count for name, (count, _) in self.relations.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "version": self.version,
            "direction": self.direction,
            "engine": self.engine,
            "matched": self.matched,
            "relations": {
                name: {"count": count, "rows": rows.to_pylist() if rows is not None else []}
                for name, (count, rows) in self.relations.items()
            },
        }

    def to_text(self) -> str:
        start = "output rows" if self.direction == "backward" else "source rows"
        lines = [f"capture {self.capture!r} v{self.version}: {self.matched} {start} matched ({self.engine} engine)"]
        for name, (count, rows) in self.relations.items():
            shown = rows.num_rows if rows is not None else 0
            more = f", showing {shown}" if shown < count else ""
            lines.append(f"\n{name}: {count} row{'s' if count != 1 else ''}{more}")
            if shown:
                lines.append(rows.to_pandas().to_string(index=False, max_colwidth=40))
        return "\n".join(lines)


def trace(
    store_root: str,
    entry: dict,
    direction: str,
    where: str,
    source: str | None = None,
    limit: int = 20,
    engine: str = "auto",
    embedded_limit: int = EMBEDDED_LIMIT,
) -> Answer:
    """Trace the rows matching ``where`` (Spark SQL): output rows ``backward`` to the
    sources (all, or ``source``), or rows of ``source`` ``forward`` to the output.

    ``auto`` uses the embedded engine unless the answer would read more than
    ``embedded_limit`` pairs (or the capture has something it does not read).
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    check_engine(engine)
    if direction == "forward" and source is None:
        raise ValueError("a forward trace starts from one source: give its name")
    if limit < 0:
        raise ValueError("limit must be at least 0")
    if engine != "spark":
        try:
            return _embedded(EmbeddedEngine(entry, embedded_limit), direction, where, source, limit)
        except (LineageTooLarge, EmbeddedUnsupported) as exc:
            if engine == "embedded":
                raise
            print(f"sparkprov: {exc}; answering with Spark", file=sys.stderr)
    return _spark(store_root, entry, direction, where, source, limit)


def _embedded(engine: EmbeddedEngine, direction: str, where: str, source: str | None, limit: int) -> Answer:
    entry = engine.entry
    if source is not None:
        engine.check_source(source)
    relations = {}
    if direction == "backward":
        outs = engine.output_rids(where)
        for name in [source] if source is not None else engine.sources:
            ids = engine.backward_ids(outs, name)
            relations[name] = (len(ids), engine.source_rows(name, ids[:limit]))
        matched = len(outs)
    else:
        ins = engine.source_rids(source, where)
        ids = engine.forward_ids(source, ins)
        relations[entry["name"]] = (len(ids), engine.output_rows(ids[:limit]))
        matched = len(ins)
    return Answer(entry["name"], entry["version"], direction, "embedded", matched, relations)


def _spark(store_root: str, entry: dict, direction: str, where: str, source: str | None, limit: int) -> Answer:
    import sparkprov as sp

    from ..local import local_session

    spark = local_session("sparkprov-trace", **{"spark.ui.showConsoleProgress": "false"})
    cap = sp.LineageSession(spark, store=store_root).load(entry["name"], entry["version"])
    if direction == "backward":
        traced = cap.backward(where, source=source)
        traced = {source: traced} if source is not None else traced
        matched = cap.output.where(where).count()
    else:
        traced = {cap.name: cap.forward(source, where)}
        matched = cap.sources[source].rows().where(where).count()
    relations = {name: (df.count(), df.orderBy(RID).limit(limit).toArrow()) for name, df in traced.items()}
    return Answer(entry["name"], entry["version"], direction, "spark", matched, relations)


def dumps(answer: Answer) -> str:
    """JSON text of an answer (dates, decimals and other values as strings)."""
    return json.dumps(answer.to_json(), indent=1, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    return str(value)
