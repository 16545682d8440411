"""Archive the classes a capturing driver loads, for the JVM's class-data sharing.

``make test`` makes one per venv (``<venv>/spark-classes.jsa``); the suite's drivers
and the JVMs its subprocesses start map it (tests/conftest.py) instead of loading and
verifying Spark's classes from its jars: a driver's start and first capture took 6.0 to
6.4 s with it, 10.6 to 11.2 s without. A JVM whose jars differ from the archive's
ignores it (slower, not wrong).

    .venv/bin/python scripts/jvm_archive.py .venv/spark-classes.jsa
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def _work(spark, store: Path) -> None:
    # what the suite's drivers and subprocesses do: a capture written to a store and
    # traced, an RDD program (its Python workers)
    import sparkprov as sp

    session = sp.LineageSession(spark, store=store)
    orders = session.source(
        spark.createDataFrame([(1, "a", 2.0), (2, "b", 3.0), (3, "a", 4.0)], "k int, v string, x double"), "orders"
    )
    kinds = session.source(spark.createDataFrame([("a", "one"), ("b", "two")], "v string, kind string"), "kinds")
    joined = orders.join(kinds, "v").groupBy("kind").agg({"x": "sum"})
    cap = session.capture(joined, "totals", path=str(store.parent / "totals"), witnesses=True)
    rids = [r["_sp_rid"] for r in cap.output.collect()]
    for rows in cap.backward(rids).values():
        rows.collect()
    words = (
        session.rdd.parallelize(["a b", "b c"]).flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    )
    words.collect()


def main(target: str) -> int:
    out = Path(target).resolve()
    partial = out.with_name(out.name + ".partial")
    partial.unlink(missing_ok=True)
    os.environ["SPARK_SUBMIT_OPTS"] = f"-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit={partial}"
    from sparkprov.local import local_session

    spark = local_session("sparkprov-jvm-archive", quiet=True)
    proc = spark.sparkContext._gateway.proc  # the driver JVM: it writes the archive as it exits
    with tempfile.TemporaryDirectory(prefix="sparkprov-jvm-archive-") as tmp:
        _work(spark, Path(tmp) / "store")
    spark.stop()
    proc.stdin.close()  # the gateway server exits at the end of its input
    if proc.wait(timeout=300) != 0 or not partial.exists():
        print(f"jvm_archive: the driver JVM exited with {proc.returncode} and no archive", file=sys.stderr)
        return 1
    partial.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
