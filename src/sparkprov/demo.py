"""Titian's running example, end to end, with DataFrames.

A generated log file; error lines counted by error code (filter, map, group-by, join
with descriptions); a backward trace from the most frequent error to its log lines;
a forward trace from a few NETWORK log lines to the counts they affected; a step back
with a lineage cursor; and a replay without the GUEST lines (Titian's example 3).

Run it with ``sparkprov demo`` or ``make demo``.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.local import local_session

DESCRIPTIONS = [
    (1, "Disk full"),
    (2, "Permission denied"),
    (3, "Timeout"),
    (4, "Failure"),
    (5, "Connection reset"),
]
DESCRIPTION_SCHEMA = "code int, description string"
SUBSYSTEMS = ["NETWORK", "STORAGE", "ZOOKEEPER", "GUEST"]


def write_log(path: Path, lines: int = 2000, seed: int = 7) -> Path:
    """A log file where about a third of the lines are errors with a code and a subsystem."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(lines):
            ts = f"2026-11-21 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
            sub = rng.choice(SUBSYSTEMS)
            if rng.random() < 0.35:
                code = rng.choices([1, 2, 3, 4, 5], weights=[1, 2, 3, 6, 2])[0]
                f.write(f"{ts} ERROR {code} {sub} request {i} failed\n")
            else:
                f.write(f"{ts} INFO {sub} request {i} served\n")
    return path


def error_report(spark: SparkSession, log_path: Path) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The example's pipeline: returns (log lines, descriptions, report)."""
    lines = spark.read.text(str(log_path))
    errors = lines.where(F.col("value").contains(" ERROR "))
    codes = errors.select(F.split("value", " ").getItem(3).cast("int").alias("code"))
    counts = codes.groupBy("code").agg(F.count("*").alias("count"))
    descriptions = spark.createDataFrame(DESCRIPTIONS, DESCRIPTION_SCHEMA)
    report = counts.join(descriptions, "code").select("code", "description", "count")
    return lines, descriptions, report


def _show(title: str, df: DataFrame, n: int = 10) -> None:
    print(f"\n== {title}")
    df.show(n, truncate=False)


def main(store: str | None = None) -> int:
    spark = local_session("sparkprov-demo", **{"spark.ui.showConsoleProgress": "false"})
    with tempfile.TemporaryDirectory(prefix="sparkprov-demo-") as tmp:
        log_path = write_log(Path(tmp) / "app.log")
        print(f"sparkprov demo: Titian's running example on a generated log ({log_path})")
        session = sp.LineageSession(spark, store=store or str(Path(tmp) / "store"))
        lines, descriptions, report = error_report(spark, log_path)
        session.source(lines, "log")
        session.source(descriptions, "descriptions")
        cap = session.capture(report, name="error_report")
        print("\n" + cap.explain())
        _show("error report (captured output)", cap.output)

        top = cap.output.orderBy(F.desc("count")).limit(1)
        code, description, count = top.first()["code"], top.first()["description"], top.first()["count"]
        traced = cap.backward(top, source="log").orderBy("_sp_rid")
        _show(f"backward: the {count} log lines behind the most frequent error ({code} {description})", traced, 8)
        print(f"traced {traced.count()} log lines; the report says {count}")

        network = cap.sources["log"].rows().where("value LIKE '% ERROR % NETWORK %'").orderBy("_sp_rid").limit(3)
        _show("forward: from these NETWORK error lines ...", network)
        _show("... to the report rows they affected", cap.forward("log", network))

        back = cap.lineage(top).go_back(path="log")
        print(f"\n== navigation: cap.lineage(top).go_back(path='log') is at {back.positions}, {back.count()} rows")

        without_guest = lines.where(~F.col("value").contains(" GUEST "))
        replayed = cap.replay({"log": without_guest}, key="code")
        _show("what-if (Titian's example 3): the report without the GUEST lines, changed rows", replayed.changed)

        again = session.load("error_report")
        print(f"reopened capture {again.name!r} version {again.version} from {session.store.root}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
