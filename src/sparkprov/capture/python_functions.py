"""Wrappers around the user's Python functions of applyInPandas/applyInArrow and mapInPandas/mapInArrow.

The functions are opaque: capture cannot see which input rows an output row came
from. It calls them as the user's query does, on the same rows, and adds to every
output row one column naming the rows it may depend on:

* applyInPandas / applyInArrow (and their cogroup and iterator forms): the group (a
  handle computed in Spark and the same for all the group's rows, copied from the
  input), so the lineage is every row of the group;
* mapInPandas / mapInArrow: the number of the input partition, which the input rows
  carry (numbered when capture kept them: the task's number differs above a union or
  a coalesce), so the lineage is every row of the input partition (coarse, and
  ``explain()`` says so).

The wrappers hand the user's function exactly the columns (names and order) it got
in the user's query: slot columns never reach Python.

>>> import pandas as pd
>>> wrapped = grouped_map(lambda pdf: pdf.assign(n=len(pdf)), ["x"], 0, "h")
>>> wrapped((1,), pd.DataFrame({"x": [1, 1], "h": ["a", "a"]})).to_dict("list")
{'x': [1, 1], 'n': [2, 2], 'h0': ['a', 'a']}
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator

_CALLS = itertools.count()  # the calls of declared functions keeping payloads in this Python worker


def _user_part(pdf, names: list[str], offset: int):
    user = pdf.iloc[:, offset : offset + len(names)]
    user.columns = names
    return user


def _user_arrow(data, names: list[str], offset: int):
    # a pyarrow Table or RecordBatch: the function's columns under their names
    return data.select(list(range(offset, offset + len(names)))).rename_columns(names)


def _handle_of(pdf, handle: str):
    return pdf[handle].iloc[0] if len(pdf) else None  # an empty side of a cogroup: no rows


def _arrow_handle_of(data, handle: str):
    return data.column(handle)[0].as_py() if data.num_rows else None


def _with_arrow_handles(out, handles: dict):
    import pyarrow as pa

    arrays = [pa.array([h] * out.num_rows, pa.string()) for h in handles.values()]
    if isinstance(out, pa.RecordBatch):
        return pa.RecordBatch.from_arrays([*out.columns, *arrays], names=[*out.schema.names, *handles])
    for name, array in zip(handles, arrays):
        out = out.append_column(name, array)
    return out


def _with_pandas_handles(out, handles: dict):
    return out.assign(**handles)  # a new frame: the function's own is left as it was


def _form(arrow: bool):
    # how to take the function's columns, read a handle and add handles, per data form
    if arrow:
        return _user_arrow, _arrow_handle_of, _with_arrow_handles
    return _user_part, _handle_of, _with_pandas_handles


def _takes_key(func: Callable, data_args: int) -> bool:
    return len(inspect.getfullargspec(func).args) == data_args + 1  # as PySpark decides: f(data) or f(key, data)


def grouped_map(func: Callable, names: list[str], offset: int, handle: str, arrow: bool = False) -> Callable:
    """``func`` of applyInPandas (or applyInArrow: a Table per group), called on columns
    ``offset .. offset+len(names)`` of the group under their original ``names``; every
    output row gets the group's ``handle`` (in column ``handle + "0"``)."""
    with_key = _takes_key(func, 1)
    user_part, handle_of, with_handles = _form(arrow)

    def wrapped(key, data):
        user = user_part(data, names, offset)
        out = func(key, user) if with_key else func(user)
        return with_handles(out, {f"{handle}0": handle_of(data, handle)})

    return wrapped


