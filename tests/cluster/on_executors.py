"""An RDD word count and a DataFrame aggregate captured on ``local-cluster`` executors
whose Python lacks sparkprov (``sys.argv[2]``), after a refusal where Python workers
lack what sparkprov's code imports (``sys.argv[1]``); then captures during which an
executor JVM is killed, beside the same captures run without (a DataFrame query and an
RDD word count, sources and stores in ``sys.argv[4]``). Prints one JSON line per
outcome.

The executor is killed where a task's Python function stops, in the first task that
calls it, and says which process runs it: the executor above that process is killed
with SIGKILL, and its tasks, and the map outputs it held, run again elsewhere. The
last line has, per case, the lineage found (clean and with the executor lost), the
executors killed, and the files each capture left in its store.
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from faults import files, lineage, query, session, word_lineage, write_sources

import sparkprov as sp


def stalling(marks: Path | None):
    """A function passing its value through; with ``marks``, the first call of all
    writes its process id to ``marks/pid`` and waits for its executor to be killed."""

    def through(x):
        if marks is None:
            return x
        try:
            os.close(os.open(marks / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return x
        (marks / "pid.tmp").write_text(str(os.getpid()))
        os.replace(marks / "pid.tmp", marks / "pid")
        parent = os.getppid()
        while os.getppid() == parent:  # until the executor and the worker daemon below it are gone
            time.sleep(0.05)
        os._exit(1)

    return through


def kill_executor_when_stalled(marks: Path) -> threading.Thread:
    """Kills the executor JVM above the process ``stalling`` names, once it does."""

    def watch():
        while not (marks / "pid").exists():
            time.sleep(0.02)
        pid = int((marks / "pid").read_text())
        while pid > 1:
            if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
                (marks / f"killed-{pid}").touch()
                return
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # its parent

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


lacking, bare, store, folder = sys.argv[1:5]
# the check runs in a Python worker, started alike by an executor JVM or by local mode's
# one JVM: local mode spares the executors' start-up here
spark = session("local[1]", lacking)
try:
    sp.LineageSession(spark, store=store).rdd.parallelize(["a b"]).collect()
    print(json.dumps({"refused": None}))
except sp.SparkprovError as exc:
    print(json.dumps({"refused": type(exc).__name__, "message": str(exc)}))
spark.stop()

spark = session("local-cluster[2,1,1024]", bare)
lineage_session = sp.LineageSession(spark, store=Path(store).as_uri())  # a store named by a file: URI
lines = lineage_session.rdd.parallelize(["a b a", "b c", "a"], 2)
counts = lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(lambda x, y: x + y)
result = sorted(counts.collect(name="words"))
behind = sorted(r.value for r in counts.get_lineage("_1 = 'a'").go_back_all().collect())
df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, v int")
cap = lineage_session.capture(lineage_session.source(df, "numbers").groupBy("k").sum("v"), name="sums")
numbers = sorted(r.v for r in cap.backward("k = 'a'", "numbers").collect())
print(json.dumps({"counts": result, "behind_a": behind, "numbers_behind_a": numbers}))


folder = Path(folder)
write_sources(spark, folder)
result = {}
for case in ("dataframe", "rdd"):
    seen = {}
    for run in ("clean", "killed"):
        marks = folder / "marks" / case if run == "killed" else None
        watcher = None
        if marks is not None:
            marks.mkdir(parents=True)
            watcher = kill_executor_when_stalled(marks)
        store = folder / "stores" / case / run
        lineage_session = sp.LineageSession(spark, store=store)
        if case == "rdd":
            lines = lineage_session.rdd.textFile(str(folder / "lines.txt"), 2)
            counts = lines.flatMap(str.split).map(stalling(marks)).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
            seen[run] = word_lineage(counts)
        else:
            cap = lineage_session.capture(query(lineage_session, folder, stalling(marks)), "totals")
            seen[run] = {"values": sorted(tuple(r) for r in cap.output.drop("_sp_rid").collect()),
                         "lineage": lineage(cap, False)}  # fmt: skip
        seen[run]["files"] = files(store)
        if watcher is not None:
            watcher.join(timeout=1)
        seen[run]["killed"] = len(list(marks.glob("killed-*"))) if marks is not None else 0
    result[case] = seen
print(json.dumps(result, default=str))
spark.stop()
