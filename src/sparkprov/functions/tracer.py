"""A declared function's lineage in the Python worker that runs it: the input rows'
ids recorded as the function receives them, each output row's input positions (as
the function reported them or as its mapping gives them) checked and turned into
those ids.

An input row may carry several ids (one per column of ``receive``'s matrix: the rids
of the source rows behind it, one source per column); a negative id is no row (an
outer join's missing side) and names nothing.

>>> import numpy as np
>>> from sparkprov.functions.declare import Declaration
>>> t = Tracer(Declaration("rowwise", len), "partition 0")
>>> t.receive(0, np.array([10, 11]))
>>> [a.to_pylist() for a in t.lineage(2)]
[[[10], [11]]]
>>> t.finish()
>>> joined = Tracer(Declaration("map", len, backward=lambda i, meta: [0, 1]), "partition 0", widths=(2,))
>>> joined.receive(0, np.array([[10, 20], [11, -1]]))
>>> [a.to_pylist() for a in joined.lineage(1)]  # per id column, per output row
[[[10, 11]], [[20]]]
>>> shifted = Declaration("map", len, backward=lambda rows, meta: rows + 1, vectorized=True)
>>> s = Tracer(shifted, "partition 0")
>>> s.receive(0, np.array([10, 11, 12]))
>>> s.lineage(2)[0].to_pylist()  # one call for both rows
[[11], [12]]
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import LineageDeclarationWrong
from .declare import Declaration


class Tracer:
    """The lineage of one call of a declared function (a group, or a partition of
    mapInPandas), over ``sides`` inputs (two for cogroup)."""

    def __init__(
        self, decl: Declaration, where: str, sides: int = 1, key: Any = None, widths: tuple[int, ...] | None = None
    ) -> None:
        self.decl, self.where, self.key = decl, where, key
        # per side, the ids received: ``widths[side]`` per input row
        self._ids = [_Ids(w) for w in (widths or (1,) * sides)]
        self.received = [0] * sides
        self.produced = 0
        self.ids_sent = 0  # input rows whose ids went out with kept payloads (functions/payloads.py)
        self.call: int | None = None  # with kept payloads, the call's id: unique among the function's calls
        self._backward: list[list[list[int]]] = []  # per output row, per side: kept for forward's check

    def receive(self, side: int, ids) -> None:
        """The ids of the next input rows of ``side``, in the order the function gets them
        (a vector, or a matrix of a row per input row)."""
        self._ids[side].extend(ids)
        self.received[side] += len(ids)

    def ids(self, side: int = 0):
        """The ids received on ``side`` so far: a row per input row, a column per id."""
        return self._ids[side].view()

    def _meta(self) -> dict:
        rows = self.received[0] if len(self.received) == 1 else tuple(self.received)
        return {"input_rows": rows, "key": self.key}

    def lineage(self, rows: int, reported: list | None = None) -> list:
        """Per side and id column, per output row of the next ``rows``: the ids of its
        input rows, as an Arrow array of lists. ``reported``: the values of the declared
        columns (full lineage's positions per side, or the payload)."""
        import numpy as np

        decl = self.decl
        start = self.produced
        positions = np.arange(start, start + rows, dtype=np.int64)
        if decl.mode == "rowwise":  # one id per row, in order: no per-row work
            found = [_Ragged.one_each(positions)]
        elif decl.mode == "full":
            found = [self._as_ragged(r, positions, side) for side, r in enumerate(reported or [])]
        elif decl.vectorized:
            found = self._vectorized(positions, reported[0] if reported else None)
        else:  # a call per row
            lengths = [np.empty(rows, np.int64) for _ in self.received]
            every: list[list[int]] = [[] for _ in self.received]
            for i, position in enumerate(range(start, start + rows)):
                if decl.mode == "map" or decl.mode == "composite" and _absent(reported[0][i]):
                    got = self._mapped(position)
                else:
                    got = self._paid(position, reported[0][i])
                for side, p in enumerate(got):
                    checked = self._checked(position, side, p)
                    lengths[side][i] = len(checked)
                    every[side].extend(checked)
            found = [_Ragged.of(n, np.array(e, np.int64)) for n, e in zip(lengths, every)]
        for side, ragged in enumerate(found):
            bad = np.nonzero((ragged.values < 0) | (ragged.values >= self.received[side]))[0]
            if len(bad):  # raises, naming the first such row
                row = int(np.searchsorted(ragged.offsets, bad[0], side="right")) - 1
                self._checked(start + row, side, ragged.row(row))
        self.produced += rows
        if decl.forward is not None:
            self._backward.extend([r.row(i) for r in found] for i in range(rows))
        return [
            found[side].ids(ids[:, k])
            for side, ids in enumerate(a.view() for a in self._ids)
            for k in range(ids.shape[1])
        ]

    def rowwise(self, rows: int) -> list:
        """Rowwise lineage's ids as the input rows carried them: per id column, the ids of
        the next ``rows`` input rows (a NumPy array; -1: no row)."""
        start = self.produced
        if start + rows > self.received[0]:  # raises: more output rows than input rows so far
            self._checked(self.received[0], 0, [self.received[0]])
        self.produced += rows
        ids = self._ids[0].view()
        return [ids[start : start + rows, k] for k in range(ids.shape[1])]

    def _as_ragged(self, values: Any, positions, side: int) -> _Ragged:
        # one side's positions, one entry per output row at ``positions`` (an integer
        # each, or a sequence of them), as one array of them and each row's offset
        import numpy as np

        flat = _flat(values, len(positions))
        if flat is not None:  # one position per row: no per-row work
            return _Ragged.one_each(flat)
        lengths, every = np.empty(len(positions), np.int64), []
        for k, value in enumerate(_by_position(values)):
            found = self._checked(int(positions[k]), side, _positions(value))
            lengths[k] = len(found)
            every.extend(found)
        return _Ragged.of(lengths, np.array(every, np.int64))

    def _vectorized(self, positions, payloads: Any) -> list[_Ragged]:
        # vectorized lineage: the mapping and map_p each called once for the rows they
        # cover (composite: the rows without a payload, then those with one)
        import numpy as np

        decl = self.decl
        if decl.mode == "map":
            return self._called_at_once("backward mapping", decl.backward, positions)
        values, absent = _payload_array(payloads, len(positions))
        if decl.mode == "payload":
            return self._called_at_once("map_p", decl.map_p, positions, values)
        mapped, paid = np.nonzero(absent)[0], np.nonzero(~absent)[0]
        parts = [
            (mapped, self._called_at_once("backward mapping", decl.backward, positions[mapped])),
            (paid, self._called_at_once("map_p", decl.map_p, positions[paid], values[paid])),
        ]
        return [
            _Ragged.merged([(at, found[side]) for at, found in parts], len(positions))
            for side in range(len(self.received))
        ]

    def _called_at_once(self, what: str, function: Callable, positions, *more) -> list[_Ragged]:
        # a vectorized function called once for the rows at ``positions``: per side, their positions
        import numpy as np

        rows = len(positions)
        if not rows:
            return [_Ragged.of(np.zeros(0, np.int64), np.zeros(0, np.int64)) for _ in self.received]
        what = f"vectorized {what}"
        try:
            found = function(positions, *more, self._meta())
        except Exception as e:
            raise self.wrong(int(positions[0]), f"its {what} raised {type(e).__name__}: {e}") from e
        sides = [found] if len(self.received) == 1 else found
        if not isinstance(sides, tuple | list) or len(sides) != len(self.received):
            raise self.wrong(int(positions[0]), f"a cogrouped function's {what} must give (left, right) positions")
        for side in sides:
            if not hasattr(side, "__len__") or len(side) != rows:
                raise self.wrong(
                    int(positions[0]), f"its {what} must give the positions of each of the {rows} rows it was given"
                )
        return [self._as_ragged(values, positions, side) for side, values in enumerate(sides)]

    def _mapped(self, position: int) -> list:
        return self._called(position, lambda: "backward mapping", self.decl.backward, position, self._meta())

    def _paid(self, position: int, payload: Any) -> list:
        what = lambda: f"map_p (on payload {payload!r:.60})"  # noqa: E731 - said only when wrong
        return self._called(position, what, self.decl.map_p, position, payload, self._meta())

    def _called(self, position: int, what: Callable[[], str], function, *args) -> list:
        # a mapping's positions per side, from a function the declaration gave
        try:
            found = function(*args)
        except Exception as e:
            raise self.wrong(position, f"its {what()} raised {type(e).__name__}: {e}") from e
        if len(self.received) == 1:
            return [_positions(found)]
        if not isinstance(found, tuple | list) or len(found) != len(self.received):
            raise self.wrong(position, f"a cogrouped function's {what()} must give (left, right) positions")
        return [_positions(f) for f in found]

    def _checked(self, position: int, side: int, found: list | None) -> list[int]:
        if found is None:
            raise self.wrong(position, "its input positions are not integers")
        bad = [p for p in found if not 0 <= p < self.received[side]]
        if bad:
            got = f"{self.received[side]} row{'s' if self.received[side] != 1 else ''}"
            which = ("left ", "right ")[side] if len(self.received) > 1 else ""
            raise self.wrong(position, f"it names {which}input position {bad[0]}, but the function had received {got}")
        return found

    def wrong(self, position: int, what: str) -> LineageDeclarationWrong:
        """The error naming the function, output row ``position`` and where it ran."""
        return LineageDeclarationWrong(
            f"function {self.decl.name!r} ({self.decl.mode} lineage), output row {position} of {self.where}: {what}"
        )

    def finish(self) -> None:
        """The call is over: checks that need all its rows."""
        if self.decl.mode == "rowwise" and self.produced != self.received[0]:
            raise LineageDeclarationWrong(
                f"function {self.decl.name!r} (rowwise lineage) made {self.produced} rows of {self.received[0]} "
                f"input rows in {self.where}; rowwise lineage needs one output row per input row"
            )
        if self.decl.forward is not None:
            self._check_forward()

    def _check_forward(self) -> None:
        # forward must be backward's inverse: every input row's outputs, exactly
        expected: dict[int, set[int]] = {i: set() for i in range(self.received[0])}
        for out, row in enumerate(self._backward):
            for i in row[0]:
                expected[i].add(out)
        meta = {"input_rows": self.received[0], "output_rows": self.produced, "key": self.key}
        if self.decl.vectorized:
            import numpy as np

            try:
                every = self.decl.forward(np.arange(self.received[0], dtype=np.int64), meta)
            except Exception as e:
                raise self._wrong_forward(0, f"raised {type(e).__name__}: {e}") from e
            if not hasattr(every, "__len__") or len(every) != self.received[0]:
                raise self._wrong_forward(0, f"must give the outputs of each of the {self.received[0]} input rows")
        for i, outs in expected.items():
            try:
                got = _positions(every[i] if self.decl.vectorized else self.decl.forward(i, meta))
            except Exception as e:
                raise self._wrong_forward(i, f"raised {type(e).__name__}: {e}") from e
            if got is None or set(got) != outs:
                raise self._wrong_forward(i, f"gives {sorted(got) if got else got} where backward gives {sorted(outs)}")

    def _wrong_forward(self, position: int, what: str) -> LineageDeclarationWrong:
        return LineageDeclarationWrong(
            f"function {self.decl.name!r} (map lineage), input row {position} of {self.where}: "
            f"its forward mapping {what}"
        )


class _Ids:
    """Ids (``width`` per input row) appended batch by batch into one array that doubles
    when full, so a function that streams (a batch in, a batch out) costs linear time,
    not quadratic."""

    def __init__(self, width: int) -> None:
        import numpy as np

        self._array, self._size = np.zeros((1024, width), np.int64), 0

    def extend(self, ids) -> None:
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64).reshape(-1, self._array.shape[1])
        end = self._size + len(ids)
        if end > len(self._array):
            grown = np.zeros((max(end, 2 * len(self._array)), self._array.shape[1]), np.int64)
            grown[: self._size] = self._array[: self._size]
            self._array = grown
        self._array[self._size : end] = ids
        self._size = end

    def view(self):
        return self._array[: self._size]


