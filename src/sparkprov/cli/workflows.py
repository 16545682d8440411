"""``sparkprov workflow``: a stored workflow's executions and provenance graph, without
Spark: ``list``, ``graph`` (sizes, optionally zoomed out), ``zoom`` (ZoomOut then ZoomIn:
the view's sizes), ``delete`` (deletion propagation), ``depends`` and ``export``.

Rows are named ``dataset@version#rid``: ``cars1@0#3`` is row 3 of state table cars1's
initial version, ``bid1@2#0`` row 0 of output bid1 in execution 2.

>>> parse_row("cars1@0#3")
('cars1', 0, 3)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa

from ..errors import InvalidArgument
from .text_table import render

_ROW = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)@(\d+)#(\d+)$")


def add_parser(sub) -> None:
    """The ``workflow`` command and its subcommands."""
    wf = sub.add_parser("workflow", help="a workflow's executions and provenance graph (sp.Workflow)")
    wf_sub = wf.add_subparsers(dest="workflow_command", required=True)
    store = {"default": None, "help": "store directory (default $SPARKPROV_STORE or ./.sparkprov)"}
    listing = wf_sub.add_parser("list", help="the workflows in a store and their executions")
    listing.add_argument("--store", **store)
    listing.add_argument("--json", action="store_true", help="print JSON")
    for name, text in (
        ("graph", "the provenance graph's size: nodes by kind, edges, modules"),
        (
            "zoom",
            "ZoomOut then ZoomIn (Lipstick 4.1): the size of the view with --out modules zoomed out, "
            "then --in zoomed back in",
        ),
        ("delete", "deletion propagation: the rows gone and the rows that may change without the given rows"),
        ("depends", "whether a row depends on others (it is gone once they are deleted)"),
        ("export", "the graph as PROV-JSON, PROV-N, DOT or SVG, or OpenLineage run events"),
    ):
        p = wf_sub.add_parser(name, help=text)
        p.add_argument("name", help="the workflow")
        p.add_argument("--store", **store)
        p.add_argument("--executions", help="only these executions, comma-separated (default: all tracked)")
        if name == "zoom":
            p.add_argument("--out", required=True, help="modules to zoom out, comma-separated ('all': every one)")
            p.add_argument("--in", dest="zoom_in", help="modules to zoom back in afterwards, comma-separated")
        else:
            p.add_argument(
                "--zoom-out", help="modules shown as one node per invocation, comma-separated ('all': every one)"
            )
        if name == "delete":
            p.add_argument("rows", nargs="+", help="rows to delete, as dataset@version#rid")
            p.add_argument("--allow-inexact", action="store_true", help="answer through operators it cannot follow")
        if name == "depends":
            p.add_argument("row", help="the row, as dataset@version#rid")
            p.add_argument("on", nargs="+", help="the rows it may depend on, as dataset@version#rid")
        if name == "export":
            p.add_argument("--format", required=True, choices=["prov-json", "prov-n", "dot", "svg", "openlineage"])
            p.add_argument("-o", "--output", help="write to this file (default: print)")
        if name in ("graph", "zoom", "delete"):
            p.add_argument("--json", action="store_true", help="print JSON")


def parse_row(text: str) -> tuple[str, int, int]:
    """``dataset@version#rid`` as (dataset, version, rid)."""
    m = _ROW.match(text)
    if not m:
        raise InvalidArgument(f"a row is written dataset@version#rid (for example cars1@0#3), not {text!r}")
    return m.group(1), int(m.group(2)), int(m.group(3))


