"""What a notebook shows of captures, traces and cursors: HTML tables with counts.

Every value is escaped (a row holding ``<script>`` shows it as text).

>>> html = table_html(["k", "n"], [["<b>", None]], caption="sums")
>>> "<td>&lt;b&gt;</td><td><i>NULL</i></td>" in html, html.startswith('<table class="sparkprov"><caption>sums')
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from pyspark.sql import DataFrame

SHOWN = 10  # rows a notebook shows per relation


def _cell(value: Any) -> str:
    return "<td><i>NULL</i></td>" if value is None else f"<td>{escape(str(value))}</td>"


def table_html(columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> str:
    """``rows`` under ``columns`` as an HTML table, every value escaped."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<table class="sparkprov">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


class Traced(dict):
    """``{source: DataFrame}`` as a trace answers it: a dict, which a notebook shows as
    each relation's count and first rows."""

    def _repr_html_(self) -> str:
        return frames_html(self)


def frames_html(frames: dict[str, DataFrame], what: str = "rows") -> str:
    """Each DataFrame's count and first rows (by ``_sp_rid`` where it has one): two
    Spark jobs per DataFrame."""
    parts = []
    for label, df in frames.items():
        count = df.count()
        ordered = df.orderBy("_sp_rid") if "_sp_rid" in df.columns else df
        rows = [list(r) for r in ordered.limit(SHOWN).collect()]
        more = f", first {len(rows)}" if len(rows) < count else ""
        noun = what if count != 1 else what.removesuffix("s")
        parts.append(table_html(df.columns, rows, caption=f"{label}: {count:,} {noun}{more}"))
    return "".join(parts) or "<p>no rows</p>"
