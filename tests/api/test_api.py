"""The public API: sources of every kind, rows arguments, errors, change detection."""

from __future__ import annotations

import os
import shutil
import time

import pyarrow.parquet as pq
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader

import sparkprov as sp

from ..cli.test_main import sparkprov_cli


@pytest.fixture
def people(spark, tmp_path):
    rows = [(1, "ann", "NL", 30), (2, "bob", "NL", 20), (3, "cid", "BE", 50), (4, "dan", "FR", 10), (5, "eve", "BE", 5)]
    df = spark.createDataFrame(rows, "id int, name string, country string, amount int")
    paths = {}
    for fmt in ("parquet", "csv", "json", "orc"):
        path = str(tmp_path / f"people.{fmt}")
        df.coalesce(1).write.format(fmt).option("header", True).save(path)
        paths[fmt] = path
    return df, paths


def read(spark, fmt, path):
    if fmt == "csv":
        return spark.read.option("header", True).schema("id int, name string, country string, amount int").csv(path)
    return spark.read.format(fmt).load(path)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json", "orc"])
def test_file_sources_trace_both_ways(spark, session, people, fmt):
    _, paths = people
    df = read(spark, fmt, paths[fmt])
    cap = session.capture(df.where("amount >= 10").groupBy("country").agg(F.sum("amount").alias("total")), name="t")
    (name,) = cap.sources
    assert name == paths[fmt]  # named by its path
    assert cap.sources[name].kind == ("parquet" if fmt == "parquet" else "snapshot")
    nl = cap.backward("country = 'NL'", source=name)
    assert sorted(r["name"] for r in nl.collect()) == ["ann", "bob"]
    assert set(nl.columns) == {"id", "name", "country", "amount", "_sp_rid"}
    be = cap.backward("total = 50 AND country = 'BE'")[name]
    assert [r["name"] for r in be.collect()] == ["cid"]  # eve (5) was filtered out
    eve = cap.forward(name, "name = 'eve'")
    assert eve.count() == 0  # filtered-out rows have no forward lineage
    fwd = cap.forward(name, "name IN ('ann', 'dan')")
    assert sorted((r["country"], r["total"]) for r in fwd.collect()) == [("FR", 10), ("NL", 50)]


def test_sources_named_by_view_table_and_session(spark, session, people, tmp_path):
    df, paths = people
    spark.read.parquet(paths["parquet"]).createOrReplaceTempView("people_view")
    spark.sql(f"CREATE TABLE people_tbl USING parquet LOCATION '{tmp_path / 'tbl'}' AS SELECT * FROM people_view")
    codes = session.source(
        spark.createDataFrame([("NL", "Netherlands"), ("BE", "Belgium")], "code string, label string"), "countries"
    )
    joined = (
        spark.table("people_view")
        .join(
            spark.table("people_tbl").select(F.col("id").alias("tid"), F.col("amount").alias("a2")),
            F.col("id") == F.col("tid"),
        )
        .join(codes, F.col("country") == F.col("code"))
        .select("name", "label", "a2")
    )
    cap = session.capture(joined, name="named")
    assert set(cap.sources) == {"people_view", "people_tbl", "countries"}
    back = cap.backward("name = 'cid'")
    assert [r["label"] for r in back["countries"].collect()] == ["Belgium"]
    assert [r["id"] for r in back["people_tbl"].collect()] == [3]
    spark.sql("DROP TABLE people_tbl")


def test_rows_arguments(spark, session, people):
    df, _ = people
    cap = session.capture(df.select("id", (F.col("amount") * 2).alias("double")), name="rows")
    out = cap.output
    assert out.columns == ["id", "double", "_sp_rid"]
    first = out.orderBy("id").first()
    by_rid = cap.backward([first["_sp_rid"]], source="dataframe_0").collect()
    by_row = cap.backward([first], source="dataframe_0").collect()
    by_df = cap.backward(out.where("id = 1"), source="dataframe_0").collect()
    by_pred = cap.backward("id = 1", source="dataframe_0").collect()
    assert by_rid == by_row == by_df == by_pred and [r["name"] for r in by_rid] == ["ann"]
    assert cap.backward([], source="dataframe_0").count() == 0
    with pytest.raises(ValueError, match="_sp_rid"):
        cap.backward(df)
    with pytest.raises(ValueError, match="predicate"):
        cap.backward("no_such_column > 1")
    with pytest.raises(ValueError, match="predicate"):
        cap.backward("id = = 1")
    with pytest.raises(ValueError):
        cap.backward(3.5)
    with pytest.raises(ValueError, match="integers"):
        cap.backward(["x"])
    with pytest.raises(ValueError, match="no source"):
        cap.backward([0], source="nope")
    with pytest.raises(ValueError, match="no source"):
        cap.forward("nope", [0])


