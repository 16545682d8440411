"""Drill-down: a workload's aggregation over the backward lineage, answered from the
table capture stored, equals the aggregation over the traced rows."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from pyspark.logger import PySparkLogger
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch
from sparkprov.query import drill_down, trace

AGGREGATES = [
    "count(*)",
    "count(mode)",
    "sum(price)",
    "avg(price)",
    "avg(w)",
    "sum(oid)",
    "avg(cust)",
    "min(oid)",
    "max(mode)",
]


def sorted_rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _same(got, want) -> bool:
    # doubles summed in another order may differ in their last bits, as Spark's own do
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            if isinstance(a, float) and isinstance(b, float):
                if not math.isclose(a, b, rel_tol=1e-12):
                    return False
            elif a != b:
                return False
    return True


def _expected(cap, rows):
    return cap.backward(rows, "orders").groupBy("mode").agg(*[F.expr(a).alias(a) for a in AGGREGATES])


@pytest.mark.parametrize("strategy", ["auto", "logical", "lazy"])
def test_a_drill_down_is_the_aggregation_of_the_tracedsorted_rows(session, orders, customers, strategy):
    query = orders.join(customers, "cust").groupBy("region").agg(F.sum("price").alias("total"))
    spec = {"sources": ["orders"], "group_by": {"orders": {"by": ["mode"], "aggregates": AGGREGATES}}}
    cap = session.capture(query, f"by_region_{strategy}", strategy=strategy, workload=spec)
    # rids and a predicate's few rids are merged in this process, output rows by Spark
    for rows in ([0], [0, 1], "region = '1'", "total < 0", cap.output.where("region = '1'")):
        got = cap.drill_down(rows, "orders")
        assert [f.name for f in got.schema.fields] == ["mode", *AGGREGATES]
        assert [f.dataType for f in got.schema.fields] == [f.dataType for f in _expected(cap, rows).schema.fields]
        assert _same(sorted_rows(got), sorted_rows(_expected(cap, rows))), rows
    # the NULL mode is a group of its own; the decimal average is Spark's, to the digit
    everything = {r["mode"]: r for r in cap.drill_down("total > 0", "orders").collect()}
    assert everything[None]["count(*)"] == 9 and everything[None]["count(mode)"] == 0
    ones = [i for i in range(60) if i % 3 == 1 and i % 7]
    assert everything["1"]["avg(price)"] == Decimal("37.205882") == round(Decimal("1.25") * sum(ones) / len(ones), 6)


def test_an_aggregates_groups_are_answered_from_the_stored_table_alone(session, orders, monkeypatch):
    # a column named in another case, as Spark resolves it
    spec = {"sources": ["orders"], "group_by": {"orders": ["MODE"]}}
    cap = session.capture(orders.groupBy("cust").agg(F.count("*").alias("n")), "by_cust", workload=spec)
    want = {
        rows: sorted_rows(cap.backward(rows, "orders").groupBy("mode").agg(F.count("*").alias("count(*)")))
        for rows in ((0, 1, 2), "n > 0")
    }

    def not_read(*args, **kwargs):
        raise AssertionError("the lineage was read")

    # no source row is behind two output rows: partial counts add up, and neither the
    # pairs nor the source rows behind them are read
    monkeypatch.setattr(sp.Capture, "pairs", not_read)
    monkeypatch.setattr(trace, "backward", not_read)
    here = cap.drill_down([0, 1, 2], "orders")  # rids: merged in this process
    assert here.inputFiles() == [] and sorted_rows(here) == want[(0, 1, 2)]
    assert here.columns == ["MODE", "count(*)"]
    few = cap.drill_down("n > 0", "orders")  # a predicate matching few rows: their rids merged here
    assert few.inputFiles() == [] and sorted_rows(few) == want["n > 0"]
    monkeypatch.setattr(drill_down, "MERGED_HERE_MAX", 2)  # more than that: merged by Spark
    on_spark = cap.drill_down("n > 0", "orders")
    assert any("/drill/" in f for f in on_spark.inputFiles()) and sorted_rows(on_spark) == want["n > 0"]
    # and from another session, with the table kept in the store
    again = sp.LineageSession(session.spark, store=session.store.root).load("by_cust")
    assert sorted_rows(again.drill_down([0, 1, 2], "orders")) == want[(0, 1, 2)]


def test_rows_behind_several_outputs_are_counted_once(spark, session, orders):
    # every order is behind two output rows (one per copy), so stored counts per
    # output row cannot be added up: the answer reads the lineage
    copies = session.source(spark.createDataFrame([(0,), (1,)], "copy int"), "copies")
    spec = {"sources": ["orders"], "group_by": {"orders": ["mode"]}}
    cap = session.capture(orders.crossJoin(copies), "fan_out", workload=spec)
    for rows in ([0], [0, 1, 2, 3], "oid < 30"):
        want = cap.backward(rows, "orders").groupBy("mode").agg(F.count("*").alias("count(*)"))
        assert sorted_rows(cap.drill_down(rows, "orders")) == sorted_rows(want)


def test_a_drill_down_that_cannot_be_computed_is_refused_before_the_query_runs(session, orders, monkeypatch):
    query = orders.groupBy("cust").count()
    logged = []  # one error, sparkprov's: not PySpark's log of the analysis error too
    monkeypatch.setattr(PySparkLogger.getLogger("DataFrameQueryContextLogger"), "callHandlers", logged.append)
    for group_by, message in [
        (["nope"], "workload group_by for source 'orders' cannot be computed over its rows"),
        ({"by": ["mode"], "aggregates": ["sum(mode_x)"]}, "cannot be computed over its rows"),
        ({"by": ["mode"], "aggregates": ["count(DISTINCT oid)"]}, "is not one of count"),
        (
            {"by": ["cust"], "aggregates": ["avg(mode)"]},
            r"avg of column mode \(string\); sum and avg are kept for numeric",
        ),
        ({"by": ["mode"], "aggregates": ["sum(*)"]}, "is not one of count"),
        ({"by": []}, "non-empty list of column names"),
        ({"columns": ["mode"]}, "takes a list of columns"),
    ]:
        with pytest.raises(ValueError, match=message):
            session.capture(query, "bad", workload={"sources": ["orders"], "group_by": {"orders": group_by}})
    assert session.captures() == [] and logged == []
    with pytest.raises(ValueError, match=r"group_by names source\(s\) \['customers'\] not among its sources"):
        sp.Workload(sources=["orders"], group_by={"customers": ["region"]})
    cap = session.capture(query, "plain_counts")
    with pytest.raises(ValueError, match="has no drill-down for source 'orders'"):
        cap.drill_down([0], "orders")


def test_tpch_q1_drills_down_by_ship_mode(spark, tpch_dir, tmp_path):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    aggregates = ["count(*)", "sum(l_quantity)", "avg(l_discount)"]
    spec = {"sources": ["lineitem"], "group_by": {"lineitem": {"by": ["l_shipmode"], "aggregates": aggregates}}}
    cap = session.capture(spark.sql(tpch.query(1)), "q1", workload=spec)
    for rows in ("l_returnflag = 'R'", [0, 1, 2, 3]):
        want = cap.backward(rows, "lineitem").groupBy("l_shipmode").agg(*[F.expr(a).alias(a) for a in aggregates])
        assert sorted_rows(cap.drill_down(rows, "lineitem")) == sorted_rows(want)


def test_a_source_changed_after_capture_is_said(spark, session, tmp_path):
    path = str(tmp_path / "orders.parquet")
    spark.createDataFrame([(i, str(i % 2)) for i in range(10)], "oid long, mode string").write.parquet(path)
    orders = session.source(spark.read.parquet(path), "orders")
    spec = {"sources": ["orders"], "group_by": {"orders": ["mode"]}}
    cap = session.capture(orders.groupBy("mode").count(), "counts", workload=spec)
    assert sorted_rows(cap.drill_down([0, 1], "orders")) == [("0", 5), ("1", 5)]
    spark.createDataFrame([(99, "1")], "oid long, mode string").write.mode("append").parquet(path)
    with pytest.raises(sp.SourceChanged, match="source 'orders' changed after capture"):
        cap.drill_down([0, 1], "orders")


def test_nan_is_the_highest_double_as_in_spark(spark, session):
    rows = [(0, "a", 1.0), (1, "a", float("nan")), (2, "b", 2.0), (3, "b", 3.0)]
    orders = session.source(spark.createDataFrame(rows, "oid long, mode string, w double"), "orders")
    spec = {"sources": ["orders"], "group_by": {"orders": {"by": ["mode"], "aggregates": ["min(w)", "max(w)"]}}}
    cap = session.capture(orders.groupBy("oid").count(), "by_oid", workload=spec)
    got = {r["mode"]: (r["min(w)"], r["max(w)"]) for r in cap.drill_down([0, 1, 2, 3], "orders").collect()}
    assert got["a"][0] == 1.0 and math.isnan(got["a"][1]) and got["b"] == (2.0, 3.0)