def grouped_map_iter(func: Callable, names: list[str], offset: int, handle: str, arrow: bool) -> Callable:
    """``func`` of applyInPandas / applyInArrow in their iterator forms (batches of one
    group in, batches out); the wrapper is annotated so PySpark picks that form too."""
    import itertools

    with_key = _takes_key(func, 1)
    user_part, handle_of, with_handles = _form(arrow)

    def wrapped(key, batches):
        first = next(batches, None)
        if first is None:
            return
        handles = {f"{handle}0": handle_of(first, handle)}
        user = (user_part(b, names, offset) for b in itertools.chain([first], batches))
        for out in func(key, user) if with_key else func(user):
            yield with_handles(out, handles)

    return _iter_annotated(wrapped, arrow)


def cogrouped_map(
    func: Callable, left: list[str], right: list[str], offset: int, handle: str, arrow: bool = False
) -> Callable:
    """``func`` of cogroup().applyInPandas / applyInArrow; output rows get both groups' handles."""
    with_key = _takes_key(func, 2)
    user_part, handle_of, with_handles = _form(arrow)

    def wrapped(key, lp, rp):  # three parameters: PySpark then passes the key too
        lu, ru = user_part(lp, left, offset), user_part(rp, right, offset)
        out = func(key, lu, ru) if with_key else func(lu, ru)
        return with_handles(out, {f"{handle}0": handle_of(lp, handle), f"{handle}1": handle_of(rp, handle)})

    return wrapped


def _numbered(batches: Iterator, number: str, first: Callable, without: Callable):
    """The partition's number, read from column ``number`` of its first rows, and its
    batches without that column (the batches read to find it are handed on first)."""
    import itertools

    batches = iter(batches)
    read, found = [], None
    for batch in batches:
        read.append(batch)
        if len(batch):  # a pandas DataFrame's rows or an Arrow batch's
            found = int(first(batch))
            break
    return found, (without(batch) for batch in itertools.chain(read, batches))


def pandas_batches(func: Callable, number: str, part: str) -> Callable:
    """``func`` of mapInPandas; its input rows hold their partition's number in column
    ``number`` (dropped before ``func`` sees them), which its output rows get in column
    ``part``.

    The number is the one the input had when capture kept it, not the task's: above a
    union or a coalesce a task's number is not its input's (None: an empty partition).

    >>> import pandas as pd
    >>> f = pandas_batches(lambda bs: (b.assign(y=b.x * 2) for b in bs), "n", "p")
    >>> [b.to_dict("list") for b in f(iter([pd.DataFrame({"x": [1, 2], "n": [3, 3]})]))]
    [{'x': [1, 2], 'y': [2, 4], 'p': [3, 3]}]
    """

    def wrapped(batches: Iterator) -> Iterator:
        import pandas as pd

        found, inputs = _numbered(batches, number, lambda b: b[number].iloc[0], lambda b: b.drop(columns=number))
        for out in func(inputs):
            yield out.assign(**{part: pd.Series([found] * len(out), index=out.index, dtype="Int32")})

    return wrapped


def arrow_batches(func: Callable, number: str, part: str) -> Callable:
    """``func`` of mapInArrow; as :func:`pandas_batches`, over Arrow record batches."""

    def wrapped(batches: Iterator) -> Iterator:
        import pyarrow as pa

        def without(batch):
            return batch.drop_columns([number])

        found, inputs = _numbered(batches, number, lambda b: b.column(number)[0].as_py(), without)
        for out in func(inputs):
            column = pa.array([found] * out.num_rows, pa.int32())
            yield pa.RecordBatch.from_arrays([*out.columns, column], names=[*out.schema.names, part])

    return wrapped


# Functions that declare their lineage (sp.lineage): every input row carries the id of
# its row in the kept input (column ``row``), which the wrapper takes off before the
# user's function sees the data; each output row gets, per input, the list of ids of
# the rows the declaration names (columns ``handles``), checked by the tracer.


