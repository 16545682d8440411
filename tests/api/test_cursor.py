"""Stepping through a pipeline's lineage with a cursor (Titian's goBack / goNext)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import sparkprov as sp


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory):
    """orders + customers -> clean (written to files) -> by_segment (shared by the tests)."""
    tmp_path = tmp_path_factory.mktemp("navigation")
    session = sp.LineageSession(spark, store=tmp_path / "store")
    orders = session.source(
        spark.createDataFrame([(i, i % 4, float(i % 5) - 1.0) for i in range(24)], "id int, cust int, total double"),
        "orders",
    )
    customers = session.source(
        spark.createDataFrame([(0, "retail"), (1, "retail"), (2, "trade"), (3, "trade")], "cust int, segment string"),
        "customers",
    )
    clean = session.capture(
        orders.where("total > 0").join(customers, "cust"), name="clean", path=str(tmp_path / "clean")
    )
    written = spark.read.parquet(str(tmp_path / "clean"))
    session.source(written, "clean_files")
    summary = session.capture(written.groupBy("segment").agg(F.sum("total").alias("revenue")), name="by_segment")
    return clean, summary


def ids(df):
    return sorted(r["id"] for r in df.collect())


def test_go_back_step_by_step_and_all_the_way(spark, pipeline):
    clean, summary = pipeline
    at = summary.lineage("segment = 'trade'")
    assert at.positions == ["by_segment"] and at.count() == 1
    trade = [i for i in range(24) if i % 4 in (2, 3) and i % 5 > 1]
    written = at.go_back()  # the files' rows are the output rows of the capture that wrote them
    assert written.positions == ["clean"] and ids(written.to_df()) == trade
    assert at.go_back(path="clean_files").positions == ["clean"]
    sources = written.go_back()
    assert sorted(sources.positions) == ["clean/customers", "clean/orders"]
    assert ids(sources.dataframes()["clean/orders"]) == trade
    assert sorted(r["cust"] for r in sources.dataframes()["clean/customers"].collect()) == [2, 3]
    only = written.go_back(path="customers")
    assert only.positions == ["clean/customers"] and only.count() == 2
    assert written.go_back(path=1).positions == written.go_back(path="customers").positions  # by position
    at_sources = at.go_back_all()
    assert sorted(at_sources.positions) == ["clean/customers", "clean/orders"]
    assert ids(at_sources.dataframes()["clean/orders"]) == trade
    with pytest.raises(ValueError, match="already at the sources"):
        at_sources.go_back()


def test_go_next_and_dataframe_methods(spark, pipeline):
    clean, summary = pipeline
    bad = clean.lineage("total = 3.0", source="orders")
    assert bad.positions == ["clean/orders"]
    assert ids(bad.to_df()) == [i for i in range(24) if i % 5 == 4]
    outputs = bad.go_next()
    assert outputs.positions == ["clean"] and ids(outputs.to_df()) == ids(bad.to_df())
    finals = bad.go_next_all()
    assert finals.positions == ["by_segment"]
    assert sorted(r["segment"] for r in finals.to_df().collect()) == ["retail", "trade"]
    # a cursor at one position is used like the DataFrame of its rows
    assert finals.filter("segment = 'trade'").count() == 1
    assert finals.select("segment").columns == ["segment"]
    assert {r["cust"]: r["count"] for r in bad.groupBy("cust").count().collect()} == {0: 1, 1: 1, 2: 1, 3: 1}
    with pytest.raises(ValueError, match="already at the outputs"):
        finals.go_next()


def test_steps_are_lazy_and_arguments_checked(spark, pipeline):
    clean, summary = pipeline
    # a capture whose lineage is in its output rows builds its pair table on the first
    # answer that needs one, a job that then runs once: built here, whichever test of
    # the module runs first
    summary.lineage("revenue > 0").go_back().go_back(path="orders").count()
    sc = spark.sparkContext
    sc.setJobGroup("navigation", "steps only")
    try:
        cursor = summary.lineage("revenue > 0").go_back().go_back(path="orders")
        assert sc.statusTracker().getJobIdsForGroup("navigation") == []  # nothing ran yet
    finally:
        sc.setJobGroup("", "")
    assert cursor.count() > 0
    with pytest.raises(ValueError, match="no source 'nope'"):
        clean.lineage([0]).go_back(path="nope")
    with pytest.raises(ValueError, match="no position 5"):
        clean.lineage([0]).go_back(path=5)
    with pytest.raises(ValueError, match="2 positions"):
        clean.lineage([0]).go_back().to_df()
    with pytest.raises(ValueError, match="has no source 'nope'"):
        clean.lineage("id = 1", source="nope")
    with pytest.raises(AttributeError):
        clean.lineage([0]).no_such_method  # noqa: B018
    assert isinstance(clean.lineage([0]), sp.LineageCursor)


def test_marks_are_points_cursors_step_to(spark, session):
    orders = session.source(
        spark.createDataFrame([(i, i % 3, float(i % 5) - 1.0) for i in range(30)], "id int, cust int, total double"),
        "orders",
    )
    cleaned = sp.mark(orders.where("total > 0"), "cleaned")
    cap = session.capture(cleaned.groupBy("cust").agg(F.sum("total").alias("revenue")), name="revenue")
    assert list(cap.sources) == ["cleaned"]
    assert "revenue.cleaned" in session.captures()  # the marked rows, a capture of their own
    expected = [i for i in range(30) if i % 3 == 1 and i % 5 > 1]
    marked = cap.lineage("cust = 1").go_back()
    assert marked.positions == ["revenue.cleaned"] and ids(marked.to_df()) == expected
    origin = marked.go_back()
    assert origin.positions == ["revenue.cleaned/orders"] and ids(origin.to_df()) == expected
    assert ids(cap.backward("cust = 1", end_to_end=True)["revenue.cleaned/orders"]) == expected
    assert origin.go_next_all().positions == ["revenue"]
    # a marked DataFrame used twice (a self-join) is captured once and read twice
    pairs = cleaned.alias("a").join(cleaned.alias("b"), F.col("a.cust") == F.col("b.cust"))
    joined = session.capture(pairs.select(F.col("a.id").alias("left"), F.col("b.id").alias("right")), name="pairs")
    assert joined.output.count() == pairs.count()
    row = joined.output.where("left = 2 AND right = 14").first()
    assert ids(joined.lineage([row["_sp_rid"]]).go_back_all().to_df()) == [2, 14]
    with pytest.raises(ValueError, match="invalid capture name"):
        sp.mark(orders, "bad name")
