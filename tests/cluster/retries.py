"""Captures whose tasks fail on their first attempt and are retried (``local[2,4]``: up
to four attempts per task), beside the same captures run without failures: every
strategy, with witnesses, a write (``path=``) and an RDD program. Prints one JSON line:
per case, the lineage found (clean and retried), the failures injected, and the files
each capture left in its store.

Arguments: a folder for the sources, the marks of failed attempts and the stores.
"""

import json
import os
import re
import sys
from pathlib import Path

from pyspark import TaskContext
from pyspark.rdd import portable_hash
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sparkprov as sp

folder = Path(sys.argv[1])
os.environ["PYSPARK_PYTHON"] = sys.executable  # Python workers with this environment's packages
spark = (
    SparkSession.builder.master("local[2,4]")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("OFF")  # the injected failures' tracebacks


def flaky(marks: Path | None):
    """A UDF passing its value through; with ``marks``, each task's first attempt fails
    (and leaves a mark) once it reaches a row."""

    def through(x):
        task = TaskContext.get()
        if marks is not None and task.attemptNumber() == 0:
            (marks / f"{task.stageId()}-{task.partitionId()}").touch()
            raise RuntimeError("a failure injected into a task's first attempt")
        return x

    return F.udf(through, "long")


def failing(marks: Path | None, then=lambda x: x):
    """``then``, in a function whose each task's first attempt fails, as ``flaky``'s."""

    def through(x):
        task = TaskContext.get()
        if marks is not None and task.attemptNumber() == 0:
            (marks / f"rdd-{task.stageId()}-{task.partitionId()}").touch()
            raise RuntimeError("a failure injected into a task's first attempt")
        return then(x)

    return through


rows = [(i, f"k{i % 3}", i * 10) for i in range(24)]
spark.createDataFrame(rows, "id long, k string, v long").repartition(2).write.parquet(str(folder / "sales"))
spark.createDataFrame([("k0", "zero"), ("k1", "one"), ("k2", "two")], "k string, name string").write.parquet(
    str(folder / "names")
)
text = folder / "lines.txt"
text.write_text("a b a\nb c\na\nc c b\n")


def query(session: sp.LineageSession, marks: Path | None):
    sales = session.source(spark.read.parquet(str(folder / "sales")), "sales")
    names = session.source(spark.read.parquet(str(folder / "names")), "names")
    fail = flaky(marks)
    joined = sales.where(fail("v") >= 0).join(names, "k")  # fails before the shuffle
    totals = joined.groupBy("name").agg(F.sum("v").alias("total"), F.count("*").alias("n"))
    return totals.withColumn("total", fail("total"))  # and after it


def lineage(cap, how: bool) -> dict:
    """Per output row (by name), the source rows behind it and, with witnesses, its
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


def files(store: Path) -> list[str]:
    """The files a store holds, the names that differ between runs (capture ids, the
    random part of Spark's file names) left out."""
    ids = re.compile(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return sorted(ids.sub("<id>", str(p.relative_to(store))) for p in store.rglob("*") if p.is_file())


result = {}
for case in ("inject", "logical", "defer", "lazy", "witnesses", "write", "rdd", "rdd-sides-written"):
    seen = {}
    for run in ("clean", "retried"):
        marks = folder / "marks" / case if run == "retried" else None
        if marks is not None:
            marks.mkdir(parents=True)
        store = folder / "stores" / case / run
        session = sp.LineageSession(spark, store=store)
        if case.startswith("rdd"):
            lines = session.rdd.textFile(str(text), 2)
            if case == "rdd":
                fail = failing(marks)
                words = lines.flatMap(str.split).map(fail).map(lambda w: (w, 1))
                counts = words.reduceByKey(lambda a, b: a + b).map(fail)
            else:
                # the map side's partitioner runs on the combined records, after the
                # task has written its side file: the retry writes it again
                words = lines.flatMap(str.split).map(lambda w: (w, 1))
                counts = words.reduceByKey(lambda a, b: a + b, 2, failing(marks, portable_hash))
            values = sorted(counts.collect(name="words"))
            found = {
                w: sorted(r.value for r in counts.get_lineage(f"_1 = '{w}'").go_back_all().collect()) for w, _ in values
            }
            seen[run] = {"values": values, "lineage": found}
        else:
            df = query(session, marks)
            kwargs = {"strategy": case} if case in ("inject", "logical", "defer", "lazy") else {}
            if case == "witnesses":
                kwargs["witnesses"] = True
            if case == "write":
                kwargs["path"] = str(folder / "written" / run)
            cap = session.capture(df, "totals", **kwargs)
            seen[run] = {"values": sorted(tuple(r) for r in cap.output.drop("_sp_rid").collect()),
                         "lineage": lineage(cap, case == "witnesses")}  # fmt: skip
        seen[run]["files"] = files(store)
        seen[run]["failed_attempts"] = len(list(marks.iterdir())) if marks is not None else 0
    result[case] = seen
print(json.dumps(result, default=str))
spark.stop()
