"""Capture keeps the query's optimizations: predicate push-down and column pruning."""

from __future__ import annotations

import re

from pyspark.sql import functions as F

from sparkprov.capture.run import rewritten
from sparkprov.plan.catalyst import Bridge


def scans(df) -> list[dict]:
    """PushedFilters and ReadSchema of every file scan in the physical plan."""
    text = df._jdf.queryExecution().executedPlan().toString()
    out = []
    for line in text.splitlines():
        if "FileScan" in line:
            pushed = re.search(r"PushedFilters: \[(.*?)\]", line)
            schema = re.search(r"ReadSchema: (struct<.*?>)", line)
            out.append({"pushed": pushed.group(1) if pushed else "", "schema": schema.group(1) if schema else ""})
    return sorted(out, key=lambda s: (s["schema"], s["pushed"]))


def test_pushdown_and_pruning_survive_capture(spark, tmp_path):
    wide = spark.range(100).selectExpr("id", "id % 7 AS g", "id * 2 AS v", "repeat('x', 50) AS pad")
    wide.write.parquet(str(tmp_path / "wide"))
    small = spark.range(7).selectExpr("id AS g", "concat('name', id) AS label", "id * 10 AS unused")
    small.write.parquet(str(tmp_path / "small"))
    spark.read.parquet(str(tmp_path / "wide")).createOrReplaceTempView("wide")
    spark.read.parquet(str(tmp_path / "small")).createOrReplaceTempView("small")
    for sql in [
        "SELECT id, v FROM wide WHERE v > 50 AND g = 3",
        "SELECT label, sum(v) AS s FROM wide JOIN small ON wide.g = small.g WHERE v < 120 GROUP BY label",
        "SELECT DISTINCT g FROM wide WHERE id < 10",
    ]:
        plain = spark.sql(sql)
        captured, _ = rewritten(Bridge(spark), spark.sql(sql), str(tmp_path / "snap"))
        before, after = scans(plain), scans(captured)
        assert before and len(before) == len(after), sql
        for b, a in zip(before, after):
            assert b["pushed"] and a["pushed"] == b["pushed"], sql  # same filters pushed into the scan
            # no extra data column read, pruning kept; only Parquet's row index is added
            assert a["schema"].replace(",_tmp_metadata_row_index:bigint", "") == b["schema"], sql
        assert "pad" not in str(after)
        # and the answers are the same
        cols = plain.columns
        assert sorted(map(tuple, plain.collect())) == sorted(map(tuple, captured.select(*cols).collect()))


def test_broadcast_hint_survives_capture(spark, tmp_path):
    spark.range(1000).selectExpr("id", "id % 7 AS g").write.parquet(str(tmp_path / "big"))
    spark.range(7).selectExpr("id AS g", "concat('n', id) AS label").write.parquet(str(tmp_path / "dim"))
    big, dim = spark.read.parquet(str(tmp_path / "big")), spark.read.parquet(str(tmp_path / "dim"))
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # only the hint may broadcast
    try:
        query = big.join(F.broadcast(dim), "g").groupBy("label").count()
        captured, _ = rewritten(Bridge(spark), query, str(tmp_path / "snap"))
        for df in (query, captured):
            assert "BroadcastHashJoin" in df._jdf.queryExecution().executedPlan().toString()
        unhinted, _ = rewritten(Bridge(spark), big.join(dim, "g"), str(tmp_path / "snap2"))
        assert "BroadcastHashJoin" not in unhinted._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)
