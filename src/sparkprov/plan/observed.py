"""Rows of a plan gathered by the job that computes a query over it, not by a job of
their own: a ``CollectMetrics`` node (what ``DataFrame.observe`` adds) over the plan,
collecting the columns asked for into one list, which Spark hands to the driver when
the query's first action ends.

Spark merges the lists of every task that ends well, of a shuffle's map stage too,
so a stage run again (an executor lost, a fetch failed) or a speculative copy of a
task that also ends well would give some rows twice, and a stage skipped (its output
reused) none. :class:`WatchedJobs` says whether the jobs run under it ran every task
of every stage once: only then are the rows taken (``ObservedRows.table``); otherwise
the caller computes them the usual way.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> plan = b.analyzed(spark.range(4).selectExpr("id", "id % 2 AS g"))
>>> seen = ObservedRows(b, b.project(b.output(plan)[:1], plan))  # the ids, gathered below the count
>>> with WatchedJobs(spark) as jobs:
...     sums = b.checked_dataframe(seen.plan).groupBy("g").count().collect()
>>> jobs.ran_once()
True
>>> sorted(seen.table(jobs).column("id").to_pylist())
[0, 1, 2, 3]
"""

from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
from pyspark.serializers import CPickleSerializer
from pyspark.sql import Row, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, StructField, StructType

from .handles import JPlan
from .references import compiled
from .small_writes import small_plan
from .versions import line_of

OBSERVED_BYTES = 1 << 20  # at most this many bytes by Catalyst's estimate are gathered so
_WAIT_S = 2.0  # Spark completes an observation as its action ends; a little slack
_WAIT_MS = 5000  # for Spark's listener bus to catch up
# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovJobs.java
_JOBS_CLASS = "SparkprovJobs"


def observed_rows(bridge, rows: JPlan, limit: int = OBSERVED_BYTES) -> ObservedRows | None:
    """``ObservedRows(bridge, rows)`` when ``rows`` are small (``small_writes.small_plan``,
    at most ``limit`` bytes), else None."""
    schema = StructType.fromJson(json.loads(rows.schema().json()))
    return ObservedRows(bridge, rows, schema) if small_plan(rows, schema, limit, bridge.spark) else None


class ObservedRows:
    """The rows of ``rows``, a ``Project`` node, gathered by the first action whose
    query holds :attr:`plan`: the Project's child under a ``CollectMetrics`` (the
    child's output), in its place."""

    def __init__(self, bridge, rows: JPlan, schema: StructType | None = None) -> None:
        jvm = bridge.jvm
        self._jvm, self._line = jvm, bridge.line
        self.name = f"sparkprov_rows_{uuid.uuid4().hex}"
        self.schema = schema or StructType.fromJson(json.loads(rows.schema().json()))
        self._metrics = StructType([StructField("rows", ArrayType(self.schema))])
        (child,) = bridge.children(rows)
        columns = bridge.to_list(rows.projectList())
        row = bridge.named_struct([(c.name(), c.child() if c.nodeName() == "Alias" else c) for c in columns])
        gathered = bridge.alias(bridge.collect_list(row), "rows")
        dataframe_id = uuid.uuid4().int & ((1 << 62) - 1)
        self._observation = jvm.org.apache.spark.sql.Observation(self.name)
        self._line.register_observation(bridge.spark, self._observation, dataframe_id)
        self.plan: JPlan = bridge._logical.CollectMetrics(self.name, bridge.seq([gathered]), child, dataframe_id)

    def table(self, jobs: WatchedJobs) -> pa.Table | None:
        """The rows as an Arrow table of :attr:`schema`, or None when they cannot be
        trusted (``jobs`` ran a stage again, or part of one) or were not gathered."""
        if not jobs.ran_once():
            return None
        future = self._observation.future()
        waited = time.monotonic() + _WAIT_S
        while not future.isCompleted():
            if time.monotonic() > waited:
                return None
            time.sleep(0.01)
        found = CPickleSerializer().loads(self._line.observed_row(self._jvm, self._observation, self._metrics))
        if found is None or found["rows"] is None:
            return None
        rows = [_plain(r) for r in found["rows"]]
        return pa.Table.from_pylist(rows, schema=to_arrow_schema(self.schema))


def _plain(value):
    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return [(k, _plain(v)) for k, v in value.items()]  # Arrow takes a map as pairs
    return value


class WatchedJobs:
    """The Spark jobs the current thread runs inside the ``with`` block (a job tag of
    their own: the user's job group and tags stay), and whether each ran every task of
    every stage exactly once (a stage none of whose tasks ran counts as
    skipped: the plans watched are new, so only a job of the group can have written
    its shuffle)."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._sc = spark.sparkContext
        self.tag = f"sparkprov-{uuid.uuid4().hex}"
        self._once: bool | None = None  # known once the block has ended
        self._ended = False

    def __enter__(self) -> WatchedJobs:
        self._sc.addJobTag(self.tag)
        return self

    def __exit__(self, *exc) -> None:
        self._sc.removeJobTag(self.tag)
        self._ended = True

    def ran_once(self) -> bool:
        if self._once is None or not self._ended:
            self._once = self._ran_once()
        return self._once

    def _ran_once(self) -> bool:
        scala = self._sc._jsc.sc()
        helper = compiled(self._spark, _JOBS_CLASS, line_of(self._spark).java_source(_JOBS_CLASS))
        if helper is not None:  # in one round trip: what follows asks per job and per stage
            return bool(helper.ranOnce(scala, self.tag, _WAIT_MS))
        try:
            # the status store is fed by Spark's listener bus, behind the scheduler: its
            # events so far handled, no retry of the watched jobs is left unseen
            scala.listenerBus().waitUntilEmpty(_WAIT_MS)
        except Exception:  # too busy to tell: the rows are not taken
            return False
        tracker = self._sc.statusTracker()
        jobs = list(scala.statusTracker().getJobIdsForTag(self.tag))
        if not jobs:
            return False
        for job in jobs:
            info = tracker.getJobInfo(job)
            if info is None or info.status != "SUCCEEDED":
                return False
            for stage in info.stageIds:
                s = tracker.getStageInfo(stage)
                if s is None or s.currentAttemptId != 0 or s.numFailedTasks or s.numActiveTasks:
                    return False
                # none run: a stage whose shuffle another job of the group wrote
                # (adaptive execution runs each shuffle's map stage as a job first)
                if s.numCompletedTasks not in (0, s.numTasks):
                    return False
        return True