class _Ragged:
    """Input positions per output row, as one array: row ``i``'s are
    ``values[offsets[i]:offsets[i + 1]]``."""

    def __init__(self, offsets, values) -> None:
        self.offsets, self.values = offsets, values

    @classmethod
    def one_each(cls, values) -> _Ragged:
        import numpy as np

        return cls(np.arange(len(values) + 1, dtype=np.int64), values)

    @classmethod
    def of(cls, lengths, values) -> _Ragged:
        return cls(_offsets(lengths), values)

    @classmethod
    def merged(cls, parts: list, rows: int) -> _Ragged:
        """The rows of ``parts`` (the rows each holds, and their positions) in row order."""
        import numpy as np

        lengths = np.zeros(rows, np.int64)
        for at, part in parts:
            lengths[at] = np.diff(part.offsets)
        merged = cls.of(lengths, np.empty(int(lengths.sum()), np.int64))
        for at, part in parts:  # each part's values to where its rows start, in order
            counts = np.diff(part.offsets)
            within = np.arange(len(part.values)) - np.repeat(part.offsets[:-1], counts)
            merged.values[np.repeat(merged.offsets[at], counts) + within] = part.values
        return merged

    def row(self, i: int) -> list[int]:
        return self.values[self.offsets[i] : self.offsets[i + 1]].tolist()

    def ids(self, column):
        """The ids in ``column`` (an id per input row) of each row's positions, as an Arrow
        array of lists; negative ids name no row (an outer join's missing side) and are left out."""
        import numpy as np
        import pyarrow as pa

        got, offsets = column[self.values], self.offsets
        named = got >= 0
        if not named.all():
            rows = len(offsets) - 1
            row_of = np.repeat(np.arange(rows), np.diff(offsets))
            got, offsets = got[named], _offsets(np.bincount(row_of[named], minlength=rows))
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(got, pa.int64()))


