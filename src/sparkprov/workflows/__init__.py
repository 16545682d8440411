"""Workflows of modules with state (Lipstick): ``sp.Workflow``, its executions and its
provenance graph."""

from .graph import Deletion, ProvenanceGraph
from .workflow import Workflow

__all__ = ["Deletion", "ProvenanceGraph", "Workflow"]
