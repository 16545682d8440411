"""The rid collector: an injected aggregate's arrays, as collect_list would make them."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from sparkprov.plan import rid_collector
from sparkprov.plan.catalyst import Bridge
from sparkprov.plan.versions import line_of


def _rows(spark):
    # 600 groups over 4 partitions: past the object aggregate's 128 groups per task,
    # so buffers are serialized, sorted and merged again; every seventh rid is NULL
    return spark.range(0, 6000, 1, 4).selectExpr(
        "id % 600 AS g", "CASE WHEN id % 7 = 0 THEN NULL ELSE id END AS rid", "CAST(id AS INT) AS n"
    )


def test_a_groups_rids_are_the_ones_collect_list_keeps(spark):
    rows = _rows(spark)
    ours = rows.groupBy("g").agg(rid_collector.rids_column(rows, "rid").alias("r"))
    theirs = rows.groupBy("g").agg(F.collect_list("rid").alias("r"))
    got = {r.g: sorted(r.r) for r in ours.collect()}
    assert got == {r.g: sorted(r.r) for r in theirs.collect()}
    assert len(got) == 600 and got[0] == [600 * k for k in range(1, 10) if 600 * k % 7]
    # a global aggregate over no rows: an empty array, as collect_list gives
    empty = rows.where("g < 0")
    assert empty.agg(rid_collector.rids_column(empty, "rid")).first()[0] == []


def test_nested_arrays_are_flattened_and_distinct_ones_sorted(spark):
    rows = _rows(spark)
    inner = rows.groupBy("g").agg(rid_collector.rids_column(rows, "rid").alias("r"))
    # every inner array twice: the outer arrays repeat each rid
    doubled = inner.unionAll(inner).withColumn("h", F.col("g") % 3)
    attr = Bridge(spark).analyzed(doubled).output().apply(1)
    line = line_of(spark)
    for distinct in (False, True):
        made = rid_collector.collect_rids(spark, attr, nested=True, distinct=distinct)
        outer = {
            r.h: r.r for r in doubled.groupBy("h").agg(line.expression_column(spark._jvm, made).alias("r")).collect()
        }
        for h, arr in outer.items():
            once = sorted(r.rid for r in rows.where(f"g % 3 = {h} AND rid IS NOT NULL").collect())
            assert arr == once if distinct else sorted(arr) == sorted(once * 2)


def test_repeats_dropped_while_collecting_leave_each_rid_once_in_order(spark):
    # 8,000 rows a group over 4 partitions, each rid repeated: scattered (a rid comes
    # back every 3,001 rows) and in runs (each row twice in a row), so buffers fill,
    # drop repeats, and meet buffers dropped in other tasks
    rows = (
        spark.range(0, 20000, 1, 4)
        .withColumn("copy", F.explode(F.array(F.lit(0), F.lit(1))))
        .selectExpr("id % 5 AS g", "CASE WHEN id % 11 = 0 THEN NULL ELSE (id * 7919) % 3001 END AS rid")
    )
    got = {
        r.g: r.r
        for r in rows.groupBy("g").agg(rid_collector.rids_column(rows, "rid", distinct=True).alias("r")).collect()
    }
    expected = {}
    for r in rows.collect():
        if r.rid is not None:
            expected.setdefault(r.g, set()).add(r.rid)
    assert got == {g: sorted(v) for g, v in expected.items()}
    assert all(len(v) > 2000 for v in got.values())


def test_values_other_than_rids_are_left_to_collect_list(spark):
    rows = _rows(spark)
    with pytest.raises(ValueError, match="column n holds int, not rids"):
        rid_collector.rids_column(rows, "n")
    b = Bridge(spark)
    out = b.analyzed(rows.selectExpr("g", "named_struct('k', g) AS handle")).output()
    assert rid_collector.collect_rids(spark, out.apply(1), nested=False, distinct=False) is None
    assert "collect_list" in b.collect_rids(out.apply(1), nested=False, repeats=False).toString()
    assert "sparkprov_rids" in b.collect_rids(out.apply(0), nested=False, repeats=True).toString()


def test_without_the_collector_capture_keeps_collect_list(spark, monkeypatch):
    monkeypatch.setattr(rid_collector, "compiled", lambda *a: None)
    b = Bridge(spark)
    attr = b.analyzed(_rows(spark)).output().apply(1)
    assert "collect_list" in b.collect_rids(attr, nested=False, repeats=False).toString()


def test_a_jar_that_cannot_be_added_leaves_collect_list_and_says_why(spark, monkeypatch, caplog):
    def unreadable(*args):
        raise OSError("no space left on device")

    monkeypatch.setattr(rid_collector, "bytecode", unreadable)
    with caplog.at_level("WARNING", logger="sparkprov"):
        assert rid_collector._ship(spark) is False
    assert "collected by collect_list" in caplog.text and "no space left" in caplog.text
