"""The data forms a Python function of mapInPandas / applyInPandas (and their Arrow
forms) sees: pandas DataFrames, pyarrow Tables and RecordBatches, and iterators of
them. What a declared function needs of each: its rows' positions, a column's values,
columns dropped or added.

>>> import pandas as pd
>>> batches = positioned(iter([pd.DataFrame({"x": [1, 2]}), pd.DataFrame({"x": [3]})]))
>>> [list(b.index) for b in batches]
[[0, 1], [2]]
>>> without(pd.DataFrame({"x": [1], "inputs": [[0]]}), ("inputs",)).columns.tolist()
['x']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def is_pandas(data: Any) -> bool:
    return type(data).__module__.startswith("pandas") and hasattr(data, "iloc")


def is_arrow(data: Any) -> bool:
    return type(data).__module__.startswith("pyarrow") and hasattr(data, "num_rows")


def row_count(data: Any) -> int:
    return data.num_rows if is_arrow(data) else len(data)


def positioned_frame(data: Any, start: int = 0) -> Any:
    """A pandas frame whose index is its rows' positions in the function's input,
    counted from ``start`` (so ``out.index`` after filters and row-wise steps names
    the input rows); other forms as they are (their positions are their order)."""
    if not is_pandas(data):
        return data
    import pandas as pd

    index = pd.RangeIndex(start, start + len(data))
    if isinstance(data.index, pd.RangeIndex) and data.index.equals(index):
        return data
    return data.set_axis(index, axis=0)


def positioned(batches: Iterable) -> Iterator:
    """Batches numbered across the whole iterator (pandas indexes continue)."""
    start = 0
    for batch in batches:
        yield positioned_frame(batch, start)
        start += row_count(batch)


def positioned_arguments(args: tuple) -> list:
    """A function's arguments with its data positioned: frames, and iterators of
    batches (a group's key, a tuple, is left alone)."""
    return [positioned(a) if isinstance(a, Iterator) else positioned_frame(a) for a in args]


def without(data: Any, columns: tuple[str, ...]) -> Any:
    """``data`` without ``columns`` (those it has); an iterator's batches each."""
    if not columns:
        return data
    if isinstance(data, Iterator):
        return (without(b, columns) for b in data)
    if is_pandas(data):
        present = [c for c in columns if c in data.columns]
        return data.drop(columns=present) if present else data
    if is_arrow(data):
        keep = [i for i, n in enumerate(data.schema.names) if n not in columns]
        return data.select(keep) if len(keep) != data.num_columns else data
    return data


def has_column(data: Any, name: str) -> bool:
    return name in (data.schema.names if is_arrow(data) else data.columns)


def column_values(data: Any, name: str) -> list:
    """A column's values as Python objects, one per row."""
    if is_arrow(data):
        return data.column(name).to_pylist()
    return data[name].tolist()


def column_array(data: Any, name: str):
    """A column's values as one NumPy array (object dtype for lists, strings and structs)."""
    if is_arrow(data):
        return data.column(name).to_numpy(zero_copy_only=False)
    return data[name].to_numpy()


def id_matrix(data: Any, names: list[str]):
    """Columns of longs (the input rows' ids, never null) as a NumPy matrix: a row per
    input row, a column per name."""
    import numpy as np

    matrix = np.empty((row_count(data), len(names)), np.int64)
    for k, name in enumerate(names):
        if is_arrow(data):
            matrix[:, k] = data.column(name).to_numpy(zero_copy_only=False)
        else:
            matrix[:, k] = data[name].to_numpy(dtype=np.int64)
    return matrix


def with_lists(data: Any, name: str, lists: Any) -> Any:
    """``data`` with a column ``name`` of arrays of longs, one per row (``lists``: an
    Arrow array of them, or Python lists)."""
    import pyarrow as pa

    if is_arrow(data):
        return _appended(data, name, lists if isinstance(lists, pa.Array) else pa.array(lists, pa.list_(pa.int64())))
    import pandas as pd

    lists = python_lists(lists)  # what PySpark turns into Arrow arrays fastest
    # object dtype even with no rows (an empty list makes float64, which Arrow cannot make arrays of)
    return data.assign(**{name: pd.Series(lists, index=data.index, dtype=object)})


def with_longs(data: Any, name: str, values) -> Any:
    """``data`` with a column ``name`` of longs (``values``: a NumPy array, one per row)."""
    import pyarrow as pa

    if is_arrow(data):
        return _appended(data, name, pa.array(values, pa.int64()))
    return data.assign(**{name: values})


def with_column(data: Any, name: str, values, kind) -> Any:
    """``data`` with a column ``name`` of ``values`` (one per row: a NumPy array or a
    list), of Arrow type ``kind``."""
    import pyarrow as pa

    if is_arrow(data):
        return _appended(data, name, pa.array(values, kind))
    import pandas as pd

    dtype = object if isinstance(values, list) else None  # bytes and None as they are
    return data.assign(**{name: pd.Series(values, index=data.index, dtype=dtype)})


def _appended(data: Any, name: str, array: Any) -> Any:
    """An Arrow RecordBatch or Table with the column ``name`` appended."""
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays([*data.columns, array], names=[*data.schema.names, name])
    return data.append_column(name, array)


def python_lists(lists: Any) -> list:
    """Lists of ids as a declared function's tracer gives them (an Arrow array of lists,
    or Python lists) as Python lists; one id each (the common case) through NumPy.

    >>> import pyarrow as pa
    >>> python_lists(pa.array([[4], [7]], pa.list_(pa.int64())))
    [[4], [7]]
    """
    import numpy as np
    import pyarrow as pa

    if not isinstance(lists, pa.Array):
        return lists
    array = lists
    values = array.values.to_numpy()
    if len(values) == len(array) and array.offset == 0 and (np.diff(array.offsets.to_numpy()) == 1).all():
        return values.reshape(-1, 1).tolist()
    return array.to_pylist()


def split_reported(row: Any, columns: tuple[str, ...], where: str) -> tuple[tuple, list]:
    """A row a Python UDTF yielded, as ``(its values, the values it reports)``: the
    fields named ``columns`` of a Row or a dict, else (a tuple) its last
    ``len(columns)`` values; with no ``columns``, all its values.

    >>> from pyspark.sql import Row
    >>> split_reported(Row(g="a", inputs=[0, 2], n=2), ("inputs",), "partition 0")
    (('a', 2), [[0, 2]])
    >>> split_reported(("a", 2, [0, 2]), ("inputs",), "partition 0")
    (('a', 2), [[0, 2]])
    """
    from ..errors import LineageDeclarationWrong

    names = list(row) if isinstance(row, dict) else getattr(row, "__fields__", None)
    if names is not None:  # named: the reported fields by name
        missing = [c for c in columns if c not in names]
        if missing:
            raise LineageDeclarationWrong(
                f"a row yielded in {where} has no field {missing[0]!r}, where the UDTF declared it reports it: {row!r}"
            )
        return tuple(row[n] for n in names if n not in columns), [row[c] for c in columns]
    values = tuple(row) if isinstance(row, tuple | list) else (row,)
    if columns and len(values) <= len(columns):
        raise LineageDeclarationWrong(
            f"a row yielded in {where} has {len(values)} value(s), where the UDTF declared it reports "
            f"{', '.join(columns)} after its columns: {row!r}"
        )
    cut = len(values) - len(columns)
    return values[:cut], list(values[cut:])
