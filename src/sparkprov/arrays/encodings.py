"""How an operator's region lineage is stored and queried (SubZero section VI-B, and
a range encoding after DSLog's ProvRC).

Every encoding writes a ``RegionLog`` into a folder of Parquet files and opens it
again as a ``StoredLineage`` answering ``backward(output ids)`` and ``forward(input
ids)`` with sorted, distinct cell ids. An encoding is *backward-optimized* when it is
keyed by output cells (a backward query looks its cells up) and *forward-optimized*
when keyed by input cells; the other direction scans every entry.

* ``FullOne``: one entry per key cell, pointing at its pair's other cells (no index:
  the keys are sorted and looked up);
* ``FullMany``: one entry per region pair, found through an R-tree over the bounding
  boxes of its key cells, then checked cell by cell;
* ``PayOne`` / ``PayMany``: the same for payload pairs (backward-optimized only: a
  payload cannot be indexed by the input cells it stands for); a backward query runs
  the payload function on each output cell it reaches, a forward query on every one;
* ``Ranges``: the pairs expanded and grouped by the input cell's offset from the
  output cell, each group's output cells kept as runs (an operator whose inputs sit at
  fixed offsets, a one-to-one map or a neighbourhood, keeps a few runs per offset);
* ``CellPairs``: every (output cell, input cell) pair, sorted by output cell: cell-level
  lineage, what sparkprov stores for rows.

>>> import tempfile
>>> from sparkprov.arrays.cells import Shape
>>> from sparkprov.arrays.regions import RegionLog
>>> log = RegionLog(); log.write([0, 1], [10, 11]); log.write([5], [11])
>>> shape = Shape((4, 4))
>>> for enc in (FullOne("backward"), FullMany("forward"), Ranges(), CellPairs()):
...     stored = enc.build(log, tempfile.mkdtemp(), shape, shape)
...     print(enc.name, stored.backward([1]).tolist(), stored.forward([11]).tolist())
FullOne← [10, 11] [0, 1, 5]
FullMany→ [10, 11] [0, 1, 5]
Ranges [10, 11] [0, 1, 5]
CellPairs [10, 11] [0, 1, 5]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InvalidArgument
from .cells import Shape, distinct, find, member
from .payload_scans import scan_payloads
from .regions import RegionLog, owners

_META = "_encoding.json"
_WRITE = {"compression": "zstd"}
_EMPTY = np.zeros(0, np.int64)


def folder_bytes(folder: str | Path) -> int:
    """What a stored encoding takes on disk."""
    return sum(p.stat().st_size for p in Path(folder).iterdir() if p.is_file())


def _gather(values: np.ndarray, offsets: np.ndarray, lists: np.ndarray) -> np.ndarray:
    """The values of the ragged lists numbered ``lists``, concatenated."""
    if not len(lists):
        return _EMPTY
    starts, ends = offsets[lists], offsets[lists + 1]
    lengths = ends - starts
    total = int(lengths.sum())
    if not total:
        return _EMPTY
    firsts = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return values[firsts + np.arange(total)]


def _spans(keys: np.ndarray, ids: np.ndarray, unique: bool = False) -> np.ndarray:
    """The positions in sorted ``keys`` of every key equal to one of ``ids``
    (``unique``: no key repeats)."""
    if unique:  # one search: a key is there once or not at all
        hit, at = find(ids, keys)
        return at[hit]
    lo, hi = np.searchsorted(keys, ids, "left"), np.searchsorted(keys, ids, "right")
    offsets = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(hi - lo, out=offsets[1:])
    return np.repeat(lo - offsets[:-1], hi - lo) + np.arange(offsets[-1])


def _list_array(values: np.ndarray, offsets: np.ndarray) -> pa.Array:
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(values, pa.int64()))


def _read_list(table: pa.Table, column: str) -> tuple[np.ndarray, np.ndarray]:
    array = table.column(column).combine_chunks()
    offsets = np.asarray(array.offsets, dtype=np.int64)
    values = np.asarray(array.values, dtype=np.int64)
    return values[offsets[0] : offsets[-1]], offsets - offsets[0]


class StoredLineage:
    """An operator's lineage read back from one encoding."""

    scans_payloads = False  # its forward queries run the payload function on every entry

    def backward(self, out_ids) -> np.ndarray:
        """The input cells the output cells ``out_ids`` depend on (sorted ids)."""
        raise NotImplementedError

    def forward(self, in_ids) -> np.ndarray:
        """The output cells that depend on the input cells ``in_ids`` (sorted ids)."""
        raise NotImplementedError

    def out_cells(self) -> np.ndarray:
        """The output cells an entry was stored for (sorted ids)."""
        raise NotImplementedError

    def split(self, out_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of the sorted, distinct ``out_ids`` have stored entries (a mask), and
        the input cells those depend on: a composite step answers the others by its
        mapping."""
        stored = member(out_ids, self.out_cells())
        return stored, self.backward(out_ids[stored])


class Encoding:
    """A way to store an operator's lineage."""

    mode = "region"  # the pairs it stores: "region", "payload", or "any" (expanded to cell pairs)
    base = ""

    def __init__(self, direction: str = "backward") -> None:
        if direction not in ("backward", "forward"):
            raise InvalidArgument(f"an encoding is backward- or forward-optimized, not {direction!r}")
        if self.mode == "payload" and direction == "forward":
            raise InvalidArgument(f"{self.base} stores payloads, which cannot be indexed by input cells: backward only")
        self.direction = direction

    @property
    def name(self) -> str:
        return self.base + ("←" if self.direction == "backward" else "→")

    def build(
        self, log: RegionLog, folder: str | Path, out_shape: Shape, in_shape: Shape, map_p: Callable | None = None
    ) -> StoredLineage:
        """Write ``log`` into ``folder`` and open it."""
        if self.mode != "any" and log.mode not in (None, self.mode):
            raise InvalidArgument(f"{self.name} stores {self.mode} pairs; the log holds {log.mode} pairs")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        written = self._write(log, folder, out_shape, in_shape, map_p)
        meta = {"encoding": self.base, "direction": self.direction, "out": out_shape.dims, "in": in_shape.dims}
        (folder / _META).write_text(json.dumps(meta))
        return self._opened(folder, map_p, written)

    def _opened(self, folder: Path, map_p: Callable | None, written) -> StoredLineage:
        """The lineage just written, opened; an encoding whose ``_write`` returns what it
        wrote opens that rather than reading its files again."""
        return self.open(folder, map_p)

    def open(self, folder: str | Path, map_p: Callable | None = None) -> StoredLineage:
        raise NotImplementedError

    def _write(self, log: RegionLog, folder: Path, out_shape: Shape, in_shape: Shape, map_p) -> object:
        raise NotImplementedError

    def _keyed(self, log: RegionLog):
        """(key lists, value lists) as ragged arrays: output cells first when backward-optimized."""
        out, inp = log.out_cells(), log.in_cells()
        return (out, inp) if self.direction == "backward" else (inp, out)


class _Lookup(StoredLineage):
    """Lineage keyed one way: ``lookup(ids)`` follows the keys, ``scan(ids)`` every entry."""

    def __init__(self, direction: str) -> None:
        self.direction = direction

    def backward(self, out_ids) -> np.ndarray:
        ids = distinct(out_ids)
        return self.lookup(ids) if self.direction == "backward" else self.scan(ids)

    def forward(self, in_ids) -> np.ndarray:
        ids = distinct(in_ids)
        return self.lookup(ids) if self.direction == "forward" else self.scan(ids)

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def scan(self, ids: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class FullOne(Encoding):
    """One entry per key cell (SubZero's FullOne): sorted keys, each naming its pair's
    other cells, kept once per pair."""

    base = "FullOne"

    def _write(self, log, folder, out_shape, in_shape, map_p) -> None:
        (kv, ko), (vv, vo) = self._keyed(log)
        order = np.argsort(kv, kind="stable")
        keys = pa.table({"key": kv[order], "entry": owners(ko)[order]})
        pq.write_table(keys, folder / "keys.parquet", **_WRITE)
        pq.write_table(pa.table({"cells": _list_array(vv, vo)}), folder / "values.parquet", **_WRITE)

    def open(self, folder, map_p=None) -> StoredLineage:
        return _FullOneLineage(Path(folder), self.direction)


class _FullOneLineage(_Lookup):
    def __init__(self, folder: Path, direction: str) -> None:
        super().__init__(direction)
        keys = pq.read_table(folder / "keys.parquet")
        self.keys = np.asarray(keys.column("key"), dtype=np.int64)
        self.entries = np.asarray(keys.column("entry"), dtype=np.int64)
        self.values, self.offsets = _read_list(pq.read_table(folder / "values.parquet"), "cells")

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        entries = distinct(self.entries[_spans(self.keys, ids)])
        return distinct(_gather(self.values, self.offsets, entries))

    def scan(self, ids: np.ndarray) -> np.ndarray:
        hit = distinct(owners(self.offsets)[np.isin(self.values, ids)])
        return distinct(self.keys[np.isin(self.entries, hit)])


def _boxes(values: np.ndarray, offsets: np.ndarray, shape: Shape) -> tuple[np.ndarray, np.ndarray]:
    """Each list's bounding box: (mins, maxs), one row per list (an empty list: none, NaN)."""
    coords = shape.coordinates(values).astype(np.float64)
    k, lists = len(shape.dims), len(offsets) - 1
    mins, maxs = np.full((lists, k), np.nan), np.full((lists, k), np.nan)
    filled = np.diff(offsets) > 0
    if len(values):
        starts = offsets[:-1][filled]
        mins[filled] = np.minimum.reduceat(coords, starts, axis=0)
        maxs[filled] = np.maximum.reduceat(coords, starts, axis=0)
    return mins, maxs


def _rtree(mins: np.ndarray, maxs: np.ndarray):
    from rtree import index  # an R-tree (libspatialindex), bulk-loaded from the boxes

    kept = ~np.isnan(mins).any(axis=1)
    ids = np.flatnonzero(kept).astype(np.int64)
    props = index.Property(dimension=mins.shape[1])
    if not len(ids):
        return index.Index(properties=props)
    return index.Index((ids, np.ascontiguousarray(mins[kept]), np.ascontiguousarray(maxs[kept])), properties=props)


def _candidates(tree, shape: Shape, ids: np.ndarray) -> np.ndarray:
    """The entries whose boxes hold any of the cells ``ids``."""
    if not len(ids):
        return _EMPTY
    points = shape.coordinates(ids).astype(np.float64)
    found, _ = tree.intersection_v(points, points)
    return distinct(found)


def _write_boxes(folder: Path, values: np.ndarray, offsets: np.ndarray, shape: Shape, extra: dict) -> None:
    mins, maxs = _boxes(values, offsets, shape)
    columns = {"cells": _list_array(values, offsets), **extra}
    for d in range(len(shape.dims)):
        columns[f"min{d}"], columns[f"max{d}"] = mins[:, d], maxs[:, d]
    pq.write_table(pa.table(columns), folder / "entries.parquet", **_WRITE)


def _read_boxes(table: pa.Table, dims: int) -> tuple[np.ndarray, np.ndarray]:
    mins = np.stack([np.asarray(table.column(f"min{d}"), dtype=np.float64) for d in range(dims)], axis=1)
    maxs = np.stack([np.asarray(table.column(f"max{d}"), dtype=np.float64) for d in range(dims)], axis=1)
    return mins, maxs


class FullMany(Encoding):
    """One entry per region pair (SubZero's FullMany), found through an R-tree over the
    bounding boxes of its key cells."""

    base = "FullMany"

    def _write(self, log, folder, out_shape, in_shape, map_p) -> None:
        (kv, ko), (vv, vo) = self._keyed(log)
        key_shape = out_shape if self.direction == "backward" else in_shape
        _write_boxes(folder, kv, ko, key_shape, {"other": _list_array(vv, vo)})

    def open(self, folder, map_p=None) -> StoredLineage:
        return _FullManyLineage(Path(folder), self.direction)


class _FullManyLineage(_Lookup):
    def __init__(self, folder: Path, direction: str) -> None:
        super().__init__(direction)
        meta = json.loads((folder / _META).read_text())
        self.shape = Shape(tuple(meta["out" if direction == "backward" else "in"]))
        table = pq.read_table(folder / "entries.parquet")
        self.keys, self.key_offsets = _read_list(table, "cells")
        self.values, self.offsets = _read_list(table, "other")
        self.tree = _rtree(*_read_boxes(table, len(self.shape.dims)))

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        candidates = _candidates(self.tree, self.shape, ids)
        cells = _gather(self.keys, self.key_offsets, candidates)
        lengths = np.diff(self.key_offsets)[candidates]
        hit = distinct(np.repeat(candidates, lengths)[member(cells, ids)])
        return distinct(_gather(self.values, self.offsets, hit))

    def scan(self, ids: np.ndarray) -> np.ndarray:
        hit = distinct(owners(self.offsets)[np.isin(self.values, ids)])
        return distinct(_gather(self.keys, self.key_offsets, hit))


def _payload_of(map_p: Callable | None, name: str) -> Callable:
    if map_p is None:
        raise InvalidArgument(f"{name} stores payloads: opening it needs the payload function map_p(cell, payload)")
    return map_p


class _Payloads:
    """A stored column of payloads as codes into its distinct values (Arrow's
    dictionary encoding): a query names thousands of cells that share a few hundred
    payloads. Encoded at the first query that reads it, not when the lineage is
    written, so the workflow's run does not pay for it."""

    def __init__(self, payloads: pa.Array) -> None:
        self._payloads = payloads
        self._codes: np.ndarray | None = None
        self._values: list[bytes] = []

    def codes(self) -> np.ndarray:
        if self._codes is None:
            encoded = self._payloads.dictionary_encode()
            self._values = encoded.dictionary.to_pylist()
            self._codes = np.asarray(encoded.indices, dtype=np.int64)
        return self._codes

    def grouped(self, cells: np.ndarray, rows: np.ndarray) -> dict[bytes, np.ndarray]:
        """Each distinct payload of ``rows`` (positions in the column) and the
        ``cells`` (one per row) that carry it, in their order."""
        codes = self.codes()[rows]
        # NumPy sorts 16-bit integers stably by radix, four times faster than 64-bit
        narrow = codes.astype(np.uint16) if len(self._values) <= 1 << 16 else codes
        order = np.argsort(narrow, kind="stable")
        codes, cells = codes[order], np.asarray(cells, dtype=np.int64)[order]
        bounds = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1], [True]))) if len(codes) else []
        values = self._values
        return {values[c]: cells[a:b] for c, a, b in zip(codes[bounds[:-1]].tolist(), bounds[:-1], bounds[1:])}


