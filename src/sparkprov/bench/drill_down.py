"""``sparkprov bench drilldown``: what a workload's ``group_by`` and ``partition_by``
cost at capture and save at query time (Smoke's group-by push-down and data skipping,
section 6.4), on TPC-H.

Per workload (a TPC-H query, an aggregation over its lineitem lineage, and a predicate
on a lineitem column), in one Spark session:

- capture: the query plain, captured with ``workload={"sources": ["lineitem"]}``, and
  captured with the same workload plus ``group_by``, and plus ``partition_by``,
  interleaved (the order rotated between rounds, after a warm-up round); each
  capture's time over the plain run's;
- drill-down: for every output row, the aggregation over its lineitem lineage,
  answered by ``drill_down`` (from the stored table) and by
  ``backward(...).groupBy(...).agg(...)`` (from the lineage), each collected, the two
  alternated; the median time per answer of each, and whether they agree;
- filter: for every output row, ``backward(..., where=predicate)`` counted, on Spark
  with the partitioned capture (its partitions alone read) and with the plain one
  (every pair read, the traced rows filtered), and with the embedded engine (this
  process: the traced rows' predicate columns read and filtered), alternated; the
  median of each, and whether the counts agree.

>>> sorted(WORKLOADS)
['q1', 'q5']
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import InvalidArgument
from . import tpch
from .session import run_workloads

# query number, the aggregation over lineitem the drill-downs run, and the column and
# predicate of the filtering traces
WORKLOADS: dict[str, tuple[int, dict, str, str]] = {
    "q1": (
        1,
        {"by": ["l_shipmode", "l_shipinstruct"], "aggregates": ["count(*)", "sum(l_quantity)", "avg(l_tax)"]},
        "l_shipmode",
        "l_shipmode = 'AIR'",
    ),
    "q5": (
        5,
        {"by": ["l_shipmode"], "aggregates": ["count(*)", "sum(l_extendedprice)", "max(l_discount)"]},
        "l_shipmode",
        "l_shipmode = 'AIR'",
    ),
}


def run(spark, sf: float, repeat: int, data_dir: str, names: list[str] | None = None) -> dict:
    """Time capture with and without ``group_by``, and drill-down answers both ways;
    returns the report."""
    from pyspark.sql import functions as F

    import sparkprov as sp

    unknown = sorted(set(names or ()) - set(WORKLOADS))
    if unknown:
        raise InvalidArgument(f"unknown drill-down workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    tpch.register(spark, tpch.generate(sf, data_dir))
    work = Path(tempfile.mkdtemp(prefix="sparkprov-bench-"))
    results = []
    try:
        session = sp.LineageSession(spark, store=work / "store")
        for name in [w for w in WORKLOADS if not names or w in names]:
            number, group_by, column, predicate = WORKLOADS[name]
            text = tpch.query(number)
            specs = {
                "capture": {"sources": ["lineitem"]},
                "group_by": {"sources": ["lineitem"], "group_by": {"lineitem": group_by}},
                "partition_by": {"sources": ["lineitem"], "partition_by": {"lineitem": column}},
            }

            def plain(i: int, t: str = text, n: str = name) -> None:
                spark.sql(t).write.parquet(str(work / f"plain-{n}-{i}"))

            def captured(kind: str, t: str = text, n: str = name, w: dict = specs) -> Callable[[int], object]:
                return lambda i: session.capture(spark.sql(t), f"{n}-{kind}", workload=w[kind])

            kinds = {"plain": plain, **{k: captured(k) for k in specs}}
            times: dict[str, list[float]] = {k: [] for k in kinds}
            order = list(kinds)
            for i in range(repeat + 1):
                for kind in order[i % len(order) :] + order[: i % len(order)]:
                    started = time.perf_counter()
                    kinds[kind](i)
                    if i:  # round 0 warms every kind up
                        times[kind].append(time.perf_counter() - started)
                if i:
                    print(f"{name} round {i}/{repeat}: " + ", ".join(f"{k} {times[k][-1]:.2f}s" for k in kinds))
            cap = session.load(f"{name}-group_by")
            aggregates = [F.expr(a).alias(a) for a in group_by["aggregates"]]
            stored, traced, agree = [], [], True
            rids = [r[0] for r in cap.output.select("_sp_rid").collect()]
            for _ in range(repeat):
                for rid in rids:
                    started = time.perf_counter()
                    fast = cap.drill_down([rid], "lineitem").collect()
                    stored.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    slow = cap.backward([rid], "lineitem").groupBy(*group_by["by"]).agg(*aggregates).collect()
                    traced.append(time.perf_counter() - started)
                    agree = agree and sorted(map(tuple, fast), key=repr) == sorted(map(tuple, slow), key=repr)
            skipping, filtering, in_process, counts_agree = [], [], [], True
            parted, whole = session.load(f"{name}-partition_by"), session.load(f"{name}-capture")
            for _ in range(repeat):
                for rid in rids:
                    started = time.perf_counter()
                    kept = parted.backward([rid], "lineitem", where=predicate, engine="spark").count()
                    skipping.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    every = whole.backward([rid], "lineitem", where=predicate, engine="spark").count()
                    filtering.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    here = whole.backward([rid], "lineitem", where=predicate, engine="embedded").count()
                    in_process.append(time.perf_counter() - started)
                    counts_agree = counts_agree and kept == every == here
            plain = statistics.median(times["plain"])
            results.append(
                {
                    "workload": name,
                    "query": number,
                    "group_by": group_by,
                    "output_rows": len(rids),
                    "seconds": {k: [round(t, 3) for t in ts] for k, ts in times.items()},
                    "capture_ratio": round(statistics.median(times["capture"]) / plain, 3),
                    "group_by_ratio": round(statistics.median(times["group_by"]) / plain, 3),
                    "partition_by_ratio": round(statistics.median(times["partition_by"]) / plain, 3),
                    "partition_by": column,
                    "where": predicate,
                    "drill_down_ms": round(1000 * statistics.median(stored), 1),
                    "backward_group_by_ms": round(1000 * statistics.median(traced), 1),
                    "answers_agree": agree,
                    "where_partitioned_ms": round(1000 * statistics.median(skipping), 1),
                    "where_filtered_ms": round(1000 * statistics.median(filtering), 1),
                    "where_embedded_ms": round(1000 * statistics.median(in_process), 1),
                    "counts_agree": counts_agree,
                }
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"suite": "drilldown", "sf": sf, "repeat": repeat, "workloads": results}


def main(args: argparse.Namespace) -> int:
    report = run_workloads(args, "sparkprov-bench-drilldown", run)
    print(f"\nTPC-H SF {args.sf}, {args.repeat} rounds; capture time / plain, and one output row's answers")
    for r in report["workloads"]:
        print(
            f"  {r['workload']:<4} capture {r['capture_ratio']:.2f}, with group_by {r['group_by_ratio']:.2f}, "
            f"with partition_by {r['partition_by_ratio']:.2f}   drill_down {r['drill_down_ms']:.0f} ms, "
            f"backward + group by {r['backward_group_by_ms']:.0f} ms (agree: {r['answers_agree']})   "
            f"where on partitions {r['where_partitioned_ms']:.0f} ms, on every pair {r['where_filtered_ms']:.0f} ms, "
            f"embedded {r['where_embedded_ms']:.0f} ms "
            f"(agree: {r['counts_agree']}; {r['output_rows']} rows)"
        )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0
