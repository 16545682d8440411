"""Front ends above the facade that give a session an attribute of their own
(``session.rdd``, the RDD API). The facade imports none of them: each registers what
makes its attribute when its package is imported, and a session asked for one that is
not registered yet imports the package of that name (``sparkprov.rdd``), as a plugin is
loaded by name.

>>> register("shout", lambda session: f"{session}!")
>>> made("shout", "hello")
'hello!'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..errors import SparkprovError

_MAKERS: dict[str, Callable[[Any], Any]] = {}


def register(name: str, make: Callable[[Any], Any]) -> None:
    """Make ``session.<name>`` with ``make(session)`` (once per session)."""
    _MAKERS[name] = make


def made(name: str, session: Any) -> Any:
    """``session.<name>`` as the front end that registered ``name`` makes it."""
    if name not in _MAKERS:
        importlib.import_module(f"sparkprov.{name}")  # registers itself
    make = _MAKERS.get(name)
    if make is None:
        raise SparkprovError(f"sparkprov.{name} registers no session.{name}")
    return make(session)
