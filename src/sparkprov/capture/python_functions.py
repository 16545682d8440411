"""Wrappers around the user's Python functions of applyInPandas and mapInPandas/mapInArrow.

The functions are opaque: capture cannot see which input rows an output row came
from. It calls them as the user's query does, on the same rows, and adds to every
output row one column naming the rows it may depend on:

* applyInPandas: the group (a handle computed in Spark and the same for all the
  group's rows, copied from the input), so the lineage is every row of the group;
* mapInPandas / mapInArrow: the partition number, so the lineage is every row of the
  input partition (coarse, and ``explain()`` says so).

The wrappers hand the user's function exactly the columns (names and order) it got
in the user's query: slot columns never reach Python.

>>> import pandas as pd
>>> wrapped = grouped_map(lambda pdf: pdf.assign(n=len(pdf)), ["x"], 0, "h")
>>> wrapped((1,), pd.DataFrame({"x": [1, 1], "h": ["a", "a"]})).to_dict("list")
{'x': [1, 1], 'n': [2, 2], 'h0': ['a', 'a']}
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator


def _user_part(pdf, names: list[str], offset: int):
    user = pdf.iloc[:, offset : offset + len(names)]
    user.columns = names
    return user


def _handle_of(pdf, handle: str):
    return pdf[handle].iloc[0] if len(pdf) else None  # an empty side of a cogroup: no rows


def grouped_map(func: Callable, names: list[str], offset: int, handle: str) -> Callable:
    """``func`` of applyInPandas, called on columns ``offset .. offset+len(names)`` of
    the group under their original ``names``; every output row gets the group's
    ``handle`` (in column ``handle + "0"``)."""
    with_key = len(inspect.getfullargspec(func).args) == 2  # as PySpark decides: f(pdf) or f(key, pdf)

    def wrapped(key, pdf):
        user = _user_part(pdf, names, offset)
        out = (func(key, user) if with_key else func(user)).copy()
        out[f"{handle}0"] = _handle_of(pdf, handle)
        return out

    return wrapped


def cogrouped_map(func: Callable, left: list[str], right: list[str], offset: int, handle: str) -> Callable:
    """``func`` of cogroup().applyInPandas; output rows get both groups' handles."""
    with_key = len(inspect.getfullargspec(func).args) == 3  # f(l, r) or f(key, l, r)

    def wrapped(key, lp, rp):  # three parameters: PySpark then passes the key too
        lu, ru = _user_part(lp, left, offset), _user_part(rp, right, offset)
        out = (func(key, lu, ru) if with_key else func(lu, ru)).copy()
        out[f"{handle}0"] = _handle_of(lp, handle)
        out[f"{handle}1"] = _handle_of(rp, handle)
        return out

    return wrapped


def pandas_batches(func: Callable, part: str) -> Callable:
    """``func`` of mapInPandas; output rows get the partition number in column ``part``."""

    def wrapped(batches: Iterator) -> Iterator:
        from pyspark import TaskContext

        number = TaskContext.get().partitionId()
        for out in func(batches):
            yield out.assign(**{part: number})

    return wrapped


def arrow_batches(func: Callable, part: str) -> Callable:
    """``func`` of mapInArrow; output batches get the partition number in column ``part``."""

    def wrapped(batches: Iterator) -> Iterator:
        import pyarrow as pa
        from pyspark import TaskContext

        number = TaskContext.get().partitionId()
        for out in func(batches):
            column = pa.array([number] * out.num_rows, pa.int32())
            yield pa.RecordBatch.from_arrays([*out.columns, column], names=[*out.schema.names, part])

    return wrapped
