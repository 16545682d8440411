"""A workflow's provenance in the formats other tools read: W3C PROV (PROV-JSON and
PROV-N, through the ``prov`` package), Graphviz (DOT, and SVG through the ``dot``
program), and OpenLineage run events (through ``openlineage-python``), one per module
invocation, with a facet naming the captures that hold its record-level lineage.

The packages are the ``export`` extra (``pip install 'sparkprov[export]'``).

PROV: invocations (and zoomed-out modules) are activities; every other node is an
entity with its kind, label and the row it stands for. An edge from an activity is
``wasGeneratedBy``, an edge to one is ``used``, any other ``wasDerivedFrom``: the
graph comes back from the document node for node and edge for edge.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from ..errors import InvalidArgument, SparkprovError
from ..store.layout import WorkflowFolders
from ..store.workflow_record import ExecutionRecord
from .graph import ProvenanceGraph

NAMESPACE = "urn:sparkprov:"
PRODUCER = "urn:sparkprov:0.1.0"
FACET_SCHEMA = "urn:sparkprov:facets:SparkprovRunFacet"
_ACTIVITIES = ("invocation", "module")
FORMATS = ("prov-json", "prov-n", "dot", "svg", "openlineage")


def _needs(package: str):
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError as e:
        raise SparkprovError(
            f"exporting needs the Python package {package.split('.')[0]!r}: pip install 'sparkprov[export]'"
        ) from e


def _node_id(node: int) -> str:
    return f"sp:n{node}" if node >= 0 else f"sp:z{-node}"


def prov_document(graph: ProvenanceGraph):
    """The graph as a ``prov.model.ProvDocument``."""
    model = _needs("prov.model")
    doc = model.ProvDocument()
    doc.add_namespace("sp", NAMESPACE)
    activities = set()
    for n in graph.nodes.to_pylist():
        attributes = {"prov:label": n["label"], "sp:kind": n["kind"], "sp:execution": n["execution"]}
        for key in ("module", "dataset"):
            if n[key] is not None:
                attributes[f"sp:{key}"] = n[key]
        for key in ("invocation", "version", "rid"):
            if n[key] != -1:
                attributes[f"sp:{key}"] = n[key]
        if n["values"]:
            attributes["sp:values"] = True
        if n["kind"] in _ACTIVITIES:
            activities.add(n["id"])
            doc.activity(_node_id(n["id"]), other_attributes=attributes)
        else:
            doc.entity(_node_id(n["id"]), attributes)
    for src, dst in zip(graph.edges.column("src").to_pylist(), graph.edges.column("dst").to_pylist()):
        if src in activities:
            doc.wasGeneratedBy(_node_id(dst), _node_id(src))
        elif dst in activities:
            doc.used(_node_id(dst), _node_id(src))
        else:
            doc.wasDerivedFrom(_node_id(dst), _node_id(src))
    return doc


def prov_json(graph: ProvenanceGraph) -> str:
    """PROV-JSON (W3C member submission)."""
    return prov_document(graph).serialize(format="json")


def prov_n(graph: ProvenanceGraph) -> str:
    """PROV-N (W3C recommendation's notation)."""
    return prov_document(graph).get_provn()


_SHAPES = {"invocation": "box", "module": "box", "tuple": "plaintext", "output": "doublecircle", "blackbox": "box3d"}


def dot(graph: ProvenanceGraph, name: str = "provenance") -> str:
    """Graphviz DOT: p-nodes as circles labelled with their operation, tuples by name,
    invocations as boxes, zoomed-out modules as rounded boxes, black boxes as 3-D boxes."""
    graphviz = _needs("graphviz")
    g = graphviz.Digraph(name, graph_attr={"rankdir": "BT"})
    for n in graph.nodes.to_pylist():
        label = n["label"]
        if n["kind"] in ("output", "tuple") and n["dataset"] is not None:
            label = f"{n['dataset']} v{n['version']} #{n['rid']}" if n["kind"] == "output" else label
        style = "rounded" if n["kind"] == "module" else ""
        g.node(_node_id(n["id"]).replace(":", "_"), label, shape=_SHAPES.get(n["kind"], "circle"), style=style)
    for src, dst in zip(graph.edges.column("src").to_pylist(), graph.edges.column("dst").to_pylist()):
        g.edge(_node_id(src).replace(":", "_"), _node_id(dst).replace(":", "_"))
    return g.source


def svg(graph: ProvenanceGraph, name: str = "provenance") -> bytes:
    """The DOT drawing as SVG, by Graphviz's ``dot`` program (Debian: apt-get install graphviz)."""
    graphviz = _needs("graphviz")
    try:
        return graphviz.Source(dot(graph, name)).pipe(format="svg")
    except graphviz.ExecutableNotFound as e:
        raise SparkprovError(
            "SVG needs Graphviz's dot program: install Graphviz (Debian: apt-get install graphviz)"
        ) from e


def openlineage_events(folders: WorkflowFolders, records: list[ExecutionRecord]) -> list[dict]:
    """One OpenLineage RunEvent (COMPLETE) per module invocation, as JSON-ready dicts:
    the job is the module (namespace ``sparkprov.<workflow>``), inputs and outputs the
    files of the datasets it read and wrote, and a ``sparkprov`` run facet names the
    captures holding each written dataset's record-level lineage."""
    import attr

    _needs("openlineage.client")
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import RunFacet
    from openlineage.client.serde import Serde

    @attr.define
    class SparkprovRunFacet(RunFacet):
        workflow: str
        execution: int
        module: str
        store: str
        captures: list = attr.field(factory=list)

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA

    workflow, store = folders.root.name, str(folders.root.parent.parent)
    events = []
    for record in records:
        for inv in record.invocations:
            run_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{NAMESPACE}{store}/{workflow}/{record.execution}/{inv.module}")
            inputs = [InputDataset("file", str(_path(folders, name, kind, v))) for name, (kind, v) in inv.reads.items()]
            outputs = [
                OutputDataset("file", str(_path(folders, name, kind, record.execution)))
                for name, (kind, _, _) in inv.writes.items()
            ]
            captures = [{"dataset": n, "capture": c, "version": v} for n, (_, c, v) in inv.writes.items() if v]
            facet = SparkprovRunFacet(workflow, record.execution, inv.module, store, captures)
            facet._producer = PRODUCER
            event = RunEvent(
                eventType=RunState.COMPLETE,
                eventTime=record.at,
                run=Run(runId=str(run_id), facets={"sparkprov": facet}),
                job=Job(namespace=f"sparkprov.{workflow}", name=inv.module),
                producer=PRODUCER,
                inputs=inputs,
                outputs=outputs,
            )
            events.append(Serde.to_dict(event))
    return events


def _path(folders: WorkflowFolders, name: str, kind: str, version: int) -> Path:
    return folders.state(name, version) if kind == "state" else folders.dataset(version, name)


def export(graph: ProvenanceGraph, form: str, name: str = "provenance") -> str | bytes:
    """The graph in ``form`` (one of prov-json, prov-n, dot, svg)."""
    makers = {"prov-json": prov_json, "prov-n": prov_n, "dot": lambda g: dot(g, name), "svg": lambda g: svg(g, name)}
    if form not in makers:
        raise InvalidArgument(f"unknown export format {form!r}; formats: {', '.join(FORMATS)}")
    return makers[form](graph)
