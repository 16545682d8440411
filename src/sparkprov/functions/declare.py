"""``sp.lineage``: a Python function states which input rows each output row came from.

Positions name input rows: a row's position is its number, from 0, in the input the
function is handed (a group's frame for applyInPandas; for mapInPandas and the
iterator forms, the rows of all the batches received so far, in order). pandas frames
are handed to a declared function with those positions as their index, so
``out.index`` names the input rows after filters and other row-wise steps.

Modes (SubZero's lineage modes):

* ``"rowwise"``: output row ``i`` came from input row ``i`` (one output row per input
  row, in order);
* ``"map"``: ``backward(position, meta)`` gives the input positions of the output row
  at ``position``, from positions and metadata alone (``meta``: ``input_rows`` received
  so far, the group's ``key``); an optional ``forward(position, meta)`` gives the output
  positions of an input row and is checked to be its inverse. With ``vectorized=True``
  both take and give arrays of positions, a call per batch rather than per row;
* ``"full"``: the function reports them itself, in an extra output ``column`` holding
  per output row an input position or a list of them (for cogroup, a pair of columns:
  left and right). A run without capture drops the column;
* ``"payload"``: the function reports a small payload per output row in ``column``
  (any value Spark can hold), and ``map_p(position, payload, meta)`` gives the input
  positions from it (for cogroup: left and right); vectorized, once per batch with
  arrays of positions and payloads;
* ``"composite"``: ``backward`` as for map, except for the output rows with a payload
  (not None) in ``column``, where ``map_p`` gives them (SubZero's cosmic-ray pixels);
  vectorized, each called once per batch for the rows it covers;
* ``"blackbox"``: the function reports positions in ``column`` as for full, but capture
  stores nothing of them: the stored lineage is per group or partition (coarse, as for
  an undeclared function, and ``explain()`` says so), and ``backward()`` and
  ``forward()`` in the session that captured the query run it again, over the traced
  rows' stored lineage only, with the column read (SubZero's black box).

A payload's positions are computed as the function runs, and the ids they name are
stored (the payload itself is not kept): a payload ``map_p`` cannot read fails the
capture, never a later query. With ``keep="payload"`` the payloads are kept instead
and ``map_p`` runs when a trace reaches them (SubZero's PayOne: a row per output row
rather than its input rows); a payload that cannot be stored still fails the capture.

A declared function runs as before without capture; with capture its output rows get
exactly the lineage declared, checked as it runs (``LineageDeclarationWrong``).

>>> import pandas as pd, sparkprov as sp
>>> @sp.lineage("full", column="inputs")
... def positive(pdf):
...     out = pdf[pdf.x > 0]
...     return out.assign(inputs=out.index)
>>> positive(pd.DataFrame({"x": [-1, 2, 3]})).to_dict("list")
{'x': [2, 3]}
>>> declaration_of(positive).mode
'full'
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InvalidArgument
from . import frames

MODES = ("rowwise", "map", "full", "payload", "composite", "blackbox")
_REPORTED = ("full", "payload", "composite", "blackbox")  # modes whose function adds a column to its output
_POSITIONS = ("full", "blackbox")  # modes whose column holds input positions (a pair of columns for cogroup)
_VECTORIZED = ("map", "payload", "composite")  # modes whose functions may take arrays of positions
_ATTRIBUTE = "__sparkprov_lineage__"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Declaration:
    """What a function declared about its lineage."""

    mode: str
    function: Callable  # the user's function, undecorated
    columns: tuple[str, ...] = ()  # full: input positions; payload, composite: the payload
    backward: Callable | None = None  # map, composite: output position -> input positions
    forward: Callable | None = None  # map: input position -> output positions (checked)
    map_p: Callable | None = None  # payload, composite: (output position, payload) -> input positions
    vectorized: bool = False  # backward, forward and map_p take and give arrays of positions
    # payload, composite: "pairs" (map_p run as the function runs, its ids stored) or
    # "payload" (the payloads stored, map_p run when a trace asks: SubZero's PayOne)
    keep: str = "pairs"
    why_pairs: str = ""  # keep="payload" asked for but not taken there (explain() says why)

    @property
    def name(self) -> str:
        return getattr(self.function, "__qualname__", None) or repr(self.function)

    def traced(self) -> Declaration:
        """The declaration a blackbox function is run again under: full lineage from its column."""
        return dataclasses.replace(self, mode="full") if self.mode == "blackbox" else self

    def describe(self) -> str:
        """The declaration as ``explain()`` names it."""
        if self.mode == "blackbox":
            return (
                f"blackbox lineage of {self.name}: stored per group or partition; backward() and forward() in the "
                "capturing session run it again over the traced rows' lineage, reading column "
                f"{' and '.join(self.columns)}"
            )
        if self.mode == "full":
            return f"full lineage reported by {self.name} in column {' and '.join(self.columns)}"
        over = "arrays of positions, vectorized" if self.vectorized else "positions"
        if self.mode == "map":
            mapped = "backward and forward mappings" if self.forward else "a backward mapping"
            return f"map lineage of {self.name} ({mapped} over {over})"
        when = "run as it runs" if self.keep == "pairs" else "kept as payloads, run when a trace asks"
        if self.why_pairs:
            when += f"; keep='payload' not taken: {self.why_pairs}"
        if self.mode == "payload":
            at_once = ", vectorized" if self.vectorized else ""
            column = self.columns[0]
            return f"payload lineage of {self.name} (map_p over the payload in column {column}{at_once}, {when})"
        if self.mode == "composite":
            return (
                f"composite lineage of {self.name} (a backward mapping over {over}; map_p over the payload "
                f"in column {self.columns[0]} where a row has one, {when})"
            )
        return f"rowwise lineage of {self.name} (output row i from input row i)"


def lineage(
    mode: str,
    *,
    column: str | tuple[str, str] | None = None,
    backward: Callable[[int, dict], Any] | None = None,
    forward: Callable[[int, dict], Any] | None = None,
    map_p: Callable[[int, Any, dict], Any] | None = None,
    vectorized: bool = False,
    keep: str = "pairs",
) -> Callable[[F], F]:
    """Declare the lineage of a function passed to mapInPandas, mapInArrow,
    applyInPandas, applyInArrow or cogroup().applyInPandas / applyInArrow, or of a
    Python UDTF's class (under ``@udtf``; positions count its eval() calls, and its
    rows report in a Row field named ``column`` or in their last values).

    >>> import sparkprov as sp
    >>> double = sp.lineage("rowwise")(lambda pdf: pdf.assign(x=pdf.x * 2))
    >>> sp.lineage("map", backward=lambda i, meta: [i // 2])(lambda pdf: pdf).__name__
    '<lambda>'
    >>> spans = sp.lineage("payload", column="span", map_p=lambda i, span, meta: range(*span))

    ``vectorized=True`` (map, payload and composite lineage): ``backward`` is called
    once per batch of output rows with a NumPy array of their positions, and gives per
    row its input positions: an integer array (one position each, the fast case) or a
    sequence of positions per row; ``forward``, if given, is called once with every
    input position likewise; ``map_p(positions, payloads, meta)`` gets the rows'
    payloads as a NumPy array beside their positions. A composite function's
    ``backward`` gets the rows without a payload, its ``map_p`` those with one.

    >>> shifted = sp.lineage("map", backward=lambda rows, meta: rows + 1, vectorized=True)
    >>> starts = sp.lineage("payload", column="start", map_p=lambda rows, start, meta: start, vectorized=True)

    ``keep`` (payload and composite lineage): ``"pairs"``, the default, runs ``map_p``
    (and a composite's ``backward``) as the function runs and stores the ids they
    give; ``"payload"`` stores each output row's payload and runs them when a trace
    reaches the row (SubZero's PayOne: a row of a few bytes where its input rows are
    many, paid for at query time). ``map_p`` is then kept in the store (pickled), so a
    trace in another process needs the modules it uses. Kept as payloads for
    applyInPandas, applyInArrow, mapInPandas and mapInArrow (and their iterator forms);
    elsewhere (cogroup, UDTFs, captures with witnesses) ``explain()`` says the pairs
    are kept instead.

    >>> windows = sp.lineage("payload", column="lo", map_p=lambda i, lo, meta: range(lo, i + 1), keep="payload")
    """
    if mode not in MODES:
        raise InvalidArgument(f"unknown lineage mode {mode!r}; modes: {', '.join(MODES)}")
    columns = _columns(mode, column)
    if mode in ("map", "composite"):
        if not callable(backward):
            raise InvalidArgument(
                f"{mode} lineage needs backward=: a function (output position, meta) -> input positions"
            )
    elif backward is not None:
        raise InvalidArgument(f"backward= is for map and composite lineage, not {mode!r}")
    if forward is not None and mode != "map":
        raise InvalidArgument(f"forward= is for map lineage, not {mode!r}")
    if not isinstance(vectorized, bool):
        raise InvalidArgument(f"vectorized= must be True or False, not {vectorized!r}")
    if vectorized and mode not in _VECTORIZED:
        raise InvalidArgument(f"vectorized= is for map, payload and composite lineage, not {mode!r}")
    if forward is not None and not callable(forward):
        raise InvalidArgument("forward= must be a function (input position, meta) -> output positions")
    if mode in ("payload", "composite"):
        if not callable(map_p):
            raise InvalidArgument(
                f"{mode} lineage needs map_p=: a function (output position, payload, meta) -> input positions"
            )
    elif map_p is not None:
        raise InvalidArgument(f"map_p= is for payload and composite lineage, not {mode!r}")
    if keep not in ("pairs", "payload"):
        raise InvalidArgument(f"keep= is 'pairs' or 'payload', not {keep!r}")
    if keep == "payload" and mode not in ("payload", "composite"):
        raise InvalidArgument(f"keep='payload' is for payload and composite lineage, not {mode!r}")

    def declare(function: F) -> F:
        if not callable(function):
            raise InvalidArgument(f"sp.lineage declares a function's lineage; got {type(function).__name__}")
        if declaration_of(function) is not None:
            raise InvalidArgument(f"{getattr(function, '__qualname__', function)!r} already declares its lineage")
        decl = Declaration(mode, function, columns, backward, forward, map_p, vectorized, keep)
        if isinstance(function, type):
            if not callable(getattr(function, "eval", None)):
                raise InvalidArgument(
                    f"{function.__qualname__!r} is a class without eval(): sp.lineage declares the lineage of "
                    "functions and of Python UDTF classes"
                )
            if len(columns) > 1:
                raise InvalidArgument(f"a UDTF has one input: {mode} lineage names one column, not {columns}")
            return _declared_udtf(decl)
        return _declared(decl)

    return declare


def _columns(mode: str, column: Any) -> tuple[str, ...]:
    # the output columns a mode's function adds: full's positions (two for cogroup), a payload
    if mode not in _REPORTED:
        if column is not None:
            raise InvalidArgument(f"column= is for full, payload, composite and blackbox lineage, not {mode!r}")
        return ()
    columns = (column,) if isinstance(column, str) else tuple(column or ())
    most = 2 if mode in _POSITIONS else 1
    if not columns or len(columns) > most or not all(isinstance(c, str) and c for c in columns):
        if mode in _POSITIONS:
            raise InvalidArgument(
                f"{mode} lineage needs column=: the output column naming each row's input positions "
                "(a pair of column names for cogroup: left and right)"
            )
        raise InvalidArgument(f"{mode} lineage needs column=: the name of the output column holding the payload")
    return columns


def declaration_of(function: Any) -> Declaration | None:
    """The declaration ``sp.lineage`` attached to ``function``, if any."""
    return getattr(function, _ATTRIBUTE, None)


def _declared_udtf(decl: Declaration) -> type:
    # A Python UDTF's class (``@udtf`` goes on top of ``@sp.lineage``): the rows its
    # eval() and terminate() yield lose the values they report. Positions count its
    # eval() calls in a partition (table argument) or in the partition it runs over.
    cls = decl.function

    def stripped(method: Callable) -> Callable:
        @functools.wraps(method)  # PySpark checks a call's arguments against eval()'s signature
        def run(self, *args, **kwargs):
            rows = method(self, *args, **kwargs)
            for row in rows if rows is not None else ():
                yield frames.split_reported(row, decl.columns, f"a call of {decl.name}")[0]

        return run

    names = ("eval", "terminate") if decl.columns else ()
    body = {n: stripped(getattr(cls, n)) for n in names if callable(getattr(cls, n, None))}
    declared = type(cls.__name__, (cls,), {**body, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})
    setattr(declared, _ATTRIBUTE, decl)
    return declared


def _declared(decl: Declaration) -> Callable:
    # What the query calls: the user's function on positioned data, the reported
    # columns dropped from its output. PySpark reads the function's signature and type
    # hints (f(data) or f(key, data); the iterator forms), so the wrapper shows the
    # user's own, with string hints resolved where the function was written.
    function = decl.function

    def declared(*args):
        return frames.without(function(*frames.positioned_arguments(args)), decl.columns)

    try:
        declared.__signature__ = inspect.signature(function, eval_str=True)
        declared.__annotations__ = typing.get_type_hints(function)
    except Exception:  # hints that do not resolve: PySpark reads them as they are
        declared.__signature__ = inspect.signature(function)
        declared.__annotations__ = dict(getattr(function, "__annotations__", {}))
    for name in ("__name__", "__qualname__", "__doc__", "__module__"):
        if hasattr(function, name):
            setattr(declared, name, getattr(function, name))
    setattr(declared, _ATTRIBUTE, decl)
    return declared
