"""Traces over an RDD capture as stored, in this process: its records' slots and the
side files of the grouping operators behind them (Titian's lineage tables, joined
when a trace asks, not when the program runs).

A record's slot holds either a source row's rid or the handles of the partial groups
it came from; a side file maps each handle to the slots of the records in that group,
sorted by handle in small row groups. A backward trace looks up the traced records,
then the handles they name, side by side down to the sources: each side is read
once, for the union of the handles every path brings to it. A forward trace scans
the sides from the sources up. ``within(rows)`` is the caller's limit on rows read.

>>> from sparkprov.store.format import Slot
>>> sorted(reached_sources([Slot("g", "groups", 0)], {0: [Slot("s", "source", 3)]}))
[3]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..store.entry import CaptureEntry
from ..store.files import parquet_files
from ..store.format import HANDLE, RID, Slot, slots_from_json
from ..store.layout import CaptureFolders
from ..store.parquet import PairTable, distinct_sorted

_EMPTY = np.array([], np.int64)


def reached_sources(slots: list[Slot], sides: dict[int, list[Slot]]) -> set[int]:
    """Source numbers whose rows ``slots`` can lead to."""
    found: set[int] = set()
    seen: set[int] = set()
    todo = list(slots)
    while todo:
        s = todo.pop()
        if s.kind == "source":
            found.add(s.ref)
        elif s.ref not in seen:
            seen.add(s.ref)
            todo.extend(sides[s.ref])
    return found


class SideLineage:
    """The stored lineage of one RDD capture (its catalog ``entry``)."""

    def __init__(self, entry: CaptureEntry, within: Callable[[int], None]) -> None:
        lineage = entry.lineage
        stored = lineage.rdd
        self._data = CaptureFolders.of(entry)
        self._output = entry.output.path
        self._slots = slots_from_json(stored["slots"])
        self._sides = {int(k): slots_from_json(d["slots"]) for k, d in stored["sides"].items()}
        self._reach = {k: reached_sources(slots, self._sides) for k, slots in self._sides.items()}
        self._within = within
        self._tables: dict[int | None, PairTable] = {}

    def _table(self, k: int | None) -> PairTable:
        """Side ``k``'s files keyed by handle, or (``None``) the records keyed by rid."""
        found = self._tables.get(k)
        if found is None:
            if k is None:
                found = PairTable(parquet_files(self._output), RID, (RID, *(s.name for s in self._slots)))
            else:
                names = (HANDLE, *(s.name for s in self._sides[k]))
                found = PairTable(parquet_files(self._data.side(k)), HANDLE, names)
            self._tables[k] = found
        return found

    def _lookup(self, k: int | None, keys: np.ndarray) -> pa.Table:
        table = self._table(k)
        self._within(table.rows_to_read(keys))
        return table.lookup(keys)

    def _read_all(self, k: int | None) -> pa.Table:
        table = self._table(k)
        self._within(table.rows)
        return table.read_all()

    def backward(self, outs: np.ndarray, number: int) -> np.ndarray:
        """Rids of source ``number``'s rows behind the records ``outs`` (sorted, distinct)."""
        found: list[np.ndarray] = []
        need: dict[int, list[np.ndarray]] = defaultdict(list)

        def follow(rows: pa.Table, slots: list[Slot]) -> None:
            for s in slots:
                column = rows[s.name].combine_chunks()
                if s.kind == "source":
                    if s.ref == number:
                        found.append(column.drop_null().to_numpy())
                elif number in self._reach[s.ref]:
                    need[s.ref].append(pc.list_flatten(column).drop_null().to_numpy())

        follow(self._lookup(None, outs), self._slots)
        while need:  # sides point to earlier ones: the highest first gets every path's handles
            k = max(need)
            handles = _distinct(need.pop(k))
            if len(handles):
                follow(self._lookup(k, handles), self._sides[k])
        return _distinct(found)

    def forward(self, number: int, ins: np.ndarray) -> np.ndarray:
        """Rids of the records source ``number``'s rows ``ins`` contributed to."""
        hit: dict[int, pa.Array] = {}
        wanted = pa.array(ins, pa.int64())

        def touched(rows: pa.Table, slots: list[Slot]) -> np.ndarray:
            mask = np.zeros(rows.num_rows, dtype=bool)
            if not rows.num_rows:  # a side no partition reached: its columns are not even typed
                return mask
            for s in slots:
                column = rows[s.name].combine_chunks()
                if s.kind == "source":
                    if s.ref == number:
                        mask |= pc.fill_null(pc.is_in(column, value_set=wanted), False).to_numpy(zero_copy_only=False)
                elif s.ref in hit and len(hit[s.ref]):
                    inner = pc.fill_null(pc.is_in(pc.list_flatten(column), value_set=hit[s.ref]), False)
                    mask[pc.list_parent_indices(column).to_numpy()[inner.to_numpy(zero_copy_only=False)]] = True
            return mask

        for k in sorted(self._sides):  # a side's inputs are earlier sides: they come first
            if number in self._reach[k]:
                rows = self._read_all(k)
                hit[k] = pa.array(_distinct([rows[HANDLE].to_numpy()[touched(rows, self._sides[k])]]))
        rows = self._read_all(None)
        return _distinct([rows[RID].to_numpy()[touched(rows, self._slots)]])


def _distinct(parts: list[np.ndarray]) -> np.ndarray:
    return distinct_sorted(np.concatenate(parts)) if parts else _EMPTY
