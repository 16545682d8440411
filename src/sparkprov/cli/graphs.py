"""``sparkprov graph``: the store's lineage graph. ``build``, ``update`` and ``import`` run Spark;
``trace`` and ``stats`` read the current build with DuckDB, without Spark.

A row is named ``dataset#rid``: ``totals@1#0`` is row 0 of capture totals' version 1.

>>> parse_row("totals@1#0")
('totals@1', 0)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import InvalidArgument
from .text_table import render

_STORE = {"default": None, "help": "store directory (default $SPARKPROV_STORE or ./.sparkprov)"}


def add_parser(sub) -> None:
    """The ``graph`` command and its subcommands."""
    graph = sub.add_parser("graph", help="the store's lineage graph: triples, components, fast traces")
    graph_sub = graph.add_subparsers(dest="graph_command", required=True)
    b = graph_sub.add_parser("build", help="build the graph from every capture and import (Spark)")
    b.add_argument("--buckets", type=int, default=16, help="files per layout (default 16)")
    b.add_argument("--threshold", type=int, default=25_000, help="nodes from which a component is split into sets")
    b.add_argument("--split-depth", type=int, default=3, help="levels of the graph of datasets per split (default 3)")
    b.add_argument("--store", **_STORE)
    b.add_argument("--json", action="store_true", help="print JSON")
    u = graph_sub.add_parser("update", help="add the captures and imports made since the build, as a layer (Spark)")
    u.add_argument("--store", **_STORE)
    u.add_argument("--json", action="store_true", help="print JSON")
    t = graph_sub.add_parser("trace", help="the rows behind a row (backward) or derived from it (forward)")
    t.add_argument("row", help="the row, as dataset#rid (a capture's output is name@version)")
    t.add_argument("--forward", action="store_true", help="trace forward (default: backward)")
    t.add_argument("--method", choices=["ccprov", "csprov", "rq"], default="ccprov", help="default: ccprov")
    t.add_argument("--limit", type=int, default=20, help="triples shown (default 20; counts are exact)")
    t.add_argument("--store", **_STORE)
    t.add_argument("--json", action="store_true", help="print JSON")
    s = graph_sub.add_parser("stats", help="the current build's sizes, timings and freshness")
    s.add_argument("--store", **_STORE)
    s.add_argument("--json", action="store_true", help="print JSON")
    i = graph_sub.add_parser("import", help="add triples made elsewhere (Parquet or CSV) to the next build (Spark)")
    i.add_argument("path", help="a Parquet file or folder, or a CSV file with a header")
    i.add_argument("--format", choices=["parquet", "csv"], help="default: by the file's name")
    i.add_argument("--store", **_STORE)


def parse_row(text: str) -> tuple[str, int]:
    """``dataset#rid`` as (dataset, rid)."""
    dataset, sep, rid = text.rpartition("#")
    if not sep or not dataset or not rid.isdigit():
        raise InvalidArgument(f"a row is written dataset#rid (for example totals@1#0), not {text!r}")
    return dataset, int(rid)


def main(args: argparse.Namespace, store_root: Path) -> int:
    if args.graph_command in ("build", "update", "import"):
        from ..api.session import LineageSession
        from ..local import local_session

        session = LineageSession(local_session("sparkprov-graph", quiet=True), store=store_root)
        graph = session.graph()
        if args.graph_command == "import":
            count = graph.import_triples(args.path, args.format)
            print(f"imported {count:,} triples from {args.path}; `sparkprov graph build` adds them to the graph")
            return 0
        tell = lambda text: print(text, file=sys.stderr)  # noqa: E731
        if args.graph_command == "update":
            meta = graph.update(tell)
        else:
            meta = graph.build(args.buckets, tell, args.threshold, args.split_depth)
        keys = ("build", "nodes", "edges", "components", "largest_component", "added", "timings")
        summary = {k: meta[k] for k in keys if k in meta}
        added = meta.get("added") if args.graph_command == "update" else None
        text = (
            f"build {meta['build']}: {meta['nodes']:,} nodes, {meta['edges']:,} edges, {meta['components']:,} "
            f"components (largest {meta['largest_component']:,} nodes) in {meta['timings']['total']:.1f} s"
        )
        if added is not None and not added["triples"]:
            text = f"build {meta['build']} holds every capture version and import: nothing to add"
        elif added:
            merged = added["components_merged"]
            text += f"; added {added['triples']:,} triples and {added['nodes']:,} rows, merged {merged:,} components"
        print(json.dumps(summary, indent=1) if args.json else text)
        return 0
    from ..graphs.queries import StoredGraph
    from ..store.layout import StoreFolders

    stored = StoredGraph(StoreFolders(store_root).graph)
    if args.graph_command == "stats":
        stats = stored.stats()
        if args.json:
            print(json.dumps(stats, indent=1))
        else:
            for key, value in stats.items():
                print(f"{key}: {value}")
        return 0
    dataset, rid = parse_row(args.row)
    trace = stored.trace(dataset, rid, "forward" if args.forward else "backward", args.method)
    rows = trace.rows()
    if args.json:
        print(json.dumps({"rows": rows.to_pylist(), "triples": trace.triples.to_pylist(), "read": trace.read}))
        return 0
    way = "derived from" if args.forward else "behind"
    print(f"{rows.num_rows} rows {way} {args.row} over {trace.triples.num_rows} triples "
          f"({args.method}: {trace.read:,} triples read)")  # fmt: skip
    if trace.triples.num_rows:
        print(render(trace.triples.slice(0, args.limit)))
    return 0