def _offsets(lengths):
    # where each row's values start, and the end
    import numpy as np

    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _flat(values: Any, rows: int):
    """``values`` (one per output row) as an int64 array when each is one integer, else None."""
    import numpy as np

    if isinstance(values, np.ndarray):
        array = values
    elif hasattr(values, "to_numpy"):  # pandas, Arrow
        try:
            array = values.to_numpy()
        except Exception:  # Arrow arrays with nulls or lists
            return None
    else:
        try:
            array = np.asarray(values)
        except ValueError:  # ragged lists
            return None
    if array.ndim != 1 or len(array) != rows or array.dtype.kind not in "iu":
        return None
    return array.astype(np.int64, copy=False)


def _by_position(values: Any) -> Any:
    # what a vectorized function gave, indexed by position (a pandas Series by its
    # labels, an Arrow array as scalars: both made lists)
    import numpy as np

    if isinstance(values, np.ndarray | list | tuple | range):
        return values
    if hasattr(values, "to_pylist"):
        return values.to_pylist()
    return values.tolist() if hasattr(values, "tolist") else list(values)


def _payload_array(values: Any, rows: int):
    """A payload column (a NumPy array, or values one per row) as a NumPy array, and
    which rows have no payload."""
    import numpy as np

    # lists stay one object per row (np.array would make them a second dimension)
    array = values if isinstance(values, np.ndarray) else np.fromiter(values, object, count=rows)
    if array.dtype.kind == "f":
        absent = np.isnan(array)
    elif array.dtype.kind in "mM":  # timestamps and durations: NaT
        absent = np.isnat(array)
    elif array.dtype.kind == "O":
        try:
            import pandas as pd  # None, NaN, NA and NaT at once
        except ImportError:  # an Arrow function's worker may lack pandas
            absent = np.fromiter((_absent(v) for v in array), bool, count=rows)
        else:
            absent = np.asarray(pd.isna(array), bool)
    else:
        absent = np.zeros(rows, bool)
    return array, absent


