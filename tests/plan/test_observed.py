"""Rows gathered by the job that computes a query over them (``plan/observed.py``):
the rows themselves, nothing when the jobs that ran cannot vouch for them."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from sparkprov.plan.catalyst import Bridge
from sparkprov.plan.observed import ObservedRows, WatchedJobs, observed_rows


@pytest.fixture
def bridge(spark):
    return Bridge(spark)


def _rows_of(bridge, spark):
    # rows Catalyst can size (a list given to createDataFrame it cannot); the first and
    # third are equal, and stay two rows
    df = spark.range(4).selectExpr(
        "CAST(IF(id = 2, 1, id + 1) AS INT) AS k",
        "IF(id = 1, NULL, IF(id = 3, 'c', 'a')) AS s",
        "IF(id = 1, NULL, CAST(IF(id = 3, -2.25, 1.5) AS DECIMAL(10,2))) AS d",
        "IF(id = 1, NULL, IF(id = 3, DATE'1999-12-31', DATE'2020-01-01')) AS day",
        "IF(id = 1, NULL, IF(id = 3, array(), array(1, 2))) AS xs",
    )
    plan = bridge.analyzed(df)
    out = bridge.output(plan)
    # a handle as capture makes one (a struct of keys) beside the columns
    return bridge.project([bridge.alias(bridge.struct(out[:2]), "__sp_h"), *out], plan)


def test_the_rows_a_query_gathers_are_the_plans_rows(spark, bridge):
    rows = _rows_of(bridge, spark)
    seen = observed_rows(bridge, rows)
    assert seen is not None
    with WatchedJobs(spark) as jobs:
        # a shuffle above: the rows are gathered in a map stage of their own job
        counted = bridge.checked_dataframe(seen.plan).groupBy("k").agg(F.count("*").alias("n")).collect()
    assert sorted((r.k, r.n) for r in counted) == [(1, 2), (2, 1), (4, 1)]
    assert jobs.ran_once()
    table = seen.table(jobs)
    expected = [r.asDict(recursive=True) for r in bridge.checked_dataframe(rows).collect()]
    key = repr
    assert table.schema.names == ["__sp_h", "k", "s", "d", "day", "xs"]
    assert sorted(table.to_pylist(), key=key) == sorted(expected, key=key)


def test_rows_not_gathered_by_the_watched_jobs_are_not_taken(spark, bridge):
    rows = _rows_of(bridge, spark)
    seen = ObservedRows(bridge, rows)
    with WatchedJobs(spark) as idle:
        pass  # nothing ran: no job vouches for the rows
    assert not idle.ran_once() and seen.table(idle) is None
    bridge.checked_dataframe(seen.plan).collect()  # run, but outside the watch
    assert seen.table(idle) is None


def test_rows_larger_than_the_limit_are_not_gathered(spark, bridge):
    rows = _rows_of(bridge, spark)
    assert observed_rows(bridge, rows, limit=16) is None
