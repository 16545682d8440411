"""An array's cells as flat ids (row-major), and the cells a query names.

>>> s = Shape((3, 4))
>>> s.ids([(0, 1), (2, 3)]).tolist()
[1, 11]
>>> s.coordinates(s.ids([(2, 3)])).tolist()
[[2, 3]]
>>> cell_ids(s, Box((1, 1), (2, 2))).tolist()
[5, 6, 9, 10]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidArgument


def distinct(values: Any) -> np.ndarray:
    """Cell ids sorted, without repeats: ``np.unique`` for 1-D integer ids, by sorting
    (NumPy 2's default hash-based path is about ten times slower on the half-million
    cells a query step can reach), and at once for ids already sorted. Ids made of a
    few sorted runs (a union of a query step's parts, boxes one after another) are
    merged by Timsort, 20 to 50 times faster than quicksort on them.

    >>> distinct([5, 1, 5, 3]).tolist()
    [1, 3, 5]
    """
    ids = np.asarray(values, dtype=np.int64).ravel()
    if len(ids) < 2:
        return ids.copy()
    descents = int(np.count_nonzero(ids[1:] < ids[:-1]))
    if not descents and bool((ids[1:] != ids[:-1]).all()):
        return ids.copy()
    ids = np.sort(ids, kind="stable" if descents * 64 < len(ids) else None)
    return ids[np.concatenate(([True], ids[1:] != ids[:-1]))]


def distinct_in(values: Any, size: int) -> np.ndarray:
    """``distinct`` for ids below ``size``: through a mask over the array when there
    are many of them (a pass over ``size`` booleans is cheaper than sorting a tenth
    as many ids), else by sorting.

    >>> distinct_in([5, 1, 5, 3], 8).tolist()
    [1, 3, 5]
    """
    ids = np.asarray(values, dtype=np.int64).ravel()
    if len(ids) * 16 < size:
        return distinct(ids)
    mask = np.zeros(size, dtype=bool)
    mask[ids] = True
    return np.flatnonzero(mask)


def member(ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which ``ids`` are among ``keys`` (sorted and distinct, as ``distinct`` gives
    them): a binary search per id, where ``np.isin`` would sort both again.

    >>> member(np.array([4, 1, 7]), np.array([1, 4, 5])).tolist()
    [True, True, False]
    """
    return find(ids, keys)[0]


def find(ids: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``member(ids, keys)``, and for each id the position in ``keys`` where it is (or
    would be inserted): one search tells both.

    >>> [a.tolist() for a in find(np.array([4, 1, 7]), np.array([1, 4, 5]))]
    [[True, True, False], [1, 0, 2]]
    """
    ids = np.asarray(ids, dtype=np.int64)
    if not len(keys):
        return np.zeros(len(ids), dtype=bool), np.zeros(len(ids), dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    return keys[at] == ids, at


@dataclass(frozen=True)
class Shape:
    """The dimensions of an array; a cell's id is its row-major position."""

    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.dims or any(not isinstance(d, int | np.integer) or d <= 0 for d in self.dims):
            raise InvalidArgument(f"an array's shape is a tuple of positive sizes, not {self.dims!r}")

    @property
    def size(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64))

    @property
    def strides(self) -> np.ndarray:
        """How far a cell's id moves for a step in each dimension (row-major)."""
        return np.cumprod((1, *self.dims[:0:-1]), dtype=np.int64)[::-1]

    def ids(self, coordinates) -> np.ndarray:
        """Cells' ids from their coordinates (an ``(n, k)`` array or a list of tuples)."""
        coords = np.asarray(coordinates, dtype=np.int64).reshape(-1, len(self.dims))
        # column by column: NumPy reduces an (n, 2) array along an axis, and multiplies
        # integer matrices, ten times slower than it runs over a column (90 of a
        # 4,000-cell query's 100 µs)
        columns = coords.T
        if len(coords) and any(int(c.min()) < 0 or int(c.max()) >= d for c, d in zip(columns, self.dims)):
            outside = ((coords < 0) | (coords >= np.asarray(self.dims))).any(axis=1)
            raise InvalidArgument(f"cell {tuple(coords[outside][0].tolist())} is outside an array of shape {self.dims}")
        ids = columns[0].copy()
        for column, d in zip(columns[1:], self.dims[1:]):
            ids *= d
            ids += column
        return ids

    def coordinates(self, ids: np.ndarray) -> np.ndarray:
        """Cells' coordinates (``(n, k)``) from their ids."""
        return np.stack(np.unravel_index(np.asarray(ids, dtype=np.int64), self.dims), axis=1)


@dataclass(frozen=True)
class Box:
    """The cells from ``lo`` to ``hi`` in every dimension, both included."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]

    def ids(self, shape: Shape) -> np.ndarray:
        if len(self.lo) != len(shape.dims) or len(self.hi) != len(shape.dims):
            raise InvalidArgument(f"a box over an array of shape {shape.dims} needs {len(shape.dims)} coordinates")
        dims = shape.dims
        lo = [max(int(a), 0) for a in self.lo]
        hi = [min(int(b), d - 1) for b, d in zip(self.hi, dims)]
        if any(a > b for a, b in zip(lo, hi)):
            return np.zeros(0, np.int64)
        # row-major ids by broadcasting each dimension's run onto the ones before it:
        # sorted as they come, and without meshgrid's copies (a query's payload
        # function builds one small box per star, so this is its inner loop)
        ids = np.arange(lo[0], hi[0] + 1, dtype=np.int64)
        for a, b, d in zip(lo[1:], hi[1:], dims[1:]):
            ids = (ids[:, None] * d + np.arange(a, b + 1, dtype=np.int64)).ravel()
        return ids


def box_union(shape: Shape, lo: Any, hi: Any) -> np.ndarray:
    """The sorted, distinct ids of the cells in any of the boxes from ``lo[j]`` to
    ``hi[j]`` (``(n, k)`` coordinates, both included, clipped to the array). Built from
    the boxes' runs along the last dimension, sorted and merged before they are
    expanded, so the ids come out in order: a payload function that turns a step's
    payloads into boxes (a star's bounding box) pays for its runs, not for sorting its
    cells.

    >>> box_union(Shape((3, 4)), [(0, 0), (1, 1)], [(1, 1), (2, 2)]).tolist()
    [0, 1, 4, 5, 6, 9, 10]
    """
    k = len(shape.dims)
    lo = np.maximum(np.asarray(lo, dtype=np.int64).reshape(-1, k), 0)
    hi = np.minimum(np.asarray(hi, dtype=np.int64).reshape(-1, k), np.asarray(shape.dims) - 1)
    keep = np.ones(len(lo), dtype=bool)
    for d in range(k):
        keep &= lo[:, d] <= hi[:, d]
    lo, hi = lo[keep], hi[keep]
    # one (box, id of its cells' leading coordinates) per run, dimension by dimension
    box, lead = np.arange(len(lo)), np.zeros(len(lo), dtype=np.int64)
    for d in range(k - 1):
        extent = hi[box, d] - lo[box, d] + 1
        step = ragged_arange(extent)
        box = np.repeat(box, extent)
        lead = np.repeat(lead, extent) * shape.dims[d] + lo[box, d] + step
    starts = lead * shape.dims[-1] + lo[box, -1]
    ends = lead * shape.dims[-1] + hi[box, -1]
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    if not len(starts):
        return np.zeros(0, np.int64)
    # runs that overlap or touch the ones before them join them
    reach = np.maximum.accumulate(ends)
    first = np.concatenate(([True], starts[1:] > reach[:-1] + 1))
    merged_starts = starts[first]
    merged_ends = np.maximum.reduceat(ends, np.flatnonzero(first))
    lengths = merged_ends - merged_starts + 1
    return np.repeat(merged_starts, lengths) + ragged_arange(lengths)


def ragged_arange(lengths: np.ndarray) -> np.ndarray:
    """``0 .. n-1`` for each ``n`` of ``lengths``, concatenated.

    >>> ragged_arange(np.array([2, 0, 3])).tolist()
    [0, 1, 0, 1, 2]
    """
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def cell_ids(shape: Shape, cells: Any, values: np.ndarray | None = None) -> np.ndarray:
    """The sorted, distinct ids of ``cells``: a Box, a boolean mask of the array's
    shape, coordinates (``(n, k)`` or tuples), for a 1-D array plain positions, or a
    predicate over the array's ``values`` (a function of them giving such a mask).

    >>> cell_ids(Shape((2, 2)), lambda v: v > 2, np.array([[1, 5], [3, 0]])).tolist()
    [1, 2]
    """
    if callable(cells) and not isinstance(cells, Box):
        if values is None:
            raise InvalidArgument("a predicate selects cells by their values; this array's values are not known")
        try:
            cells = np.asarray(cells(values))
        except Exception as e:
            raise InvalidArgument(f"the predicate raised {type(e).__name__}: {e}") from e
        if cells.dtype != bool:
            raise InvalidArgument(f"a predicate must give a boolean mask of the array's shape, not {cells.dtype}")
    if isinstance(cells, Box):
        found = cells.ids(shape)
    elif isinstance(cells, np.ndarray) and cells.dtype == bool:
        if cells.shape != shape.dims:
            raise InvalidArgument(f"a mask of shape {cells.shape} over an array of shape {shape.dims}")
        found = np.flatnonzero(cells.ravel())
    elif isinstance(cells, Sequence | np.ndarray) and len(cells) == 0:
        found = np.zeros(0, np.int64)
    else:
        found = shape.ids(cells)
    return distinct(found)


def as_mask(ids: np.ndarray, size: int) -> np.ndarray:
    """Ids as a boolean array over the whole array (SubZero's query executor's form)."""
    mask = np.zeros(size, dtype=bool)
    mask[ids] = True
    return mask
