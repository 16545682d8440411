"""Which forms of lineage a capture keeps that a sparkprov written before them would
misread (``store/format.py``'s ``FEATURES``), named in its catalog entry so that such
a reader refuses it rather than answer wrongly.

>>> from types import SimpleNamespace as S
>>> side = S(shared=True, sets=object(), payload=None, factorable=True)
>>> entry_features([side], {"Window"}, blocked=False)
['window-sets']
>>> entry_features([side], {"Window"}, blocked=None)
['window-blocks', 'window-sets']
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..store.format import KEPT_PAYLOADS, WINDOW_BLOCKS, WINDOW_SETS


def entry_features(sides: Sequence, operators: Collection[str], blocked: bool | None, lazy: bool = False) -> list[str]:
    """The features of a capture whose rewrite made ``sides`` over ``operators``.

    ``blocked``: whether its resolved lineage keeps a window's ranges as blocks; None
    when it is resolved after the entry commits (a deferred capture), when any window
    that may keep them counts. A ``lazy`` capture has no sides until its lineage is
    built: any window counts for both of a window's forms (its functions' lineage is
    built as pairs, never kept payloads).
    """
    if lazy:
        return [WINDOW_BLOCKS, WINDOW_SETS] if "Window" in operators else []
    found = set()
    if any(s.shared and s.sets is not None for s in sides):
        found.add(WINDOW_SETS)
    if any(s.payload is not None for s in sides):
        found.add(KEPT_PAYLOADS)
    if blocked or (blocked is None and any(s.factorable for s in sides)):
        found.add(WINDOW_BLOCKS)
    return sorted(found)
