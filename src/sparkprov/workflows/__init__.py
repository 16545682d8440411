"""Workflows of modules with state (Lipstick): ``sp.Workflow``, its executions and its
provenance graph. Imported when first named: the command line reads a stored graph
without PySpark."""

import importlib
from typing import TYPE_CHECKING

_LAZY = {"Workflow": "workflow", "ProvenanceGraph": "graph", "Deletion": "graph"}

if TYPE_CHECKING:
    from .graph import Deletion, ProvenanceGraph
    from .workflow import Workflow


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Deletion", "ProvenanceGraph", "Workflow"]
