"""The bridge's reading of Spark's own accounting."""

from __future__ import annotations

from pyspark.sql import functions as F

from sparkprov.plan.catalyst import task_seconds


def test_task_seconds_counts_the_stages_of_the_jobs_run_since(spark):
    newest, _ = task_seconds(spark)
    # nothing ran: nothing counted, the newest stage unchanged
    assert task_seconds(spark, newest) == (newest, (0.0, 0.0, 0.0))
    # a shuffle: two stages, both counted, with the CPU their tasks used
    spark.range(200_000, numPartitions=2).groupBy((F.col("id") % 7).alias("k")).count().collect()
    later, (run, cpu, gc) = task_seconds(spark, newest)
    assert later >= newest + 2
    assert run > 0 and cpu > 0 and gc >= 0
    # counted once: asking again from the newest stage finds nothing more
    assert task_seconds(spark, later) == (later, (0.0, 0.0, 0.0))