def _traced(tracer, out, handles: list[str]):
    from ..errors import LineageDeclarationWrong
    from ..functions import frames

    decl = tracer.decl
    if decl.mode == "rowwise":  # one id each, as the input rows carried them (the plan's handles are longs)
        for name, values in zip(handles, tracer.rowwise(frames.row_count(out))):
            out = frames.with_longs(out, name, values)
        return out
    reported = None
    if decl.columns:
        missing = [c for c in decl.columns if not frames.has_column(out, c)]
        if missing:
            what = "each row's input positions" if decl.mode == "full" else "each row's payload"
            raise LineageDeclarationWrong(
                f"function {decl.name!r} ({decl.mode} lineage) returned rows in {tracer.where} without column "
                f"{missing[0]!r}, where it declared it reports {what}"
            )
        if decl.keep == "payload":  # the payloads themselves, for map_p to run over when a trace asks
            return _with_payloads(tracer, out, decl.columns[0])
        # a vectorized map_p gets the payloads as one array; otherwise Python values per row
        values = frames.column_array if decl.vectorized else frames.column_values
        reported = [values(out, c) for c in decl.columns]
    lists = tracer.lineage(frames.row_count(out), reported)
    out = frames.without(out, decl.columns)
    for name, values in zip(handles, lists):
        out = frames.with_lists(out, name, values)
    return out


def _with_payloads(tracer, out, column: str):
    from pyspark import TaskContext

    from ..functions import frames
    from ..functions.payloads import CALL_BITS, payload_arrow_types, payload_columns

    if tracer.call is None:  # the call's first rows: named by its partition and its number in this worker
        tracer.call = (TaskContext.get().partitionId() << CALL_BITS) | (next(_CALLS) & ((1 << CALL_BITS) - 1))
    found = payload_columns(tracer, frames.row_count(out), frames.column_values(out, column))
    out = frames.without(out, (column,))
    for (name, values), kind in zip(found.items(), payload_arrow_types(tracer.ids().shape[1])):
        out = frames.with_column(out, name, values, kind)
    return out


# The declared forms: ``ids`` are the input's columns of ids (an input row's source
# rids, or its number in a kept input), ``handles`` the output's columns of them (arrays
# of longs), in that order; for cogroup, the left's then the right's.


def declared_grouped_map(
    decl, names: list[str], offset: int, ids: list[str], handles: list[str], arrow: bool
) -> Callable:
    """A declared function of applyInPandas / applyInArrow (one frame per group)."""
    from ..functions import frames
    from ..functions.tracer import Tracer

    with_key, user_part = _takes_key(decl.function, 1), _form(arrow)[0]

    def wrapped(key, data):
        tracer = Tracer(decl, f"the group of key {key}", key=key, widths=(len(ids),))
        tracer.receive(0, frames.id_matrix(data, ids))
        user = frames.positioned_frame(user_part(data, names, offset))
        out = _traced(tracer, decl.function(key, user) if with_key else decl.function(user), handles)
        tracer.finish()
        return out

    return wrapped


def declared_grouped_map_iter(
    decl, names: list[str], offset: int, ids: list[str], handles: list[str], arrow: bool
) -> Callable:
    """A declared function of applyInPandas / applyInArrow in their iterator forms."""
    from ..functions import frames
    from ..functions.tracer import Tracer

    with_key, user_part = _takes_key(decl.function, 1), _form(arrow)[0]

    def wrapped(key, batches):
        tracer = Tracer(decl, f"the group of key {key}", key=key, widths=(len(ids),))

        def fed():
            for batch in batches:
                tracer.receive(0, frames.id_matrix(batch, ids))
                yield user_part(batch, names, offset)

        data = frames.positioned(fed())
        for out in decl.function(key, data) if with_key else decl.function(data):
            yield _traced(tracer, out, handles)
        tracer.finish()

    return _iter_annotated(wrapped, arrow)


def _iter_annotated(wrapped: Callable, arrow: bool) -> Callable:
    # PySpark picks the iterator form from the type hints
    from typing import Any

    import pandas as pd
    import pyarrow as pa

    batch = pa.RecordBatch if arrow else pd.DataFrame
    wrapped.__annotations__ = {
        "key": tuple[pa.Scalar, ...] if arrow else tuple[Any, ...],
        "batches": Iterator[batch],
        "return": Iterator[batch],
    }
    return wrapped


