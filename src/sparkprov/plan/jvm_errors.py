"""Errors Spark's JVM raises through Py4J, made sparkprov's own where sparkprov calls it.

PySpark turns the JVM errors it knows (``AnalysisException`` and the like) into its
own exceptions; anything else reaches Python as a Py4J error whose first line names
only the Py4J call. Every method of the bridge raises those as ``SparkFailed``, with
the Java exception's class and message, and the Py4J error as its cause.

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
from collections.abc import Callable
from typing import Any, TypeVar

from py4j.protocol import Py4JError, Py4JJavaError

from ..errors import SparkFailed

T = TypeVar("T")


def _message(exc: Py4JError) -> str:
    if isinstance(exc, Py4JJavaError):
        try:
            return str(exc.java_exception.toString())  # "class: message", without the stack
        except Exception:  # the gateway is gone: Py4J's own text is all there is
            pass
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def translated(method: Callable[..., T]) -> Callable[..., T]:
    """``method``, raising a Py4J error as ``SparkFailed`` (sparkprov's errors pass)."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except Py4JError as exc:
            raise SparkFailed(f"Spark failed in {method.__qualname__}: {_message(exc)}") from exc

    return call


def translating(cls: type[T]) -> type[T]:
    """A class decorator: every function and static method of ``cls`` ``translated``."""
    for name, value in list(vars(cls).items()):
        if name.startswith("__"):
            continue
        if isinstance(value, staticmethod):
            setattr(cls, name, staticmethod(translated(value.__func__)))
        elif callable(value) and not isinstance(value, type):
            setattr(cls, name, translated(value))
    return cls