class OneRowReader(DataSourceReader):
    def read(self, partition):
        yield (1,)


class OneRow(DataSource):  # a Python data source: read through DataSource V2, not supported
    @classmethod
    def name(cls):
        return "sp_one_row"

    def schema(self):
        return "k int"

    def reader(self, schema):
        return OneRowReader()


def test_errors_are_clear(spark, session, people, tmp_path):
    df, _ = people
    with pytest.raises(sp.CaptureNotFound):
        session.load("never")
    with pytest.raises(ValueError):
        session.capture(df, name="bad/name")
    with pytest.raises(ValueError):
        session.capture("SELECT 1", name="x")
    with pytest.raises(ValueError):
        sp.LineageSession("not a session")
    w = Window.partitionBy("country").orderBy("amount")
    spark.dataSource.register(OneRow)
    cases = {
        "DataSourceV2ScanRelation": spark.read.format("sp_one_row").load(),  # a Python data source
        # found while rewriting, after work has started: nothing may be left behind
        "Window (lag IGNORE NULLS)": df.withColumn("r", F.row_number().over(w)).selectExpr(
            "*", "lag(amount) IGNORE NULLS OVER (PARTITION BY country ORDER BY r) AS prev"
        ),
    }
    for operator, query in cases.items():
        with pytest.raises(sp.UnsupportedOperation) as err:
            session.capture(query, name="unsupported")
        assert operator in str(err.value)
    assert session.captures() == []
    assert os.listdir(tmp_path / "store" / "data") == []


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("change", ["modify", "delete", "add"])
def test_changed_source_is_reported(spark, session, people, tmp_path, fmt, change):
    df, _ = people
    path = str(tmp_path / f"src.{fmt}")
    df.coalesce(1).write.format(fmt).option("header", True).save(path)
    cap = session.capture(read(spark, fmt, path).where("amount > 10"), name="c")
    (name,) = cap.sources
    (behind,) = cap.backward([0], source=name).collect()
    time.sleep(0.01)
    if change == "modify":
        df.limit(2).coalesce(1).write.mode("overwrite").format(fmt).option("header", True).save(path)
    elif change == "delete":
        shutil.rmtree(path)
    else:
        df.limit(1).coalesce(1).write.mode("append").format(fmt).option("header", True).save(path)
    if fmt == "parquet":  # read in place: its rids would name other rows
        with pytest.raises(sp.SourceChanged, match=name):
            cap.backward([0])
        with pytest.raises(sp.SourceChanged):
            cap.forward(name, [0])
        with pytest.raises(sp.SourceChanged):
            session.load("c").sources[name].rows()
        return
    # copied at capture: traced from the copy, as captured, and said
    for engine in ("embedded", "spark"):
        with pytest.warns(sp.SourceChangedWarning, match=f"source '{name}' changed after capture"):
            assert cap.backward([0], source=name, engine=engine).count() == 1
        with pytest.warns(sp.SourceChangedWarning):
            assert [r._sp_rid for r in cap.forward(name, [behind._sp_rid], engine=engine).collect()] == [0]
    store = str(session.store.root)
    said = sparkprov_cli("trace", "backward", "c", "--where", "amount > 10", "--store", store)
    assert (
        said.returncode == 0 and "sparkprov: warning: source" in said.stderr and "copy kept at capture" in said.stderr
    )
    refused = sparkprov_cli("trace", "backward", "c", "--where", "amount > 10", "--store", store, "--refuse-changed")
    assert refused.returncode == 1 and "sparkprov: error: source" in refused.stderr and not refused.stdout


def test_range_limit_union_and_reload(spark, session):
    base = spark.range(0, 20, 3)
    q = base.orderBy(F.desc("id")).limit(2).unionAll(spark.range(5).where("id = 1")).distinct()
    cap = session.capture(q, name="mix")
    assert sorted(r["id"] for r in cap.output.collect()) == [1, 15, 18]
    again = session.load("mix")
    assert again.version == 1 and sorted(again.sources) == sorted(cap.sources)
    lineage = {}
    for r in again.output.collect():
        back = again.backward([r["_sp_rid"]])
        lineage[r["id"]] = sorted(x["id"] for df in back.values() for x in df.collect())
    assert lineage == {1: [1], 15: [15], 18: [18]}
    report = again.explain()
    assert "all exact" in report.splitlines()[0]
    assert "Union" in report and "Aggregate" in report and "source range_" in report


