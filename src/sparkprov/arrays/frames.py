"""Arrays as PySpark users hold them, to and from the NumPy arrays an array workflow
runs on: a DataFrame of cells (a row per cell: its coordinates and value) or of tiles
(a row per tile: its position in the grid of tiles and its values, as an array or
binary column, row-major); and a lineage answer's cells back as a DataFrame, with the
tile each lies in, to join to the rows they came from.

The workflow itself runs in the calling process: the DataFrame is collected (through
Arrow), so it must fit in the driver's memory.

>>> import numpy as np, pyarrow as pa
>>> cells = pa.table({"i": [0, 0, 1, 1], "j": [0, 1, 0, 1], "v": [1.0, 2.0, 3.0, 4.0]})
>>> array_from_cells(cells, ("i", "j"), "v").tolist()
[[1.0, 2.0], [3.0, 4.0]]
>>> tiles = pa.table({"ti": [0, 0], "tj": [0, 1], "data": [[1.0, 2.0], [3.0, 4.0]]})
>>> array_from_tiles(tiles, ("ti", "tj"), "data", (2, 1)).tolist()
[[1.0, 3.0], [2.0, 4.0]]
>>> cells_table(np.array([[1.0, 2.0], [3.0, 4.0]]), [1, 2], tile_shape=(1, 2)).to_pylist()[0]
{'i': 0, 'j': 1, 'value': 2.0, 'ti': 0, 'tj': 0}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument
from .cells import Shape

_NAMES = ("i", "j", "k", "l")


def array_from_cells(
    cells: Any,
    coords: Sequence[str],
    value: str,
    shape: tuple[int, ...] | None = None,
    fill: float | None = None,
    dtype: Any = np.float64,
) -> np.ndarray:
    """The array a DataFrame (or Arrow table) of cells holds: a row per cell, its
    coordinates in the columns ``coords`` (one per dimension) and its value in
    ``value``. The shape is ``shape``, else one past the largest coordinate in each
    dimension; cells no row names (or whose value is null) are ``fill``, and without
    it an error. Two rows for one cell are an error.

    >>> array_from_cells(pa.table({"x": [2], "v": [5]}), ("x",), "v", fill=0).tolist()
    [0.0, 0.0, 5.0]
    """
    if not coords:
        raise InvalidArgument("coords= names a column per dimension of the array")
    table = _table(cells, [*coords, value])
    if table.num_rows == 0 and shape is None:
        raise InvalidArgument("no cells, and no shape= to make an array of")
    at = np.stack([_integers(table, c) for c in coords], axis=1)
    if (at < 0).any():
        raise InvalidArgument(f"cell {tuple(at[(at < 0).any(axis=1)][0].tolist())} has a negative coordinate")
    dims = Shape(tuple(int(d) for d in shape) if shape is not None else tuple((at.max(axis=0) + 1).tolist()))
    if len(dims.dims) != len(coords):
        raise InvalidArgument(f"a shape of {len(dims.dims)} dimensions for {len(coords)} coordinate columns")
    ids = dims.ids(at)  # names a cell outside the shape
    order = np.argsort(ids, kind="stable")
    twice = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if len(twice):
        raise InvalidArgument(f"cell {tuple(at[order[twice[0]]].tolist())} has more than one row")
    values = table.column(value)
    known = np.asarray(values.is_valid()) if values.null_count else np.ones(len(ids), dtype=bool)
    array = np.full(dims.size, 0 if fill is None else fill, dtype=dtype)  # without fill=, none is left
    array[ids[known]] = np.asarray(values.drop_null() if values.null_count else values, dtype=dtype)
    missing = dims.size - int(known.sum())
    if missing and fill is None:
        raise InvalidArgument(
            f"{missing:,} of the {dims.size:,} cells of an array of shape {dims.dims} have no row or a null "
            "value; pass fill= for them"
        )
    return array.reshape(dims.dims)


def array_from_tiles(
    tiles: Any,
    tile: Sequence[str],
    data: str,
    tile_shape: tuple[int, ...],
    shape: tuple[int, ...] | None = None,
    dtype: Any = np.float64,
) -> np.ndarray:
    """The array a DataFrame (or Arrow table) of tiles holds: a row per tile, its
    position in the grid of tiles in the columns ``tile`` (one per dimension) and its
    cells in ``data``, row-major: an array of numbers, or bytes of ``dtype``. Tile
    ``t`` covers cells ``t * tile_shape`` up to the next tile; with ``shape`` the
    tiles at its far edges are cut to it (and hold only the cells inside). Every
    tile of the grid must be there, once.

    >>> t = pa.table({"t": [0, 1], "b": [np.array([1, 2], "f4").tobytes(), np.array([3], "f4").tobytes()]})
    >>> array_from_tiles(t, ("t",), "b", (2,), shape=(3,), dtype="f4").tolist()
    [1.0, 2.0, 3.0]
    """
    if len(tile) != len(tile_shape) or any(int(s) <= 0 for s in tile_shape):
        raise InvalidArgument(f"tile_shape= gives a positive size for each of the {len(tile)} tile columns")
    table = _table(tiles, [*tile, data])
    at = np.stack([_integers(table, c) for c in tile], axis=1)
    step = np.asarray(tile_shape, dtype=np.int64)
    if shape is None:
        shape = tuple(((at.max(axis=0) + 1) * step).tolist()) if table.num_rows else None
    if shape is None:
        raise InvalidArgument("no tiles, and no shape= to make an array of")
    dims = Shape(tuple(int(d) for d in shape))
    grid = Shape(tuple(-(-d // s) for d, s in zip(dims.dims, step.tolist())))
    if len(grid.dims) != len(tile):
        raise InvalidArgument(f"a shape of {len(dims.dims)} dimensions for {len(tile)} tile columns")
    placed = grid.ids(at)  # names a tile outside the grid
    if len(np.unique(placed)) != len(placed) or len(placed) != grid.size:
        seen = set(placed.tolist())
        absent = next((k for k in range(grid.size) if k not in seen), None)
        if absent is not None:
            raise InvalidArgument(f"tile {tuple(grid.coordinates(np.array([absent]))[0].tolist())} has no row")
        raise InvalidArgument("a tile has more than one row")
    array = np.empty(dims.dims, dtype=dtype)
    column = table.column(data).to_pylist()
    sizes = step.tolist()
    for position, values in zip(at.tolist(), column):
        lo = [p * s for p, s in zip(position, sizes)]
        hi = [min(a + s, d) for a, s, d in zip(lo, sizes, dims.dims)]
        extent = [b - a for a, b in zip(lo, hi)]
        cells = np.frombuffer(values, dtype=dtype) if isinstance(values, bytes) else np.asarray(values, dtype=dtype)
        size = int(np.prod(extent))
        if cells.size != size:
            raise InvalidArgument(f"tile {tuple(position)} holds {cells.size} values; it covers {size} cells")
        array[tuple(slice(a, b) for a, b in zip(lo, hi))] = cells.reshape(extent)
    return array


def cells_table(
    array: np.ndarray,
    ids: Any,
    coords: Sequence[str] | None = None,
    value: str = "value",
    tile_shape: tuple[int, ...] | None = None,
    tile: Sequence[str] | None = None,
) -> pa.Table:
    """Cells of ``array`` (``ids``, as a lineage answer gives them) as an Arrow table:
    their coordinates (columns ``coords``: i, j... by default), value, and with
    ``tile_shape`` the position of the tile each lies in (columns ``tile``: ti, tj...),
    to join to the tiles' rows. ``spark.createDataFrame`` takes it as it is."""
    dims = Shape(tuple(array.shape))
    coords = list(coords or _NAMES[: len(dims.dims)])
    if len(coords) != len(dims.dims):
        raise InvalidArgument(f"{len(coords)} coordinate columns for an array of {len(dims.dims)} dimensions")
    ids = np.asarray(ids, dtype=np.int64).ravel()
    if len(ids) and (ids.min() < 0 or ids.max() >= dims.size):
        raise InvalidArgument(f"cell id {int(ids.max() if ids.max() >= dims.size else ids.min())} is outside {dims}")
    at = dims.coordinates(ids)
    columns = {name: at[:, d] for d, name in enumerate(coords)}
    columns[value] = array.ravel()[ids]
    if tile_shape is not None:
        names = list(tile or ["t" + c for c in coords])
        if len(tile_shape) != len(dims.dims) or len(names) != len(dims.dims):
            raise InvalidArgument(f"tile_shape= and tile= give one entry per dimension ({len(dims.dims)})")
        for d, name in enumerate(names):
            columns[name] = at[:, d] // int(tile_shape[d])
    return pa.table(columns)


def _table(data: Any, columns: list[str]) -> pa.Table:
    # a Spark DataFrame collected through Arrow (only the named columns), or an Arrow table
    from pyspark.sql import DataFrame  # classic or Connect

    from ..plan.versions import to_arrow

    if isinstance(data, pa.Table):
        table = data
    elif isinstance(data, DataFrame):
        missing = [c for c in columns if c not in data.columns]
        if missing:
            raise InvalidArgument(f"no column {missing[0]!r}; the DataFrame has {', '.join(data.columns)}")
        table = to_arrow(data.select(*columns))
    else:
        raise InvalidArgument(f"cells or tiles come as a Spark DataFrame or an Arrow table, not {type(data).__name__}")
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InvalidArgument(f"no column {missing[0]!r}; the table has {', '.join(table.column_names)}")
    return table


def _integers(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    if not pa.types.is_integer(column.type):
        raise InvalidArgument(f"column {name!r} holds {column.type}; a coordinate is an integer")
    if column.null_count:
        raise InvalidArgument(f"column {name!r} has a null coordinate")
    return np.asarray(column, dtype=np.int64)
