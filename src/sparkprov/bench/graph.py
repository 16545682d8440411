"""The lineage-graph benchmark: ``sparkprov bench graph --edges 1M,5M``.

For each size, the generated workflow graph (``graphgen.py``) is imported into a fresh
store and built (triples numbered, components, connected sets, files); then, for each
of the paper's query classes, ten rows are traced backward with RQ, CCProv and CSProv
(the answers compared), from the build's files (DuckDB; the operating system's page
cache warm after the first read; with ``--cold``, after those, each row is traced again
by each method from disk: the page cache emptied and the build's files opened anew):
- SC-SL: a row of a small component (under 1,000 nodes), a short lineage (a table at
  depth 3 to 5);
- LC-SL: a row of a large component (one split into connected sets), a short lineage;
- LC-LL: a row of a large component in the deepest table (a lineage of 10 hops).
Then one more capture's triples (``--update-pairs``, ``graphgen.one_capture``) are
imported and added by an update (``graphs/update.py``), timed, and its rows traced.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from ..api.session import LineageSession
from ..errors import InvalidArgument
from ..graphs.build_here import LOCAL_TRIPLES_CONF
from ..graphs.components import LOCAL_EDGES_CONF
from ..graphs.queries import StoredGraph
from ..local import local_session
from ..store.layout import StoreFolders
from . import graphgen

_BASE_ROWS = 38_000  # rows per table of the base graph: about 6.4M triples, as the paper's


def _sizes(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = {"K": 10**3, "M": 10**6}.get(part[-1:], 1)
        out.append(int(float(part.rstrip("KM")) * scale))
    return out


def _pick(folder: Path, meta: dict, klass: str, count: int, seed: int) -> list[tuple[str, int]]:
    tables = {t.name: t.depth for t in graphgen.workflow_tables(seed)}
    if klass == "LC-LL":
        names = [n for n, d in tables.items() if d == max(tables.values())]
    else:
        names = [n for n, d in tables.items() if 3 <= d <= 5]
    ds = [i for i, name in enumerate(meta["datasets"]) if name in names]
    # large: the components split into sets; small: under a thousand nodes
    large = f"c.nodes >= {meta['threshold']}" if klass.startswith("LC") else "c.nodes < 1000"
    sql = (
        f"SELECT n.ds, n.rid FROM read_parquet('{folder}/nodes/*.parquet') n "
        f"JOIN read_parquet('{folder}/components/*.parquet') c USING (component) "
        f"WHERE {large} AND n.ds IN ({', '.join(map(str, ds))}) ORDER BY hash(n.rid + {seed}) LIMIT {count}"
    )
    return [(meta["datasets"][d], int(r)) for d, r in duckdb.sql(sql).fetchall()]


def _timed(stats: dict, method: str, function, *args):
    started = time.perf_counter()
    result = function(*args)
    stats.setdefault(method, []).append(time.perf_counter() - started)
    return result


_DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_page_cache() -> None:
    """The operating system's page cache emptied (Linux, as root), so the next reads
    come from disk."""
    os.sync()
    try:
        _DROP_CACHES.write_text("3\n")
    except OSError as e:
        raise InvalidArgument(
            f"--cold empties the page cache before each query, which needs root on Linux (writing {_DROP_CACHES}): {e}"
        ) from None


def _cold(folders, dataset: str, rid: int, method: str) -> float:
    # from disk: no page cache, and a graph object that has read no file yet
    drop_page_cache()
    started = time.perf_counter()
    StoredGraph(folders).trace(dataset, rid, "backward", method)
    return time.perf_counter() - started


def measure(
    edges: int, work: Path, spark, seed: int, threshold: int, queries: int, update_pairs: int, cold: bool = False
) -> dict:
    base_rows = min(_BASE_ROWS, max(200, edges // 166))
    probe = graphgen.generate(work / "probe", base_rows, 1, seed)
    copies = max(1, round(edges / probe["edges"]))
    shape = graphgen.generate(work / "triples", base_rows, copies, seed)
    print(f"graph of {shape['edges']:,} triples ({copies} copies of {probe['edges']:,})", flush=True)
    session = LineageSession(spark, store=work / "store")
    graph = session.graph()
    started = time.perf_counter()
    graph.import_triples(work / "triples")
    imported = time.perf_counter() - started
    meta = graph.build(threshold=threshold, progress=lambda text: print(text, flush=True))
    stats = graph.stats()
    folder = Path(graph._graph().folder)
    result = {"edges": shape["edges"], "copies": copies, "import_s": round(imported, 2), "build": stats,
              "classes": {}}  # fmt: skip
    for klass in ("SC-SL", "LC-SL", "LC-LL"):
        times: dict[str, list[float]] = {}
        colds: dict[str, list[float]] = {}
        reads: dict[str, list[int]] = {}
        rows = []
        picked = _pick(folder, meta, klass, queries, seed)
        for dataset, rid in picked:
            answers = {}
            for method in ("rq", "ccprov", "csprov"):
                trace = _timed(times, method, graph.backward, dataset, rid, method)
                answers[method] = trace.triples
                reads.setdefault(method, []).append(trace.read)
            if not (answers["rq"].equals(answers["ccprov"]) and answers["rq"].equals(answers["csprov"])):
                raise AssertionError(f"the methods disagree on {dataset}#{rid}")
            rows.append(answers["rq"].num_rows)
        for dataset, rid in picked if cold else ():  # after every warm trace: emptying the cache cools those too
            for method in ("rq", "ccprov", "csprov"):
                colds.setdefault(method, []).append(_cold(StoreFolders(work / "store").graph, dataset, rid, method))
        result["classes"][klass] = {
            "rows": len(rows),
            "lineage_triples_mean": round(statistics.mean(rows), 1) if rows else 0,
            **{m: {"mean_ms": _ms(statistics.mean(t)), "p95_ms": _ms(_p95(t)),
                   "triples_read_mean": round(statistics.mean(reads[m]))}
               | ({"cold_mean_ms": _ms(statistics.mean(colds[m])), "cold_p95_ms": _ms(_p95(colds[m]))} if cold else {})
               for m, t in times.items()},
        }  # fmt: skip
        print(f"  {klass}: " + ", ".join(
            f"{m} {v['mean_ms']} ms" + (f" ({v['cold_mean_ms']} ms cold)" if cold else "")
            for m, v in result["classes"][klass].items() if isinstance(v, dict)), flush=True)  # fmt: skip
    if update_pairs:
        result["update"] = _update(graph, work, base_rows, copies, update_pairs, seed)
    return result


def _ms(seconds: float) -> float:
    return round(1000 * seconds, 1)


def _p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(0.95 * len(values)))]


def _update(graph, work: Path, base_rows: int, copies: int, pairs: int, seed: int) -> dict:
    """One more capture's triples imported and added by ``graph.update()``; its rows
    then traced by the three methods, which must agree."""
    shape = graphgen.one_capture(work / "capture", base_rows, copies, pairs, seed)
    graph.import_triples(work / "capture")
    started = time.perf_counter()
    meta = graph.update(progress=lambda text: print(text, flush=True))
    seconds = time.perf_counter() - started
    for rid in random.Random(seed).sample(range(shape["rows"]), min(5, shape["rows"])):
        answers = [graph.backward("capture", rid, m).triples for m in ("rq", "ccprov", "csprov")]
        if not all(a.equals(answers[0]) for a in answers[1:]):
            raise AssertionError(f"the methods disagree on capture#{rid} after the update")
    print(f"  update: {shape['pairs']:,} pairs in {seconds:.1f} s", flush=True)
    return {"pairs": shape["pairs"], "seconds": round(seconds, 2), "added": meta["added"],
            "timings": meta["timings"], "edges_after": meta["edges"]}  # fmt: skip


def main(args: argparse.Namespace) -> int:
    if args.cold:  # before any work: a run that cannot empty the cache stops at once
        drop_page_cache()
    conf = {} if args.local_edges is None else {LOCAL_EDGES_CONF: str(args.local_edges)}
    if args.local_triples is not None:
        conf[LOCAL_TRIPLES_CONF] = str(args.local_triples)
    spark = local_session("sparkprov-bench-graph", driver_memory=args.driver_memory, quiet=True, **conf)
    report = {"runs": []}
    for edges in _sizes(args.edges):
        with tempfile.TemporaryDirectory(prefix="sparkprov-bench-graph-") as tmp:
            run = measure(
                edges, Path(tmp), spark, args.seed, args.threshold, args.queries, args.update_pairs, args.cold
            )
            report["runs"].append(run)
        if args.json_out:  # after each size: a larger one that fails keeps the smaller ones' figures
            Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0