def test_partitioned_parquet_and_awkward_names(spark, session, tmp_path):
    df = spark.createDataFrame([(1, "NL", 5), (2, "BE", 7), (3, "NL", 9)], "id int, country string, amount int")
    df.write.partitionBy("country").parquet(str(tmp_path / "part"))
    part = spark.read.parquet(str(tmp_path / "part"))
    cap = session.capture(part.where("country = 'NL'").groupBy("country").sum("amount"), name="part")
    (name,) = cap.sources
    back = cap.backward([0], source=name)
    assert sorted((r["id"], r["country"]) for r in back.collect()) == [(1, "NL"), (3, "NL")]

    odd = spark.createDataFrame([(1, 2), (3, 4)], "x int, x int").toDF("a b", "a b")
    cap2 = session.capture(odd.limit(5), name="odd")
    assert cap2.output.columns == ["a b", "a b", "_sp_rid"]
    assert sorted(tuple(r)[:2] for r in cap2.output.collect()) == [(1, 2), (3, 4)]
    rows = cap2.backward([r["_sp_rid"] for r in cap2.output.collect()])
    (src,) = rows.values()
    assert src.columns == ["x", "x", "_sp_rid"] and src.count() == 2  # the source's own names


def test_checkpoints_keep_or_cut_lineage(spark, session, tmp_path):
    orders = session.source(
        spark.createDataFrame([(1, "NL", 5), (2, "NL", -1), (3, "BE", 7), (4, "NL", 9)], "id int, c string, n int"),
        "orders",
    )
    # session.checkpoint: stored like df.checkpoint(), and traced through
    stage = session.checkpoint(orders.where("n > 0"), "stage")
    cap = session.capture(stage.groupBy("c").agg(F.sum("n").alias("total")), name="totals")
    (nl,) = cap.output.where("c = 'NL'").collect()
    through = cap.backward([nl["_sp_rid"]], end_to_end=True)
    assert list(through) == ["stage/orders"]
    assert sorted(r["id"] for r in through["stage/orders"].collect()) == [1, 4]
    # df.localCheckpoint() cuts the plan: lineage stops at its rows, and explain() says so
    cut = session.capture(orders.where("n > 0").localCheckpoint().groupBy("c").count(), name="cut")
    (src,) = cut.sources
    assert src != "orders"
    assert "a checkpoint" in cut.explain()


def test_pipeline_of_captures_traces_end_to_end(spark, session, tmp_path):
    orders = spark.createDataFrame(
        [(1, "NL", 5), (2, "NL", -1), (3, "BE", 7), (4, "NL", 9), (5, "BE", 2)], "id int, country string, amount int"
    )
    orders.coalesce(1).write.parquet(str(tmp_path / "orders"))
    raw = session.source(spark.read.parquet(str(tmp_path / "orders")), "orders")
    clean_path = tmp_path / "clean"
    clean = session.capture(raw.where("amount > 0").repartition(2), name="clean", path=clean_path)
    written = spark.read.parquet(str(clean_path))
    assert written.columns == ["id", "country", "amount"]  # the user's columns only
    assert sorted(r["id"] for r in written.collect()) == [1, 3, 4, 5]

    totals = session.capture(
        spark.read.parquet(str(clean_path)).groupBy("country").agg(F.sum("amount").alias("total")), name="totals"
    )
    (nl,) = totals.output.where("country = 'NL'").collect()
    assert nl["total"] == 14
    (direct,) = totals.backward([nl["_sp_rid"]]).values()  # one step: rows of the written files
    assert sorted(r["id"] for r in direct.collect()) == [1, 4]
    through = totals.backward([nl["_sp_rid"]], end_to_end=True)
    assert list(through) == ["clean/orders"]
    assert sorted(r["id"] for r in through["clean/orders"].collect()) == [1, 4]

    (first,) = [r["_sp_rid"] for r in clean.sources["orders"].rows().where("id = 1").collect()]
    reached = clean.forward("orders", [first], end_to_end=True)
    assert sorted(reached) == ["clean", "totals"]
    assert [r["id"] for r in reached["clean"].collect()] == [1]
    assert [r["country"] for r in reached["totals"].collect()] == ["NL"]

    # a diamond: per-country totals read twice, once through their grand total; forward
    # from an order reaches the rows of the last capture along both paths
    countries = spark.read.parquet(str(clean_path)).groupBy("country").agg(F.sum("amount").alias("total"))
    session.capture(countries, name="countries", path=tmp_path / "countries")
    grand = spark.read.parquet(str(tmp_path / "countries")).agg(F.sum("total").alias("grand"))
    session.capture(grand, name="grand", path=tmp_path / "grand")
    report = spark.read.parquet(str(tmp_path / "grand")).crossJoin(spark.read.parquet(str(tmp_path / "countries")))
    session.capture(report, name="report")
    reached = clean.forward("orders", [first], end_to_end=True)
    assert sorted(r["country"] for r in reached["report"].collect()) == ["BE", "NL"]

    session.capture(raw.where("amount > 6"), name="big", table="sp_big_orders")
    table = session.capture(spark.table("sp_big_orders").select("id"), name="from_table")
    assert sorted(r["id"] for r in table.backward("id >= 0", end_to_end=True)["big/orders"].collect()) == [3, 4]
    with pytest.raises(ValueError, match="append"):
        session.capture(raw, name="again", path=clean_path, mode="append")
    with pytest.raises(Exception, match="already exists"):
        session.capture(raw, name="again", path=clean_path)