def declared_cogrouped_map(
    decl, left: list[str], right: list[str], offset: int, ids: tuple[list[str], list[str]], handles: list[str], arrow
):
    """A declared function of cogroup().applyInPandas / applyInArrow: per output row,
    its left and its right input rows."""
    from ..functions import frames
    from ..functions.tracer import Tracer

    with_key = _takes_key(decl.function, 2)
    user_part = _form(arrow)[0]

    def wrapped(key, lp, rp):
        tracer = Tracer(decl, f"the cogroup of key {key}", sides=2, key=key, widths=tuple(len(i) for i in ids))
        tracer.receive(0, frames.id_matrix(lp, ids[0]))
        tracer.receive(1, frames.id_matrix(rp, ids[1]))
        lu = frames.positioned_frame(user_part(lp, left, offset))
        ru = frames.positioned_frame(user_part(rp, right, offset))
        out = decl.function(key, lu, ru) if with_key else decl.function(lu, ru)
        out = _traced(tracer, out, handles)
        tracer.finish()
        return out

    return wrapped


def declared_batches(decl, ids: list[str], handles: list[str]) -> Callable:
    """A declared function of mapInPandas / mapInArrow (the partition's batches)."""

    def wrapped(batches: Iterator) -> Iterator:
        from pyspark import TaskContext

        from ..functions import frames
        from ..functions.tracer import Tracer

        tracer = Tracer(decl, f"partition {TaskContext.get().partitionId()}", widths=(len(ids),))

        def fed():
            for batch in batches:
                tracer.receive(0, frames.id_matrix(batch, ids))
                yield frames.without(batch, tuple(ids))

        for out in decl.function(frames.positioned(fed())):
            yield _traced(tracer, out, handles)
        tracer.finish()

    return wrapped


def declared_udtf(decl, id_count: int) -> type:
    """A declared Python UDTF class (``sp.lineage`` on the class) as capture calls it: its
    eval() gets one more argument, the ids of its input row (an array of ``id_count``
    longs: the rids of the source rows behind the row), and every row it or terminate()
    yields gets, per id, the list of ids the declaration names for it."""
    cls = decl.function  # the user's own class: its rows still hold what they report
    # PySpark hands an analyze() result to a constructor of one argument: the same arity as the user's
    takes_result = len(inspect.getfullargspec(cls).args) == 2

    class Traced:
        def _start(self, *args):
            from pyspark import TaskContext

            from ..functions.tracer import Tracer

            self._inner = cls(*args)
            where = f"partition {TaskContext.get().partitionId()}"
            self._tracer = Tracer(decl, where, widths=(id_count,))

        if takes_result:

            def __init__(self, analyze_result):
                self._start(analyze_result)

        else:

            def __init__(self):
                self._start()

        def _traced(self, rows):
            from ..functions import frames

            for row in rows if rows is not None else ():
                values, reported = frames.split_reported(row, decl.columns, self._tracer.where)
                lists = self._tracer.lineage(1, [[r] for r in reported] if decl.columns else None)
                yield (*values, *[frames.python_lists(found)[0] for found in lists])

        def eval(self, *args, **kwargs):
            import numpy as np

            *args, ids = args
            self._tracer.receive(0, np.asarray([ids], dtype=np.int64))
            yield from self._traced(self._inner.eval(*args, **kwargs))

        def terminate(self):
            if callable(getattr(self._inner, "terminate", None)):
                yield from self._traced(self._inner.terminate())
            self._tracer.finish()

        def cleanup(self):
            if callable(getattr(self._inner, "cleanup", None)):
                self._inner.cleanup()

    Traced.__name__ = Traced.__qualname__ = cls.__name__
    return Traced
