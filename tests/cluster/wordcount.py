"""An RDD word count and a DataFrame aggregate captured on ``local-cluster`` executors
whose Python lacks sparkprov (``sys.argv[2]``), after a refusal where Python workers
lack what sparkprov's code imports (``sys.argv[1]``). Prints one JSON line per outcome."""

import json
import os
import sys

from pyspark.sql import SparkSession

import sparkprov as sp


def session(python: str, master: str) -> SparkSession:
    os.environ["PYSPARK_PYTHON"] = python  # read when the SparkContext starts
    return (
        SparkSession.builder.master(master)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


lacking, bare, store = sys.argv[1:4]
# the check runs in a Python worker, started alike by an executor JVM or by local mode's
# one JVM: local mode spares the executors' start-up here
spark = session(lacking, "local[1]")
try:
    sp.LineageSession(spark, store=store).rdd.parallelize(["a b"]).collect()
    print(json.dumps({"refused": None}))
except sp.SparkprovError as exc:
    print(json.dumps({"refused": type(exc).__name__, "message": str(exc)}))
spark.stop()

spark = session(bare, "local-cluster[2,1,1024]")
session = sp.LineageSession(spark, store=store)
lines = session.rdd.parallelize(["a b a", "b c", "a"], 2)
counts = lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(lambda x, y: x + y)
result = sorted(counts.collect(name="words"))
behind = sorted(r.value for r in counts.get_lineage("_1 = 'a'").go_back_all().collect())
df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, v int")
cap = session.capture(session.source(df, "numbers").groupBy("k").sum("v"), name="sums")
numbers = sorted(r.v for r in cap.backward("k = 'a'", "numbers").collect())
print(json.dumps({"counts": result, "behind_a": behind, "numbers_behind_a": numbers}))
spark.stop()
