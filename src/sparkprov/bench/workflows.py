"""Lipstick's WorkflowGen benchmark: ``sparkprov bench workflow --suite dealers|arctic``.

Tracking overhead: the same workflow three times in one session, tracked as it runs,
untracked, and run with ``track="later"``, execution by execution in turn (which goes
first rotates from one execution to the next), with the same inputs; the ratios are of
the medians of the executions' times. The executions run with ``track="later"`` are
then tracked (each run again with tracking, its rows checked against the first run's):
that time is reported beside, and the graph it gives must be the size of the graph
tracked as it ran. Then the tracked workflow's provenance graph: its size, the time to
load it, and query times over random choices (seeded): ZoomOut and ZoomIn of random
module sets, deletion propagation of random base tuples (cars, observations, requests),
and subgraph queries of random nodes.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..api.session import LineageSession
from ..errors import UnsupportedOperation
from ..local import local_session
from ..workflows.workflow import Workflow
from . import arctic, dealers


def _quantiles(seconds: list[float]) -> dict:
    ms = sorted(1000 * s for s in seconds)
    if not ms:
        return {"n": 0}
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return {"n": len(ms), "p50_ms": round(ms[len(ms) // 2], 2), "p95_ms": round(p95, 2), "max_ms": round(ms[-1], 2)}


def _timed(function: Callable, *args) -> tuple[float, object]:
    started = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - started, result


def measure(
    build: Callable[[LineageSession, str], Workflow],
    inputs: Callable[[int], dict],
    executions: int,
    queries: int,
    store: Path,
    session_spark,
    seed: int = 0,
) -> dict:
    """Tracking overhead over ``executions`` executions, then the graph's size and query times."""
    arms = {
        mode: (build(LineageSession(session_spark, store=store / name), name), track)
        for mode, name, track in [("tracked", "tracked", True), ("plain", "plain", False), ("later", "later", "later")]
    }
    times: dict[str, list[float]] = {mode: [] for mode in arms}
    for e in range(1, executions + 1):
        order = list(arms)[e % 3 :] + list(arms)[: e % 3]
        for mode in order:
            wf, track = arms[mode]
            seconds, _ = _timed(lambda wf=wf, track=track, e=e: wf.run(track=track, **inputs(e)))
            times[mode].append(seconds)
        print(f"  execution {e}: " + ", ".join(f"{m} {times[m][-1]:.2f} s" for m in arms), flush=True)
    tracked, later = arms["tracked"][0], arms["later"][0]
    later_seconds, _ = _timed(later.track)
    print(f"  the {executions} executions run with track='later' tracked in {later_seconds:.2f} s", flush=True)
    load_seconds, graph = _timed(tracked.graph)
    later_graph = later.graph()
    if (later_graph.nodes.num_rows, later_graph.edges.num_rows) != (graph.nodes.num_rows, graph.edges.num_rows):
        raise AssertionError(
            f"tracked later, the graph has {later_graph.nodes.num_rows} nodes and {later_graph.edges.num_rows} "
            f"edges; tracked as it ran, {graph.nodes.num_rows} and {graph.edges.num_rows}"
        )
    kinds: dict[str, int] = {}
    for k in graph.nodes.column("kind").to_pylist():
        kinds[k] = kinds.get(k, 0) + 1
    rnd = random.Random(seed)
    modules = graph.modules
    zoom_out, zoom_in = [], []
    for _ in range(queries):
        chosen = rnd.sample(modules, rnd.randrange(1, len(modules) + 1))
        seconds, view = _timed(graph.zoom_out, chosen)
        zoom_out.append(seconds)
        zoom_in.append(_timed(view.zoom_in, chosen)[0])
    ids = graph.nodes.column("id").to_numpy()
    base = ids[np.asarray(graph.nodes.column("kind").to_pylist()) == "tuple"]
    deletions, refused = [], 0
    for node in rnd.sample(base.tolist(), min(queries, len(base))):
        try:
            deletions.append(_timed(graph.delete, node)[0])
        except UnsupportedOperation:
            refused += 1
    subgraphs = [_timed(graph.subgraph, int(n))[0] for n in rnd.sample(ids.tolist(), min(queries, len(ids)))]
    plain = statistics.median(times["plain"])
    return {
        "executions": executions,
        "tracked_s": [round(s, 3) for s in times["tracked"]],
        "untracked_s": [round(s, 3) for s in times["plain"]],
        "later_s": [round(s, 3) for s in times["later"]],
        "overhead": round(statistics.median(times["tracked"]) / plain, 3),
        "overhead_later": round(statistics.median(times["later"]) / plain, 3),
        "tracked_later_s": round(later_seconds, 3),
        "graph": {
            "nodes": graph.nodes.num_rows,
            "edges": graph.edges.num_rows,
            "kinds": kinds,
            "load_s": round(load_seconds, 3),
        },  # fmt: skip
        "zoom_out": _quantiles(zoom_out),
        "zoom_in": _quantiles(zoom_in),
        "delete": _quantiles(deletions) | {"refused": refused},
        "subgraph": _quantiles(subgraphs),
    }


def main(args: argparse.Namespace) -> int:
    spark = local_session("sparkprov-bench-workflow", quiet=True)
    report: dict = {"suite": args.suite, "executions": args.executions, "runs": []}
    with tempfile.TemporaryDirectory(prefix="sparkprov-bench-workflow-") as tmp:
        if args.suite == "dealers":
            # a buyer who never buys: every execution is a request
            buyer = dealers.Buyer(f"buyer{args.seed}", dealers.Buyer.generate(args.seed).model, 10**9, 0.0)
            per_dealer = args.cars // dealers.DEALERS

            def build(session: LineageSession, name: str) -> Workflow:
                return dealers.workflow(session, cars_per_dealer=per_dealer, seed=args.seed, name=name)

            print(f"dealers: {args.cars} cars, {args.executions} executions", flush=True)
            run = measure(build, lambda e: {"request": buyer.request(spark, e, args.seed)}, args.executions,
                          args.queries, Path(tmp), spark, args.seed)  # fmt: skip
            report["runs"].append({"cars": args.cars, **run})
            _print(report["runs"][-1])
        else:
            for topology in args.topologies.split(","):
                for count in [int(n) for n in args.stations.split(",")]:

                    def build(session: LineageSession, name: str, topology=topology, count=count) -> Workflow:
                        return arctic.workflow(session, count, topology, args.fanout, args.seed, name=name)

                    print(f"arctic: {topology}, {count} stations, {args.selectivity}", flush=True)
                    work = Path(tmp) / f"{topology}-{count}"
                    run = measure(build, lambda e: {"request": arctic.request(spark, e, args.selectivity)},
                                  args.executions, args.queries, work, spark, args.seed)  # fmt: skip
                    report["runs"].append({"topology": topology, "stations": count, **run})
                    _print(report["runs"][-1])
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0


def _print(run: dict) -> None:
    g = run["graph"]
    print(
        f"  overhead {run['overhead']:.2f}x (median tracked {statistics.median(run['tracked_s']):.2f} s, "
        f"untracked {statistics.median(run['untracked_s']):.2f} s); with track='later' {run['overhead_later']:.2f}x, "
        f"then tracked in {run['tracked_later_s']:.2f} s; graph {g['nodes']:,} nodes, {g['edges']:,} edges, "
        f"loaded in {g['load_s']:.2f} s"
    )
    for q in ("zoom_out", "zoom_in", "delete", "subgraph"):
        r = run[q]
        if r["n"]:
            print(f"  {q}: p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms over {r['n']}")