def _mapped(map_p: Callable, groups: dict[bytes, np.ndarray]) -> np.ndarray:
    """The union of ``map_p(cell, payload)`` over each payload's cells (``groups``);
    with a ``map_p.groups`` (the cells grouped by payload, all at once), one call; with
    a ``map_p.many`` (the cells of one payload at once), one call per payload."""
    together, many = getattr(map_p, "groups", None), getattr(map_p, "many", None)
    if together is not None and groups:
        return distinct(together(list(groups), list(groups.values())))
    if many is not None:
        found = [np.asarray(many(cs, p), dtype=np.int64).ravel() for p, cs in groups.items()]
    else:
        found = [np.asarray(map_p(c, p), dtype=np.int64).ravel() for p, cs in groups.items() for c in cs.tolist()]
    return distinct(np.concatenate(found)) if found else _EMPTY


class PayOne(Encoding):
    """One entry per output cell with its pair's payload (SubZero's PayOne)."""

    mode = "payload"
    base = "PayOne"

    def _write(self, log, folder, out_shape, in_shape, map_p) -> pa.Table:
        ov, oo = log.out_cells()
        owner = owners(oo)
        order = np.argsort(ov, kind="stable")
        payloads = pa.array(log.payloads, pa.large_binary())
        table = pa.table({"key": ov[order], "payload": payloads.take(pa.array(owner[order]))})
        pq.write_table(table, folder / "keys.parquet", **_WRITE)
        return table

    def open(self, folder, map_p=None) -> StoredLineage:
        return _PayOneLineage(pq.read_table(Path(folder) / "keys.parquet"), _payload_of(map_p, self.base))

    def _opened(self, folder, map_p, written) -> StoredLineage:
        # a workflow's run opens what it wrote; its last operators' writes are not hidden
        # behind later ones, and reading the file again was a third of such a write
        return _PayOneLineage(written, _payload_of(map_p, self.base))


