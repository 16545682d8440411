"""The linked views as a notebook widget (anywidget): captures over one source as bar
charts, brushed in the notebook, each brush answered in the kernel by the code the
page's server runs (``StoreView.brush``, ``query/linked.py``).

>>> from sparkprov.web.widget import LinkedWidget  # doctest: +SKIP
>>> LinkedWidget(session.store.root, ["flights_by_carrier", "flights_by_hour"])  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import SparkprovError
from .app import STATIC
from .data import StoreView

try:
    import anywidget
    import traitlets
except ImportError:  # the notebook extra is not installed: said when a widget is asked for
    anywidget = traitlets = None


def _status(rows: int, source: str, brushed: int | None = None, chart: str | None = None) -> str:
    if brushed is None:
        return f"{rows:,} rows of {source}; brush bars to filter the other charts"
    return f"{brushed:,} of {rows:,} rows brushed in {chart}"


if anywidget is not None:

    class LinkedWidget(anywidget.AnyWidget):
        """Captures ``captures`` of the store at ``store`` (their newest versions) as
        linked charts over the source they all read (``source`` names it if several);
        ``x`` names each chart's labelling column, ``measure`` what its bars measure
        (``count(*)``, or such as ``avg(arr_delay)``). Brush bars in one chart: the
        others draw, in front of each bar, the measure over the brushed source rows
        behind it."""

        _esm = STATIC / "widget.js"
        _css = STATIC / "charts.css"
        charts = traitlets.List().tag(sync=True)
        counts = traitlets.List().tag(sync=True)
        status = traitlets.Unicode().tag(sync=True)

        def __init__(
            self,
            store: str | os.PathLike,
            captures: Sequence[str],
            source: str | None = None,
            x: Sequence[str | None] | None = None,
            measure: str | None = None,
        ) -> None:
            self._view = StoreView(str(store))
            self._names, self._source, self._x = list(captures), source, list(x) if x is not None else None
            data = self._view.linked(self._names, source, self._x, measure)
            self._measure = data["measure"]
            self._rows, self._of = data["rows"], data["source"]
            charts = [{**c, "measure": data["measure"]} for c in data["charts"]]
            super().__init__(charts=charts, counts=[], status=_status(self._rows, self._of))
            self.on_msg(self._on_message)

        def brush(self, chart: int, groups: Sequence[int]) -> list[list]:
            """Brush ``groups`` of chart ``chart`` (none: clear), as the mouse does: every
            chart's measure of the brushed rows per group, also drawn."""
            groups = list(groups)
            if not groups:
                self.counts, self.status = [], _status(self._rows, self._of)
                return []
            answer = self._view.brush(self._names, chart, groups, self._source, self._x, self._measure)
            self.counts = answer["counts"]
            self.status = _status(self._rows, self._of, answer["brushed"], self.charts[chart]["capture"])
            return answer["counts"]

        def _on_message(self, _widget, content: dict, _buffers) -> None:
            if isinstance(content, dict) and content.get("type") == "brush":
                try:
                    self.brush(content.get("chart"), content.get("groups") or [])
                except SparkprovError as exc:
                    self.status = f"error: {exc}"

else:

    class LinkedWidget:  # type: ignore[no-redef]
        """Needs anywidget: ``pip install 'sparkprov[notebook]'``."""

        def __init__(self, *args, **kwargs) -> None:
            raise SparkprovError("the notebook widget needs anywidget: pip install 'sparkprov[notebook]'")
