"""What an operator writes of its lineage (SubZero's ``lwrite``): region pairs, each a
set of output cells that depend on a set of input cells, all to all; or payload pairs,
each a set of output cells and a small payload from which a payload function
(``map_p(cell, payload)``) computes an output cell's input cells at query time.

Pairs are kept as ragged arrays (values and offsets), so a log of millions of cells
holds a few NumPy arrays, and an operator may write many pairs in one call.

>>> log = RegionLog()
>>> log.write([0, 1], [5])
>>> log.write_many([[2], [3]], [[6, 7], [7, 8]])
>>> log.pairs
3
>>> [(o.tolist(), i.tolist()) for o, i in log.regions()]
[([0, 1], [5]), ([2], [6, 7]), ([3], [7, 8])]
>>> out, inp = log.cell_pairs(); list(zip(out.tolist(), inp.tolist()))
[(0, 5), (1, 5), (2, 6), (2, 7), (3, 7), (3, 8)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from ..errors import InvalidArgument
from .cells import distinct, ragged_arange


class Ragged:
    """Lists of cell ids: ``values[offsets[i]:offsets[i+1]]`` is list ``i``."""

    def __init__(self) -> None:
        self._values: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []

    def add(self, lists: list) -> None:
        arrays = [np.asarray(x, dtype=np.int64).ravel() for x in lists]
        self._values.extend(arrays)
        self._lengths.append(np.fromiter((len(a) for a in arrays), np.int64, len(arrays)))

    def add_lists(self, lists) -> None:
        """Lists of cells, or a 2-D array (a list per row, written at once)."""
        if isinstance(lists, np.ndarray) and lists.ndim == 2:
            self.add_matrix(lists)
        else:
            self.add(list(lists))

    def add_matrix(self, matrix: np.ndarray) -> None:
        """One list per row of a 2-D array (lists of one length, written at once)."""
        matrix = np.asarray(matrix, dtype=np.int64)
        self._values.append(matrix.ravel())
        self._lengths.append(np.full(matrix.shape[0], matrix.shape[1], np.int64))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        values = np.concatenate(self._values) if self._values else np.zeros(0, np.int64)
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        self._values, self._lengths = [values], [lengths]
        return values, offsets


class RegionLog:
    """The lineage one operator writes over one input: region pairs or payload pairs
    (not both: an operator's log has one mode)."""

    def __init__(self) -> None:
        self._out = Ragged()
        self._in = Ragged()
        self._payloads: list[bytes] = []
        self.mode: str | None = None

    def _as(self, mode: str) -> None:
        if self.mode not in (None, mode):
            raise InvalidArgument(f"this log holds {self.mode} pairs; it cannot take {mode} pairs too")
        self.mode = mode

    def write(self, outcells, incells) -> None:
        """One region pair: every cell of ``outcells`` depends on every cell of ``incells``."""
        self._as("region")
        self._out.add([outcells])
        self._in.add([incells])

    def write_many(self, outcells, incells) -> None:
        """Many region pairs: ``outcells[i]`` depends on ``incells[i]`` (lists, or 2-D
        arrays when every pair has as many cells)."""
        self._as("region")
        if len(outcells) != len(incells):
            raise InvalidArgument(f"{len(outcells)} sets of output cells but {len(incells)} sets of input cells")
        self._out.add_lists(outcells)
        self._in.add_lists(incells)

    def write_payload(self, outcells, payload: bytes) -> None:
        """One payload pair: the input cells of each of ``outcells`` are ``map_p(cell, payload)``."""
        self.write_payloads([outcells], [payload])

    def write_payloads(self, outcells, payloads: list[bytes]) -> None:
        """Many payload pairs: the input cells of each of ``outcells[i]`` are
        ``map_p(cell, payloads[i])`` (lists, or a 2-D array when every pair has as many
        cells: one cell each, for SubZero's per-pixel payloads)."""
        self._as("payload")
        if len(outcells) != len(payloads):
            raise InvalidArgument(f"{len(outcells)} sets of output cells but {len(payloads)} payloads")
        wrong = next((p for p in payloads if not isinstance(p, bytes)), None)
        if wrong is not None:
            raise InvalidArgument(f"a payload is bytes, not {type(wrong).__name__}")
        self._out.add_lists(outcells)
        self._payloads.extend(payloads)

    @property
    def pairs(self) -> int:
        return len(self.out_cells()[1]) - 1

    def out_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pair's output cells: (values, offsets)."""
        return self._out.arrays()

    def in_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """Every region pair's input cells: (values, offsets)."""
        return self._in.arrays()

    @property
    def payloads(self) -> list[bytes]:
        return self._payloads

    def regions(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        ov, oo = self.out_cells()
        iv, io = self.in_cells()
        for k in range(len(oo) - 1):
            yield ov[oo[k] : oo[k + 1]], iv[io[k] : io[k + 1]]

    def cell_pairs(
        self, map_p: Callable | None = None, outs: np.ndarray | None = None, ins: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every (output cell, input cell) pair, distinct and sorted: the log expanded
        to cell-level lineage (a payload log through ``map_p``). With ``outs`` (or
        ``ins``): only the pairs of those output (input) cells, expanding only the
        region pairs that hold one."""
        ov, oo = self.out_cells()
        owner = owners(oo)
        if self.mode == "payload":
            if map_p is None:
                raise InvalidArgument("a payload log expands to cell pairs only through its payload function")
            wanted = np.ones(len(ov), dtype=bool) if outs is None else np.isin(ov, outs)
            found = [
                (cell, np.asarray(map_p(cell, self._payloads[k]), dtype=np.int64).ravel())
                for cell, k in zip(ov[wanted].tolist(), owner[wanted].tolist())
            ]
            out = np.concatenate([np.full(len(f), c, np.int64) for c, f in found]) if found else _NONE
            inp = np.concatenate([f for _, f in found]) if found else _NONE
        else:
            iv, io = self.in_cells()
            pairs = np.arange(len(oo) - 1)
            if outs is not None:
                pairs = distinct(owner[np.isin(ov, outs)])
            if ins is not None:
                in_owner = owners(io)
                pairs = np.intersect1d(pairs, in_owner[np.isin(iv, ins)])
            out, inp = _expand(ov, oo, iv, io, pairs)
        keep = np.ones(len(out), dtype=bool)
        if outs is not None:
            keep &= np.isin(out, outs)
        if ins is not None:
            keep &= np.isin(inp, ins)
        return _distinct(out[keep], inp[keep])


_NONE = np.zeros(0, np.int64)


def owners(offsets: np.ndarray) -> np.ndarray:
    """For each value of a ragged array, the number of its list."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def _expand(ov, oo, iv, io, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cell pairs of region pairs ``pairs``: each one's output cells times its input cells."""
    o_len, i_len = np.diff(oo)[pairs], np.diff(io)[pairs]
    reps = np.repeat(i_len, o_len)  # per output cell of the chosen pairs: its pair's input count
    o_idx = np.repeat(oo[pairs], o_len) + ragged_arange(o_len)
    out = np.repeat(ov[o_idx], reps)
    starts = np.repeat(np.repeat(io[pairs], o_len), reps)
    within = ragged_arange(reps)
    return out, iv[starts + within]


def _distinct(out: np.ndarray, inp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs without repeats, sorted by output then input cell (one 64-bit key each)."""
    if not len(out):
        return _NONE, _NONE
    width = int(inp.max()) + 1
    if int(out.max()) < (1 << 62) // width:
        keys = distinct(out * width + inp)
        return keys // width, keys % width
    both = np.unique(np.stack([out, inp], axis=1), axis=0)
    return both[:, 0].copy(), both[:, 1].copy()