class _PayOneLineage(StoredLineage):
    scans_payloads = True

    def __init__(self, table: pa.Table, map_p: Callable) -> None:
        self.keys = np.asarray(table.column("key"), dtype=np.int64)
        # a cell written once (one payload each, as most payload functions write) is
        # found by one binary search
        self.unique = bool((self.keys[1:] > self.keys[:-1]).all())
        self.payloads = _Payloads(table.column("payload").combine_chunks())
        self.map_p = map_p
        self._groups: dict | None = None

    def out_cells(self) -> np.ndarray:
        return self.keys

    def backward(self, out_ids) -> np.ndarray:
        ids = distinct(out_ids)
        return self._read(_spans(self.keys, ids, self.unique))

    def _read(self, rows: np.ndarray) -> np.ndarray:
        return _mapped(self.map_p, self.payloads.grouped(self.keys[rows], rows))

    def split(self, out_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.unique:
            return super().split(out_ids)
        # the search that tells which cells have entries also finds their rows
        stored, at = find(out_ids, self.keys)
        return stored, self._read(at[stored])

    def forward(self, in_ids, deadline: float | None = None) -> np.ndarray:
        if self._groups is None:  # read once, for every forward query after
            self._groups = self.payloads.grouped(self.keys, np.arange(len(self.keys)))
        return scan_payloads(self.map_p, self._groups, distinct(in_ids), deadline)


class PayMany(Encoding):
    """One entry per payload pair, found through an R-tree over its output cells' box
    (SubZero's PayMany)."""

    mode = "payload"
    base = "PayMany"

    def _write(self, log, folder, out_shape, in_shape, map_p) -> None:
        ov, oo = log.out_cells()
        _write_boxes(folder, ov, oo, out_shape, {"payload": pa.array(log.payloads, pa.large_binary())})

    def open(self, folder, map_p=None) -> StoredLineage:
        return _PayManyLineage(Path(folder), _payload_of(map_p, self.base))


class _PayManyLineage(StoredLineage):
    scans_payloads = True

    def __init__(self, folder: Path, map_p: Callable) -> None:
        meta = json.loads((folder / _META).read_text())
        self.shape = Shape(tuple(meta["out"]))
        table = pq.read_table(folder / "entries.parquet")
        self.keys, self.key_offsets = _read_list(table, "cells")
        self.payloads = _Payloads(table.column("payload").combine_chunks())
        self.tree = _rtree(*_read_boxes(table, len(self.shape.dims)))
        self.map_p = map_p
        self._groups: dict | None = None
        self._out_cells: np.ndarray | None = None

    def out_cells(self) -> np.ndarray:
        if self._out_cells is None:  # sorted once, not at every query
            self._out_cells = distinct(self.keys)
        return self._out_cells

    def backward(self, out_ids) -> np.ndarray:
        ids = distinct(out_ids)
        candidates = _candidates(self.tree, self.shape, ids)
        cells = _gather(self.keys, self.key_offsets, candidates)
        owners = np.repeat(candidates, np.diff(self.key_offsets)[candidates])
        inside = member(cells, ids)
        return _mapped(self.map_p, self.payloads.grouped(cells[inside], owners[inside]))

    def forward(self, in_ids, deadline: float | None = None) -> np.ndarray:
        if self._groups is None:  # read once, for every forward query after
            self._groups = self.payloads.grouped(self.keys, owners(self.key_offsets))
        return scan_payloads(self.map_p, self._groups, distinct(in_ids), deadline)


class Ranges(Encoding):
    """The pairs grouped by the input cell's offset from the output cell (``in - out``
    of their ids), each group's output cells kept as runs ``[start, end]``: values
    stored relative to each other and ranges across cells, after DSLog's ProvRC."""

    mode = "any"
    base = "Ranges"

    @property
    def name(self) -> str:
        return self.base  # answers both directions alike

    def _write(self, log, folder, out_shape, in_shape, map_p) -> None:
        out, inp = log.cell_pairs(map_p)
        delta = inp - out
        order = np.lexsort((out, delta))
        delta, out = delta[order], out[order]
        # a run breaks where the offset changes or the output cells stop being consecutive
        breaks = np.ones(len(out), dtype=bool)
        breaks[1:] = (delta[1:] != delta[:-1]) | (out[1:] != out[:-1] + 1)
        starts = np.flatnonzero(breaks)
        ends = np.append(starts[1:], len(out))[: len(starts)] - 1
        table = pa.table({"delta": delta[starts], "start": out[starts], "end": out[ends]})
        pq.write_table(table, folder / "runs.parquet", **_WRITE)

    def open(self, folder, map_p=None) -> StoredLineage:
        return _RangesLineage(Path(folder))


class _RangesLineage(StoredLineage):
    def __init__(self, folder: Path) -> None:
        table = pq.read_table(folder / "runs.parquet")
        delta = np.asarray(table.column("delta"), dtype=np.int64)
        start = np.asarray(table.column("start"), dtype=np.int64)
        end = np.asarray(table.column("end"), dtype=np.int64)
        self.groups = []  # (offset, run starts, run ends), runs sorted by start
        bounds = np.flatnonzero(np.r_[True, delta[1:] != delta[:-1], True]) if len(delta) else []
        for a, b in zip(bounds[:-1], bounds[1:]):
            self.groups.append((int(delta[a]), start[a:b], end[a:b]))

    def _within(self, cells: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        run = np.searchsorted(starts, cells, "right") - 1
        return (run >= 0) & (cells <= ends[np.maximum(run, 0)])

    def backward(self, out_ids) -> np.ndarray:
        ids = distinct(out_ids)
        found = [ids[self._within(ids, s, e)] + d for d, s, e in self.groups]
        return distinct(np.concatenate(found)) if found else _EMPTY

    def forward(self, in_ids) -> np.ndarray:
        ids = distinct(in_ids)
        found = []
        for d, s, e in self.groups:
            outs = ids - d
            found.append(outs[self._within(outs, s, e)])
        return distinct(np.concatenate(found)) if found else _EMPTY


class CellPairs(Encoding):
    """Every (output cell, input cell) pair, sorted by output cell (delta-encoded, as
    sparkprov's pair tables): cell-level lineage."""

    mode = "any"
    base = "CellPairs"

    @property
    def name(self) -> str:
        return self.base

    def _write(self, log, folder, out_shape, in_shape, map_p) -> None:
        out, inp = log.cell_pairs(map_p)
        encoding = {"out": "DELTA_BINARY_PACKED", "in": "DELTA_BINARY_PACKED"}
        table = pa.table({"out": out, "in": inp})
        pq.write_table(table, folder / "pairs.parquet", use_dictionary=False, column_encoding=encoding, **_WRITE)

    def open(self, folder, map_p=None) -> StoredLineage:
        return _CellPairsLineage(Path(folder))


class _CellPairsLineage(StoredLineage):
    def __init__(self, folder: Path) -> None:
        table = pq.read_table(folder / "pairs.parquet")
        self.out = np.asarray(table.column("out"), dtype=np.int64)
        self.inp = np.asarray(table.column("in"), dtype=np.int64)

    def backward(self, out_ids) -> np.ndarray:
        ids = distinct(out_ids)
        return distinct(self.inp[_spans(self.out, ids)])

    def forward(self, in_ids) -> np.ndarray:
        return distinct(self.out[np.isin(self.inp, distinct(in_ids))])


ENCODINGS: dict[str, Callable[[], Encoding]] = {
    "FullOne←": lambda: FullOne("backward"),
    "FullOne→": lambda: FullOne("forward"),
    "FullMany←": lambda: FullMany("backward"),
    "FullMany→": lambda: FullMany("forward"),
    "PayOne←": lambda: PayOne(),
    "PayMany←": lambda: PayMany(),
    "Ranges": lambda: Ranges(),
    "CellPairs": lambda: CellPairs(),
}
