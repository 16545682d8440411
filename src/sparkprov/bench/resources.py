"""Lineage larger than the driver's memory: an aggregate over ``rows`` source rows (one
pair per row) captured by a driver limited to ``memory`` (``spark.driver.memory``; in
local mode the executors share that heap), then traced on Spark in that driver and
with the embedded engine in a process of its own, whose peak resident memory is read
from the kernel (``VmHWM``).

>>> peak_rss_mib() > 0
True
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def peak_rss_mib() -> float:
    """This process's peak resident memory, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _capture(store: str, data: str, memory: str) -> None:
    from pyspark.sql import functions as F

    import sparkprov as sp

    from ..local import local_session

    spark = local_session("sparkprov-resources", 4, memory, quiet=True, **{"spark.ui.showConsoleProgress": "false"})
    session = sp.LineageSession(spark, store=store)
    rows = session.source(spark.read.parquet(data), "rows")
    started = time.monotonic()
    cap = session.capture(rows.groupBy("g").agg(F.count("*").alias("n"), F.sum("id").alias("s")), "big")
    seconds = time.monotonic() - started
    started = time.monotonic()
    behind = cap.backward("g = 0", "rows", engine="spark").count()
    traced = time.monotonic() - started
    pairs = spark.read.parquet(cap._entry.lineage.path).count()
    print(json.dumps({"capture_s": seconds, "pairs": pairs, "spark_trace_s": traced, "spark_trace_rows": behind}))


def _trace(store: str) -> None:
    from ..errors import LineageTooLarge
    from ..query.embedded import EmbeddedEngine
    from ..store.catalog import Store

    started = time.monotonic()
    engine = EmbeddedEngine(Store(store).load("big"))
    try:
        found = {"embedded_trace_rows": len(engine.backward_ids(engine.output_rids("g = 0"), "rows"))}
    except LineageTooLarge as exc:  # the engine's bound on what it reads, said before reading it
        found = {"embedded_refused": str(exc)}
    seconds = time.monotonic() - started
    print(json.dumps({"embedded_trace_s": seconds, **found, "peak_rss_mib": peak_rss_mib()}))


def run(work: Path, rows: int, groups: int, memory: str, spark) -> dict:
    """Write the rows with ``spark``, then capture and trace them in processes of their own."""
    data = work / f"rows-{rows}-{groups}"
    if not data.exists():
        spark.range(rows).selectExpr("id", f"id % {groups} AS g").write.parquet(str(data))
    store = work / f"store-{int(time.time())}"
    me = [sys.executable, "-m", "sparkprov.bench.resources"]
    made = subprocess.run([*me, "--capture", str(store), str(data), memory], capture_output=True, text=True)
    if made.returncode:
        return {"rows": rows, "memory": memory, "failed": made.stderr[-3000:]}
    captured = json.loads(made.stdout.strip().splitlines()[-1])
    traced = subprocess.run([*me, "--trace", str(store)], capture_output=True, text=True)
    if traced.returncode:
        return {"rows": rows, "memory": memory, **captured, "failed": traced.stderr[-3000:]}
    kept = sum(p.stat().st_size for p in (store / "data").rglob("*") if p.is_file())
    return {
        "rows": rows,
        "groups": groups,
        "memory": memory,
        "store_bytes": kept,  # the output with its rids and the pair table
        **captured,
        **json.loads(traced.stdout.strip().splitlines()[-1]),
    }


if __name__ == "__main__":
    if sys.argv[1] == "--capture":
        _capture(*sys.argv[2:5])
    elif sys.argv[1] == "--trace":
        _trace(sys.argv[2])