def _absent(payload: Any) -> bool:
    # no payload: None, or what pandas and NumPy hold for it (NaN, NA, NaT)
    if payload is None:
        return True
    if isinstance(payload, float):
        return payload != payload
    return type(payload).__name__ in ("NAType", "NaTType")


def _positions(value: Any) -> list[int] | None:
    """Input positions as a function may state them: one integer, a list, array or
    range of them, or nothing (None: no input rows). None back when they are not."""
    if value is None:
        return []
    kind = type(value)  # Python's own ints and lists first: called once per row, where ABC checks cost most
    if kind is int:
        return [value]
    if (kind is list or kind is range) and all(type(p) is int for p in value):
        return list(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)]
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable) and not hasattr(value, "tolist"):
        return None
    items = value.tolist() if hasattr(value, "tolist") else list(value)
    if not isinstance(items, list):
        items = [items]
    if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in items):
        return None
    return [int(p) for p in items]


def declaration_error(error: BaseException) -> LineageDeclarationWrong | None:
    """The ``LineageDeclarationWrong`` a Python worker raised, from the error Spark
    reports on the driver (its message holds the worker's traceback), if it is one.

    >>> declaration_error(RuntimeError("...\\nsparkprov.errors.LineageDeclarationWrong: function 'f': x\\n SQLSTATE"))
    LineageDeclarationWrong("function 'f': x")
    """
    if isinstance(error, LineageDeclarationWrong):
        return None  # raised here already
    marker = f"{LineageDeclarationWrong.__module__}.{LineageDeclarationWrong.__name__}: "
    text = str(error)
    at = text.rfind(marker)
    if at < 0:
        return None
    return LineageDeclarationWrong(text[at + len(marker) :].split("\n")[0].strip())
