"""What the fault scripts (``retries.py``, ``on_executors.py``) share: their session,
sources, query and word count, and what they compare between a clean run and one with
faults (the lineage found, the files left in the store)."""

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sparkprov as sp


def session(master: str, python: str = sys.executable) -> SparkSession:
    """A session on ``master`` whose Python workers run ``python`` (by default this
    environment's, with its packages)."""
    os.environ["PYSPARK_PYTHON"] = python  # read when the SparkContext starts
    spark = (
        SparkSession.builder.master(master)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        # short-lived, as the driver: its options (SPARK_SUBMIT_OPTS, tests/conftest.py),
        # C1 alone and the class archive, whose jars the executors' JVMs load too (the
        # executors module 39.4 and 39.7 s against 45.5 and 48.2 with C1 alone)
        .config("spark.executor.extraJavaOptions", os.environ.get("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")  # the injected faults' tracebacks
    return spark


def write_sources(spark: SparkSession, folder: Path) -> None:
    rows = [(i, f"k{i % 3}", i * 10) for i in range(24)]
    spark.createDataFrame(rows, "id long, k string, v long").repartition(2).write.parquet(str(folder / "sales"))
    names = [("k0", "zero"), ("k1", "one"), ("k2", "two")]
    spark.createDataFrame(names, "k string, name string").write.parquet(str(folder / "names"))
    (folder / "lines.txt").write_text("a b a\nb c\na\nc c b\n")


def query(session: sp.LineageSession, folder: Path, through: Callable):
    """Totals per name over a join, ``through`` (a Python function passing its value on)
    called before the shuffle and after it."""
    spark = session.spark
    sales = session.source(spark.read.parquet(str(folder / "sales")), "sales")
    names = session.source(spark.read.parquet(str(folder / "names")), "names")
    udf = F.udf(through, "long")
    joined = sales.where(udf("v") >= 0).join(names, "k")
    totals = joined.groupBy("name").agg(F.sum("v").alias("total"), F.count("*").alias("n"))
    return totals.withColumn("total", udf("total"))


def lineage(cap, how: bool) -> dict:
    """Per output row (by name), the source rows behind it and, with ``how``, its
    polynomial."""
    found = {}
    out = {r["_sp_rid"]: r["name"] for r in cap.output.collect()}
    for rid, name in sorted(out.items(), key=lambda x: x[1]):
        behind = cap.backward([rid])
        found[name] = {s: sorted(tuple(r) for r in df.collect()) for s, df in sorted(behind.items())}
    if how:
        for row in cap.how(list(out)).collect():
            found[out[row["_sp_rid"]]]["how"] = row["how"]
    return found


def word_lineage(counts) -> dict:
    """A word count's counts (after an action) and, per word, the lines behind it."""
    values = sorted(counts.collect(name="words"))
    behind = {w: sorted(r.value for r in counts.get_lineage(f"_1 = '{w}'").go_back_all().collect()) for w, _ in values}
    return {"values": values, "lineage": behind}


def files(store: Path) -> list[str]:
    """The files a store holds, the names that differ between runs (capture ids, the
    random part of Spark's file names) left out."""
    ids = re.compile(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return sorted(ids.sub("<id>", str(p.relative_to(store))) for p in store.rglob("*") if p.is_file())
