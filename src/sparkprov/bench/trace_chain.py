"""``sparkprov bench trace --suite chain``: traces through a chain of captures and reads
of a small output, answered in this process against on Spark, interleaved.

Three captures over TPC-H's ``orders``: the orders above a price, written; their totals
per priority and status, written; and a report reading those totals. Measured over
randomly chosen rows (a fixed seed), each sample taken once with ``engine="auto"`` and
once with ``engine="spark"`` in turn, the answer's rows collected:

* backward: one report row to the orders behind it (``end_to_end=True``);
* forward: one order to every capture's output rows it reached (``end_to_end=True``);
* output: ``cap.output.collect()`` of the totals (read here when small) against Spark
  reading the same files.

Every sample's two answers are compared (the rids of each relation): ``answers_differ``
counts those that differ, and should be 0.

>>> ratio(10.0, 2.5)
4.0
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from ..errors import InvalidArgument
from . import tpch


def ratio(spark_ms: float, here_ms: float) -> float:
    """How many times longer Spark's answer took than this process's, to 0.01."""
    return round(spark_ms / here_ms, 2) if here_ms > 0 else float("nan")


def _timed(call, *args, **kwargs) -> tuple[float, dict]:
    """Milliseconds to call ``call(*args, **kwargs)`` and collect every DataFrame it
    returns, and the rids collected per key (to check both engines gave one answer)."""
    started = time.perf_counter()
    found = call(*args, **kwargs)
    rows = {
        k: sorted(r["_sp_rid"] for r in df.collect())
        for k, df in (found if isinstance(found, dict) else {"": found}).items()
    }
    return (time.perf_counter() - started) * 1000, rows


def run(sf: float, samples: int, data_dir: str, seed: int = 7) -> dict:
    """Capture the chain and time its traces; returns the report (``*_p50_ms``, ratios)."""
    import sparkprov as sp

    from ..local import local_session

    spark = local_session("sparkprov-bench-trace-chain", shuffle_partitions=4)
    tpch.register(spark, tpch.generate(sf, data_dir))
    with tempfile.TemporaryDirectory(prefix="sparkprov-bench-chain-") as tmp:
        folder = Path(tmp)
        session = sp.LineageSession(spark, store=folder / "store")
        orders = session.source(spark.table("orders"), "orders")
        clean = session.capture(orders.where("o_totalprice > 1000"), "clean", path=folder / "clean")
        written = spark.read.parquet(str(folder / "clean"))
        totals = written.groupBy("o_orderpriority", "o_orderstatus").agg({"o_totalprice": "sum"})
        by_priority = session.capture(totals, "by_priority", path=folder / "by_priority")
        report = session.capture(
            spark.read.parquet(str(folder / "by_priority")).where("o_orderstatus != 'P'"), "report"
        )
        rng = random.Random(seed)
        outs = [r["_sp_rid"] for r in report.output.select("_sp_rid").collect()]
        ins = [r["_sp_rid"] for r in clean.sources["orders"].rows().select("_sp_rid").collect()]
        times: dict[str, list[float]] = {k: [] for k in ("backward", "forward", "output")}
        spark_times: dict[str, list[float]] = {k: [] for k in times}
        path = session.store.load("by_priority").output.path
        differ = 0
        for _ in range(samples):
            out, source_row = rng.choice(outs), rng.choice(ins)
            answers: dict[str, list[dict]] = {"backward": [], "forward": []}
            for engine, into in (("auto", times), ("spark", spark_times)):
                for kind, (call, *args) in {
                    "backward": (report.backward, [out]),
                    "forward": (clean.forward, "orders", [source_row]),
                }.items():
                    ms, rows = _timed(call, *args, end_to_end=True, engine=engine)
                    into[kind].append(ms)
                    answers[kind].append(rows)
            differ += sum(here != there for here, there in answers.values())
            ms, rows = _timed(lambda: by_priority.output)
            times["output"].append(ms)
            ms, read = _timed(spark.read.parquet, path)
            spark_times["output"].append(ms)
            differ += rows != read
    report_out: dict = {"sf": sf, "samples": samples, "report_rows": len(outs), "orders_kept": len(ins)}
    report_out["answers_differ"] = differ  # samples whose answers here and on Spark differ: 0
    for kind in times:
        # the ratio of the medians as reported (rounded first)
        here, there = round(statistics.median(times[kind]), 1), round(statistics.median(spark_times[kind]), 1)
        report_out[f"{kind}_p50_ms"], report_out[f"spark_{kind}_p50_ms"] = here, there
        report_out[f"{kind}_ratio"] = ratio(there, here)
    return report_out


def main(args) -> int:
    """``sparkprov bench trace --suite chain``: prints the medians, writes ``--json``."""
    if args.samples < 1:
        raise InvalidArgument("--samples must be at least 1")
    report = run(args.sf, args.samples, args.data)
    print(
        f"\nTPC-H SF {args.sf} orders through three captures, {args.samples} samples each, p50 here against Spark: "
        + "; ".join(
            f"{k} {report[f'{k}_p50_ms']} ms against {report[f'spark_{k}_p50_ms']} ms ({report[f'{k}_ratio']}x)"
            for k in ("backward", "forward", "output")
        )
        + f"; samples whose answers differ: {report['answers_differ']}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0
