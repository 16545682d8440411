"""Captures whose tasks fail on their first attempt and are retried (``local[2,4]``: up
to four attempts per task), beside the same captures run without failures: every
strategy, with witnesses, a write (``path=``) and RDD programs. Prints one JSON line:
per case, the lineage found (clean and retried), the failures injected, and the files
each capture left in its store.

Argument: a folder for the sources, the marks of failed attempts and the stores.
"""

import json
import sys
from pathlib import Path

from faults import files, lineage, query, session, word_lineage, write_sources
from pyspark import TaskContext
from pyspark.rdd import portable_hash

import sparkprov as sp


def failing(marks: Path | None, then=lambda x: x):
    """``then``, in a function whose each task's first attempt fails (leaving a mark)
    once it is called; without ``marks``, ``then`` alone."""

    def through(x):
        task = TaskContext.get()
        if marks is not None and task.attemptNumber() == 0:
            (marks / f"{task.stageId()}-{task.partitionId()}").touch()
            raise RuntimeError("a failure injected into a task's first attempt")
        return then(x)

    return through


folder = Path(sys.argv[1])
spark = session("local[2,4]")
write_sources(spark, folder)
result = {}
for case in ("inject", "logical", "defer", "lazy", "witnesses", "write", "rdd", "rdd-sides-written"):
    seen = {}
    for run in ("clean", "retried"):
        marks = folder / "marks" / case if run == "retried" else None
        if marks is not None:
            marks.mkdir(parents=True)
        store = folder / "stores" / case / run
        lineage_session = sp.LineageSession(spark, store=store)
        if case.startswith("rdd"):
            lines = lineage_session.rdd.textFile(str(folder / "lines.txt"), 2)
            if case == "rdd":  # before and after the shuffle
                words = lines.flatMap(str.split).map(failing(marks)).map(lambda w: (w, 1))
                counts = words.reduceByKey(lambda a, b: a + b).map(failing(marks))
            else:
                # the map side's partitioner runs on the combined records, after the
                # task has written its side file: the retry writes it again
                words = lines.flatMap(str.split).map(lambda w: (w, 1))
                counts = words.reduceByKey(lambda a, b: a + b, 2, failing(marks, portable_hash))
            seen[run] = word_lineage(counts)
        else:
            df = query(lineage_session, folder, failing(marks))
            kwargs = {"strategy": case} if case in ("inject", "logical", "defer", "lazy") else {}
            if case == "witnesses":
                kwargs["witnesses"] = True
            if case == "write":
                kwargs["path"] = str(folder / "written" / run)
            cap = lineage_session.capture(df, "totals", **kwargs)
            seen[run] = {"values": sorted(tuple(r) for r in cap.output.drop("_sp_rid").collect()),
                         "lineage": lineage(cap, case == "witnesses")}  # fmt: skip
        seen[run]["files"] = files(store)
        seen[run]["failed_attempts"] = len(list(marks.iterdir())) if marks is not None else 0
    result[case] = seen
print(json.dumps(result, default=str))
spark.stop()
