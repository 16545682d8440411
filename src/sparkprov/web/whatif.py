"""What-if from the page: a capture replayed without some source rows (picked by their
rids, or those a predicate holds for), and the diff of its output (``Capture.replay``).
Only the session that made a capture holds its query, so the page replays where it was
opened from that session (``session.ui()``).

>>> from sparkprov.errors import InvalidArgument
>>> try:
...     check_drop({"orders": 7})
... except InvalidArgument as exc:
...     print(exc)
drop names, per source, the row ids to leave out
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..plan.predicate import check_predicate
from .data import json_value

SHOWN = 50  # rows of each part of the diff the page shows


def check_drop(drop: Any, sources: Any = None) -> dict[str, list[int] | str]:
    """``{source: [rids] or predicate}`` as the page sent it, checked (against
    ``sources``, the capture's, when given; a predicate as the API checks one)."""
    if not isinstance(drop, dict) or not drop:
        raise InvalidArgument("drop names, per source, the row ids to leave out")
    checked: dict[str, list[int] | str] = {}
    for source, rids in drop.items():
        if sources is not None and source not in sources:
            raise InvalidArgument(f"the capture has no source {source!r} (sources: {list(sources)})")
        if isinstance(rids, str):  # the rows a predicate holds for
            checked[source] = check_predicate(rids)
            continue
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


def replay_without(capture, drop: dict[str, list[int] | str], key: list[str] | None) -> dict:
    """Replay ``capture`` (a Capture of this session) without the rows ``drop`` names,
    per source (their rids, or a predicate they satisfy): how many source rows were left
    out, how many output rows were added, removed and changed, and the first of each (a
    changed row: its new values and each other column's old one as ``__sp_was_<column>``)."""
    from pyspark.sql import functions as F

    sources = capture.sources
    check_drop(drop, sources)
    replacements, dropped = {}, {}
    for name, rids in drop.items():
        rows = sources[name].rows()
        # a row the predicate does not hold for (false or NULL) stays, as in a WHERE NOT
        leave = F.coalesce(F.expr(rids), F.lit(False)) if isinstance(rids, str) else F.col("_sp_rid").isin(rids)
        kept = rows.where(~leave)
        dropped[name] = rows.where(leave).count() if isinstance(rids, str) else len(rids)
        replacements[name] = kept.drop("_sp_rid")
    if key is not None and (not isinstance(key, list) or not all(isinstance(k, str) for k in key)):
        raise InvalidArgument("key is a list of output columns naming a row")
    replayed = capture.replay(replacements, key or None)
    parts = {"added": _part(replayed.added), "removed": _part(replayed.removed)}
    if replayed.changed is not None:
        parts["changed"] = _part(replayed.changed)
    return {"dropped": dropped, "key": key, **parts}
