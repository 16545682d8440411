"""What-if from the page: a capture replayed without some source rows, and the diff of
its output (``Capture.replay``). Only the session that made a capture holds its query,
so the page replays where it was opened from that session (``session.ui()``).

>>> from sparkprov.errors import InvalidArgument
>>> try:
...     check_drop({"orders": "all"})
... except InvalidArgument as exc:
...     print(exc)
drop names, per source, the row ids to leave out
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from .data import json_value

SHOWN = 50  # rows of each part of the diff the page shows


def check_drop(drop: Any, sources: Any = None) -> dict[str, list[int]]:
    """``{source: [rids]}`` as the page sent it, checked (against ``sources``, the
    capture's, when given)."""
    if not isinstance(drop, dict) or not drop:
        raise InvalidArgument("drop names, per source, the row ids to leave out")
    checked = {}
    for source, rids in drop.items():
        if sources is not None and source not in sources:
            raise InvalidArgument(f"the capture has no source {source!r} (sources: {list(sources)})")
        if not isinstance(rids, list) or not rids:
            raise InvalidArgument("drop names, per source, the row ids to leave out")
        try:
            checked[source] = [int(r) for r in rids if not isinstance(r, bool)]
        except (TypeError, ValueError):
            raise InvalidArgument("drop's row ids are whole numbers") from None
    return checked


def _part(df) -> dict:
    rows = df.limit(SHOWN).collect()
    return {
        "count": df.count(),
        "columns": df.columns,
        "rows": [[json_value(v) for v in r] for r in rows],
    }


def replay_without(capture, drop: dict[str, list[int]], key: list[str] | None) -> dict:
    """Replay ``capture`` (a Capture of this session) without the rows ``drop`` names,
    per source: how many output rows were added, removed and changed, and the first of
    each (a changed row: its new values and each other column's old one as
    ``__sp_was_<column>``)."""
    from pyspark.sql import functions as F

    sources = capture.sources
    check_drop(drop, sources)
    replacements = {}
    for name, rids in drop.items():
        rows = sources[name].rows()
        replacements[name] = rows.where(~F.col("_sp_rid").isin(rids)).drop("_sp_rid")
    if key is not None and (not isinstance(key, list) or not all(isinstance(k, str) for k in key)):
        raise InvalidArgument("key is a list of output columns naming a row")
    replayed = capture.replay(replacements, key or None)
    parts = {"added": _part(replayed.added), "removed": _part(replayed.removed)}
    if replayed.changed is not None:
        parts["changed"] = _part(replayed.changed)
    return {"dropped": {n: len(r) for n, r in drop.items()}, "key": key, **parts}
