"""Errors Spark's JVM raises, as sparkprov meets them.

PySpark turns the JVM errors it knows (``AnalysisException`` and the like) into its
own exceptions; anything else reaches Python as a Py4J error whose first line names
only the Py4J call. Every method of the bridge raises those as ``SparkFailed``, with
the Java exception's class and message, and the Py4J error as its cause. The analysis
errors PySpark logs as it raises them are not logged within ``quiet_analysis``.

>>> @translated
... def call():
...     raise Py4JError("An error occurred while calling o12.output")
>>> try:
...     call()
... except SparkFailed as exc:
...     print(exc)
Spark failed in call: An error occurred while calling o12.output
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from py4j.protocol import Py4JError, Py4JJavaError

from ..errors import SparkFailed
from .versions import installed_line

T = TypeVar("T")


def _message(exc: Py4JError) -> str:
    if isinstance(exc, Py4JJavaError):
        try:
            return str(exc.java_exception.toString())  # "class: message", without the stack
        except Exception:  # the gateway is gone: Py4J's own text is all there is
            pass
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def translated(method: Callable[..., T], name: str | None = None) -> Callable[..., T]:
    """``method``, raising a Py4J error as ``SparkFailed`` (sparkprov's errors pass)
    that names the call ``name`` (by default, ``method``'s qualified name)."""
    named = name or method.__qualname__

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except Py4JError as exc:
            raise SparkFailed(f"Spark failed in {named}: {_message(exc)}") from exc

    return call


def translating(cls: type[T]) -> type[T]:
    """A class decorator: every function and static method of ``cls``, its own or
    inherited from the classes it is made of, ``translated`` and set on ``cls``. An
    error names the call as a method of ``cls`` (``Bridge.output``), whichever mixin
    defines it.

    >>> class Reads:
    ...     def output(self):
    ...         raise Py4JError("An error occurred while calling o7.output")
    >>> @translating
    ... class Both(Reads):
    ...     pass
    >>> Both().output()
    Traceback (most recent call last):
    ...
    sparkprov.errors.SparkFailed: Spark failed in Both.output: An error occurred while calling o7.output
    """
    seen: set[str] = set()
    for owner in cls.__mro__:
        if owner is object:
            continue
        for name, value in list(vars(owner).items()):
            if name.startswith("__") or name in seen:
                continue
            seen.add(name)  # the first class along the MRO that defines it wins, as for a call
            if isinstance(value, staticmethod):
                setattr(cls, name, staticmethod(translated(value.__func__, f"{cls.__qualname__}.{name}")))
            elif callable(value) and not isinstance(value, type):
                setattr(cls, name, translated(value, f"{cls.__qualname__}.{name}"))
    return cls


class _OtherThreads(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextmanager
def quiet_analysis() -> Iterator[None]:
    """A block in which the analysis errors PySpark logs as it raises them are not
    logged from this thread: for probes (a user's predicate, a workload's column) whose
    failure sparkprov reports itself, as one error naming what was wrong.

    >>> with quiet_analysis():
    ...     pass
    """
    quiet = _OtherThreads()
    # PySpark 4 logs an ERROR, with its stack, for every analysis error raised with a
    # query context, before the caller can handle it
    loggers = installed_line().query_context_loggers()
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)
