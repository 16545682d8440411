"""``sparkprov bench capture``: time TPC-H queries with capture on and off.

Pairs are interleaved (the order alternates between pairs) in one Spark session and
the median of the per-pair ratios is reported. The plain run writes its result to
Parquet, as a capture writes its output, so both sides do the same user-visible work;
the capture side counts everything until output and lineage are committed. With
``--witnesses`` the capture keeps why/how structure, and a capture without it runs in
every round too, so the structure's own cost is a same-run ratio.

>>> summarize([{"median_ratio": 1.5, "lineage_bytes": 10, "input_bytes": 100},
...            {"median_ratio": 2.5, "lineage_bytes": 30, "input_bytes": 100}])["max_ratio"]
2.5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import tpch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _dir_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file() and not f.name.startswith((".", "_")))


def summarize(results: list[dict]) -> dict:
    ratios = [r["median_ratio"] for r in results]
    lineage = sum(r["lineage_bytes"] for r in results)
    inputs = sum(r["input_bytes"] for r in results)
    return {
        "median_ratio": round(statistics.median(ratios), 3),
        "max_ratio": round(max(ratios), 3),
        "storage_ratio": float(f"{lineage / inputs:.3g}") if inputs else None,
    }


def run(
    spark: SparkSession, sf: float, queries: list[int], repeat: int, data_dir: str, witnesses: bool = False
) -> dict:
    """Benchmark ``queries`` at scale factor ``sf`` on ``spark``; returns the report.

    ``witnesses`` captures with ``witnesses=True`` (the structure why/how read), whose
    stored side relations count as lineage bytes.
    """
    import sparkprov as sp

    path = tpch.generate(sf, data_dir)
    tpch.register(spark, path)
    work = Path(tempfile.mkdtemp(prefix="sparkprov-bench-"))
    results = []
    try:
        session = sp.LineageSession(spark, store=work / "store")
        for n in queries:
            text = tpch.query(n)
            plain_t, cap_t, default_t = [], [], []
            cap = None

            def plain(i: int, n: int = n, text: str = text) -> float:
                t = time.perf_counter()
                spark.sql(text).write.parquet(str(work / f"plain-{n}-{i}"))
                return time.perf_counter() - t

            def captured(i: int, n: int = n, text: str = text, keep: bool = witnesses):
                t = time.perf_counter()
                c = session.capture(spark.sql(text), name=f"q{n}", witnesses=keep)
                return time.perf_counter() - t, c

            plain(-1)  # warm-up: file listings, code generation caches
            # each round runs every kind once, in an order rotated between rounds; with
            # witnesses, a capture without them is a third kind, to compare in the same run
            kinds = ["plain", "capture", "default"] if witnesses else ["plain", "capture"]
            for i in range(repeat):
                k = i % len(kinds)
                for kind in kinds[k:] + kinds[:k]:
                    if kind == "plain":
                        plain_t.append(plain(i))
                    elif kind == "capture":
                        t, cap = captured(i)
                        cap_t.append(t)
                    else:
                        default_t.append(captured(i, keep=False)[0])
                extra = f", without witnesses {default_t[-1]:.2f}s" if default_t else ""
                print(
                    f"Q{n} round {i + 1}/{repeat}: plain {plain_t[-1]:.2f}s, capture {cap_t[-1]:.2f}s{extra}",
                    flush=True,
                )
            ratios = [c / p for c, p in zip(cap_t, plain_t)]
            entry = cap._entry
            shared = entry["lineage"].get("shared")
            # shared lineage (a scalar subquery's, kept once) is part of what capture stores
            lineage_bytes = _dir_bytes(entry["lineage"]["path"]) + (_dir_bytes(shared) if shared else 0)
            sides = entry.get("witnesses")
            witness_bytes = sum(_dir_bytes(s["path"]) for s in sides["sides"].values()) if sides else 0
            input_bytes = sum(sum(f[1] for f in s["original"]) for s in entry["sources"].values())
            results.append(
                {
                    "query": n,
                    "plain_s": [round(x, 3) for x in plain_t],
                    "capture_s": [round(x, 3) for x in cap_t],
                    "median_ratio": round(statistics.median(ratios), 3),
                    "lineage_bytes": lineage_bytes + witness_bytes,
                    "witness_bytes": witness_bytes,
                    "output_rows": cap.output.count(),
                    "pairs": spark.read.parquet(entry["lineage"]["path"]).count(),
                    "shared_pairs": spark.read.parquet(shared).count() if shared else 0,
                    "input_bytes": input_bytes,
                    "storage_ratio": float(f"{(lineage_bytes + witness_bytes) / input_bytes:.3g}")
                    if input_bytes
                    else None,
                    **(
                        {
                            "without_witnesses_s": [round(x, 3) for x in default_t],
                            "without_witnesses_median_ratio": round(
                                statistics.median(d / p for d, p in zip(default_t, plain_t)), 3
                            ),
                            "witness_cost_median_ratio": round(
                                statistics.median(c / d for c, d in zip(cap_t, default_t)), 3
                            ),
                        }
                        if witnesses
                        else {}
                    ),
                    "strategy": "logical rewrite, end-to-end pair tables"
                    + (" and side relations" if witnesses else ""),
                }
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize(results)
    return {"suite": "tpch", "sf": sf, "repeat": repeat, "witnesses": witnesses, "queries": results, **summary}


def main(args: argparse.Namespace) -> int:
    queries = [int(q) for q in args.queries.split(",") if q.strip()]
    if args.repeat < 1:
        raise ValueError("--repeat must be at least 1")
    from ..local import local_session

    spark = local_session("sparkprov-bench", shuffle_partitions=8, driver_memory="6g")
    try:
        report = run(spark, args.sf, queries, args.repeat, os.path.expanduser(args.data), args.witnesses)
    finally:
        spark.stop()
    kept = " with witnesses" if args.witnesses else ""
    print(f"\nTPC-H SF {args.sf}, {args.repeat} interleaved pairs per query (capture{kept} time / plain time)")
    for r in report["queries"]:
        print(
            f"  Q{r['query']:<3} median ratio {r['median_ratio']:.2f}   "
            f"plain median {statistics.median(r['plain_s']):.2f}s   lineage/input bytes {r['storage_ratio']}   "
            f"{r['output_rows']} rows, {r['pairs']} pairs + {r['shared_pairs']} shared"
            + (
                f"   without witnesses {r['without_witnesses_median_ratio']:.2f}, "
                f"witnesses / without {r['witness_cost_median_ratio']:.2f}"
                if args.witnesses
                else ""
            )
        )
    print(f"  median {report['median_ratio']}, max {report['max_ratio']}, storage {report['storage_ratio']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0
