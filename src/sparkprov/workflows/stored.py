"""A workflow as the store keeps it, read without Spark: its executions' records and
its provenance graph (the command line's ``sparkprov workflow``).

>>> import tempfile
>>> names(tempfile.mkdtemp())
[]
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InvalidArgument
from ..store.layout import StoreFolders, WorkflowFolders
from ..store.workflow_record import records
from .graph import ProvenanceGraph
from .graph_build import EDGE_SCHEMA, NODE_SCHEMA, TUPLE_SCHEMA


def names(store: str | os.PathLike) -> list[str]:
    """The workflows a store holds."""
    folder = Path(store) / "workflows"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def folders(store: str | os.PathLike, name: str) -> WorkflowFolders:
    """The folders of workflow ``name`` in ``store`` (InvalidArgument when it has none)."""
    found = StoreFolders(Path(store)).workflow(name)
    if not found.root.is_dir():
        known = ", ".join(names(store)) or "none"
        raise InvalidArgument(f"no workflow {name!r} in store {store}; workflows: {known}")
    return found


def load_graph(where: WorkflowFolders, executions: Iterable[int] | None = None) -> ProvenanceGraph:
    """The provenance graph of the tracked executions (all, or those named)."""
    every = records(where)
    done = [r for r in every if r.tracked]
    wanted = None if executions is None else set(executions)
    chosen = [r for r in done if wanted is None or r.execution in wanted]
    pending = [r.execution for r in every if r.pending and (wanted is None or r.execution in wanted)]
    # tracking an execution run with track="later" needs its modules: the program's
    later = (f"; execution {pending[0]} ran with track='later' and is tracked by wf.track() or wf.graph() in a "
             "program that declares its modules") if pending else ""  # fmt: skip
    if wanted is not None and wanted - {r.execution for r in chosen}:
        missing = sorted(wanted - {r.execution for r in chosen})[0]
        raise InvalidArgument(f"workflow {where.root.name!r} has no tracked execution {missing}{later}")
    if not chosen:
        raise InvalidArgument(f"workflow {where.root.name!r} has no tracked execution to make a graph of{later}")
    schemas = {"nodes": NODE_SCHEMA, "edges": EDGE_SCHEMA, "tuples": TUPLE_SCHEMA}
    tables = {
        file: pa.concat_tables([pq.read_table(where.graph(r.execution) / f"{file}.parquet") for r in chosen]).cast(
            schema
        )
        for file, schema in schemas.items()
    }
    nodes, edges = tables["nodes"], tables["edges"]
    if len(chosen) < len(done):
        # edges from executions not loaded (a state row an earlier one wrote) end at the boundary
        ids = nodes.column("id").to_numpy()
        keep = np.isin(edges.column("src").to_numpy(), ids) & np.isin(edges.column("dst").to_numpy(), ids)
        edges = edges.filter(pa.array(keep))
    not_monotone = {i.node: i.not_monotone for r in chosen for i in r.invocations if i.not_monotone}
    return ProvenanceGraph(nodes, edges, tables["tuples"], not_monotone)