def test_register_views_make_lineage_queries_plain_sql(spark, session, people):
    df, _ = people
    session.source(df, "people")
    cap = session.capture(df.groupBy("country").agg(F.sum("amount").alias("total")), name="by-country")
    views = cap.register_views()
    assert set(views) == {"by_country_output", "by_country_backward_people", "by_country_forward_people"}
    rid = {r["country"]: r["_sp_rid"] for r in spark.sql("SELECT * FROM by_country_output").collect()}
    behind = spark.sql(f"SELECT name, _sp_in_rid FROM by_country_backward_people WHERE _sp_rid = {rid['NL']}")
    assert sorted(r["name"] for r in behind.collect()) == ["ann", "bob"]
    # a lineage-consuming query: a statistic over the lineage of every output row, in one statement
    biggest = spark.sql(
        "SELECT o.country, max(b.amount) AS top FROM by_country_output o "
        "JOIN by_country_backward_people b ON b._sp_rid = o._sp_rid GROUP BY o.country"
    )
    assert {r["country"]: r["top"] for r in biggest.collect()} == {"NL": 30, "BE": 50, "FR": 10}
    ann = [r["_sp_in_rid"] for r in behind.collect() if r["name"] == "ann"]
    ahead = spark.sql(f"SELECT country, total FROM by_country_forward_people WHERE _sp_in_rid = {ann[0]}")
    assert [(r["country"], r["total"]) for r in ahead.collect()] == [("NL", 50)]


def test_a_top_level_order_is_kept_with_the_output_and_applied_when_read(spark, session, people, tmp_path):
    _, paths = people
    src = spark.read.parquet(paths["parquet"])
    src = src.withColumn("country", F.when(F.col("country") != "FR", F.col("country")))  # FR's row: NULL
    totals = src.groupBy("country").agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
    # NL and BE tie on n (2 rows each): the next key, with NULLs last, orders them
    q = totals.orderBy(F.desc_nulls_first("n"), F.col("country").asc_nulls_last())
    cap = session.capture(q, "ordered")
    assert [tuple(r)[:-1] for r in cap.output.collect()] == [("BE", 55, 2), ("NL", 50, 2), (None, 10, 1)]
    # the order is recorded and explained; the stored rows carry their lineage unsorted
    assert cap._entry.output.order == [[2, False, True], [0, True, False]]
    top = cap._entry.explain[0]
    assert top[1].startswith("Sort") and "applied when they are read" in top[3]
    # each output row still traces to its own input rows
    (name,) = cap.sources
    nl = cap.output.where("country = 'NL'").first()["_sp_rid"]
    assert sorted(r["id"] for r in cap.backward([nl])[name].collect()) == [1, 2]
    # an order on an expression, not a column: sorted as before, nothing recorded
    by_expr = totals.orderBy(F.col("total") % 7, "country")
    cap2 = session.capture(by_expr, "by_expr")
    assert cap2._entry.output.order is None
    assert [tuple(r)[:-1] for r in cap2.output.collect()] == [tuple(r) for r in by_expr.collect()]
    # files written for the user are sorted in the files themselves (part files in name order)
    out = tmp_path / "written"
    session.capture(q, "written", path=str(out))
    rows = [row for f in sorted(out.glob("part-*.parquet")) for row in pq.read_table(f).to_pylist()]
    assert [(r["country"], r["total"], r["n"]) for r in rows] == [("BE", 55, 2), ("NL", 50, 2), (None, 10, 1)]