def main(args: argparse.Namespace, store_root: Path) -> int:
    from ..store.workflow_record import records
    from ..workflows import stored

    if args.workflow_command == "list":
        rows = []
        for name in stored.names(store_root):
            done = records(stored.folders(store_root, name))
            modules = sorted({i.module for r in done for i in r.invocations})
            tracked, later = sum(r.tracked for r in done), sum(r.pending for r in done)
            rows.append({"workflow": name, "executions": len(done), "tracked": tracked, "to track": later,
                         "modules": ", ".join(modules)})  # fmt: skip
        if args.json:
            print(json.dumps(rows, indent=1))
        else:
            print(render(pa.Table.from_pylist(rows)) if rows else f"no workflows in {store_root}")
        return 0
    folders = stored.folders(store_root, args.name)
    executions = [int(e) for e in args.executions.split(",")] if args.executions else None
    if args.workflow_command == "export" and args.format == "openlineage":
        from ..workflows.export import openlineage_events

        done = [r for r in records(folders) if executions is None or r.execution in executions]
        return _emit(args, json.dumps(openlineage_events(folders, done), indent=1))
    graph = stored.load_graph(folders, executions)
    pending = [str(r.execution) for r in records(folders) if r.pending and executions is None]
    if pending:
        note = f"note: execution(s) {', '.join(pending)} ran with track='later' and are not in this graph until "
        print(note + "tracked (wf.track() or wf.graph() in the program that declares the modules)", file=sys.stderr)
    out = args.out if args.workflow_command == "zoom" else args.zoom_out
    if out:
        graph = graph.zoom_out(graph.modules if out == "all" else out.split(","))
    if args.workflow_command == "zoom" and args.zoom_in:
        graph = graph.zoom_in(graph.modules if args.zoom_in == "all" else args.zoom_in.split(","))
    if args.workflow_command in ("graph", "zoom"):
        kinds = Counter(graph.nodes.column("kind").to_pylist())
        summary = {"nodes": graph.nodes.num_rows, "edges": graph.edges.num_rows, "kinds": dict(sorted(kinds.items()))}
        summary |= {"modules": graph.modules, "zoomed_out": sorted(graph.zoomed)}
        if args.json:
            print(json.dumps(summary, indent=1))
        else:
            kinds_text = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            print(f"workflow {args.name!r}: {summary['nodes']} nodes ({kinds_text}), {summary['edges']} edges")
            print(f"modules: {', '.join(graph.modules)}" + (f"; zoomed out: {', '.join(sorted(graph.zoomed))}"
                                                             if graph.zoomed else ""))  # fmt: skip
        return 0
    if args.workflow_command == "delete":
        gone = graph.delete([_node(graph, r) for r in args.rows], allow_inexact=args.allow_inexact)
        removed, changed = _rows(gone.tuples), _rows(gone.changed)
        if args.json:
            print(json.dumps({"removed": removed, "changed": changed}, indent=1))
        else:
            print(f"{len(removed)} rows gone, {len(changed)} rows kept whose values may change")
            for what, rows in (("gone", removed), ("may change", changed)):
                if rows:
                    print(f"{what}:")
                    print(render(pa.Table.from_pylist(rows)))
        return 0
    if args.workflow_command == "depends":
        node = _node(graph, args.row)
        yes = graph.depends(node, on=[_node(graph, r) for r in args.on])
        print(f"{args.row} {'depends' if yes else 'does not depend'} on {' and '.join(args.on)}")
        return 0
    from ..workflows.export import export

    return _emit(args, export(graph, args.format, args.name))


def _node(graph, text: str) -> int:
    dataset, version, rid = parse_row(text)
    return graph.tuple(dataset, rid, version)


def _rows(table: pa.Table) -> list[dict]:
    return [{"row": f"{t['dataset']}@{t['version']}#{t['rid']}", "node": t["node"]} for t in table.to_pylist()]


def _emit(args: argparse.Namespace, content: str | bytes) -> int:
    if args.output:
        Path(args.output).write_bytes(content if isinstance(content, bytes) else content.encode())
        print(f"wrote {args.output}", file=sys.stderr)
    elif isinstance(content, bytes):
        sys.stdout.buffer.write(content)
    else:
        print(content)
    return 0
