"""The embedded engine gives the Spark engine's answers, without Spark."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.cli import answers
from sparkprov.errors import EmbeddedUnsupported
from sparkprov.query import engines
from sparkprov.query.embedded import EmbeddedEngine
from sparkprov.store.layout import local_path


def sales(spark, folder):
    rows = [(i, f"c{i % 4}", i % 3, float(i * 7 % 23), f"2024-0{i % 9 + 1}-1{i % 10}") for i in range(40)]
    df = spark.createDataFrame(rows, "id int, cust string, region int, amount double, day string")
    path = str(folder / "sales 100%")  # Hadoop percent-encodes such paths in its URIs
    df.repartition(3).write.parquet(path)  # three files: rids name the file too
    regions = spark.createDataFrame([(0, "north"), (1, "south"), (2, "west")], "region int, rname string")
    return spark.read.parquet(path), regions


@pytest.fixture(scope="module")
def made(spark, tmp_path_factory):
    """One store with captures of every kind of lineage (shared by the read-only tests)."""
    folder = tmp_path_factory.mktemp("embedded")
    session = sp.LineageSession(spark, store=folder / "store")
    facts, regions = sales(spark, folder)
    facts.createOrReplaceTempView("facts")
    session.source(facts, "facts")
    session.source(regions, "regions")
    joined = facts.join(regions, "region")
    w = Window.partitionBy("cust").orderBy("id").rowsBetween(-2, 0)
    caps = [
        session.capture(joined.groupBy("rname", "cust").agg(F.sum("amount").alias("total")), name="grouped"),
        session.capture(joined.where("amount > 10").select("id", "rname", "amount"), name="filtered"),
        session.capture(facts.withColumn("moving", F.sum("amount").over(w)), name="windowed"),
        # a scalar subquery: its lineage is stored once and referenced by every row
        session.capture(
            spark.sql("SELECT cust, amount FROM facts WHERE amount > (SELECT avg(amount) FROM facts)"), name="above"
        ),
    ]
    return session, {c.name: c for c in caps}


def small_capture(spark, session, tmp_path):
    facts, _ = sales(spark, tmp_path)
    session.source(facts, "facts")
    return session.capture(facts.groupBy("cust").agg(F.sum("amount").alias("total")), name="small")


def spark_pairs(cap, source):
    return {(r["out_rid"], r["in_rid"]) for r in cap.pairs(source).collect()}


def test_embedded_traces_equal_spark_traces(made):
    session, caps = made
    for cap in caps.values():
        engine = EmbeddedEngine(session.store.load(cap.name))
        outs = [r["_sp_rid"] for r in cap.output.select("_sp_rid").collect()]
        assert engine.output_rows()["_sp_rid"].to_pylist() == outs
        for source in cap.sources:
            pairs = spark_pairs(cap, source)
            assert pairs, (cap.name, source)
            for out in outs:
                expected = sorted(i for o, i in pairs if o == out)
                assert engine.backward_ids([out], source).tolist() == expected, (cap.name, source, out)
            for rid in sorted({i for _, i in pairs}):
                expected = sorted(o for o, i in pairs if i == rid)
                assert engine.forward_ids(source, [rid]).tolist() == expected, (cap.name, source, rid)
            everything = engine.backward_ids(outs, source)
            assert everything.tolist() == sorted({i for _, i in pairs})
            # the rows themselves, as Spark reads them
            rows = engine.source_rows(source, everything).to_pylist()
            assert rows == [
                r.asDict()
                for r in cap.sources[source]
                .rows()
                .where(F.col("_sp_rid").isin(list(everything)))
                .orderBy("_sp_rid")
                .collect()
            ]


def test_predicates_pick_the_rows_spark_picks(made):
    session, caps = made
    cap = caps["grouped"]
    engine = EmbeddedEngine(session.store.load(cap.name))
    for predicate in ["total > 40", "rname = 'south' AND cust IN ('c1', 'c2')", "`total` BETWEEN 10 AND 60"]:
        expected = sorted(r["_sp_rid"] for r in cap.output.where(predicate).collect())
        assert engine.output_rids(predicate).tolist() == expected, predicate
    facts = cap.sources["facts"].rows()
    for predicate in ["amount < 5", "day LIKE '2024-03%' OR id = 7", "substring(cust, 2, 1) = '3'"]:
        expected = sorted(r["_sp_rid"] for r in facts.where(predicate).collect())
        assert engine.source_rids("facts", predicate).tolist() == expected, predicate
    with pytest.raises(ValueError, match="cannot evaluate predicate 'nope > 1'"):
        engine.output_rids("nope > 1")
    with pytest.raises(ValueError, match="cannot parse predicate"):
        engine.output_rids("total >")


def test_answers_agree_between_engines(made):
    session, _ = made
    entry = session.store.load("above")
    root = str(session.store.root)
    for direction, where, source in [("backward", "amount > 15", None), ("forward", "cust = 'c2'", "facts")]:
        embedded = answers.trace(root, entry, direction, where, source, limit=5, engine="embedded")
        on_spark = answers.trace(root, entry, direction, where, source, limit=5, engine="spark")
        assert embedded.engine == "embedded" and on_spark.engine == "spark"
        assert embedded.matched == on_spark.matched > 0
        assert embedded.to_json()["relations"] == on_spark.to_json()["relations"]
    assert "facts: " in embedded.to_text() or "above: " in embedded.to_text()


def test_forward_index_is_built_once_and_kept(spark, session, tmp_path):
    cap = small_capture(spark, session, tmp_path)
    entry = session.store.load(cap.name)
    index = os.path.join(os.path.dirname(entry.lineage.path), "forward")
    assert not os.path.exists(index)  # capture does not build it
    first = EmbeddedEngine(entry).forward_ids("facts", [0])
    assert os.path.isdir(os.path.join(index, "src=0"))
    built = os.path.getmtime(os.path.join(index, "src=0"))
    assert EmbeddedEngine(entry).forward_ids("facts", [0]).tolist() == first.tolist()
    assert os.path.getmtime(os.path.join(index, "src=0")) == built


def test_too_large_falls_back_and_changed_sources_are_refused(spark, session, tmp_path, capsys):
    cap = small_capture(spark, session, tmp_path)
    entry = session.store.load(cap.name)
    with pytest.raises(sp.LineageTooLarge, match="limit of 3"):
        EmbeddedEngine(entry, limit=3).backward_ids(range(100), "facts")
    answer = answers.trace(str(session.store.root), entry, "backward", "total > 0", "facts", embedded_limit=3)
    assert answer.engine == "spark" and "answering with Spark" in capsys.readouterr().err
    facts_file = local_path(sorted(p for p, _, _ in cap._infos["facts"].files)[0])
    assert os.path.isfile(facts_file)
    os.utime(facts_file, (1, 1))
    with pytest.raises(sp.SourceChanged, match="facts"):
        EmbeddedEngine(entry).source_rows("facts", [0])


def test_python_api_engines_give_the_same_dataframes(made):
    _, caps = made

    def rows(df):
        return sorted(tuple(r) for r in df.collect())

    for cap in caps.values():
        first = cap.output.orderBy("_sp_rid").first()["_sp_rid"]
        for picked in ([first], "_sp_rid % 2 = 0"):
            local = cap.backward(picked, engine="embedded")
            on_spark = cap.backward(picked, engine="spark")
            assert set(local) == set(on_spark) == set(cap.sources)
            for name in cap.sources:
                assert local[name].schema == on_spark[name].schema, (cap.name, name)
                assert rows(local[name]) == rows(on_spark[name]), (cap.name, name, picked)
        facts = cap.sources["facts"].rows().where("amount > 15").collect()
        local = cap.forward("facts", facts, engine="embedded")
        assert local.schema == cap.output.schema
        assert rows(local) == rows(cap.forward("facts", facts, engine="spark")) != []
    # a Spark function DuckDB lacks: the embedded engine declines, auto answers with Spark
    grouped, spark_only = caps["grouped"], "find_in_set(cust, 'c1,c2') > 0"
    with pytest.raises(EmbeddedUnsupported, match="DuckDB cannot evaluate"):
        grouped.backward(spark_only, engine="embedded")
    auto = grouped.backward(spark_only, source="facts")
    assert rows(auto) == rows(grouped.backward(spark_only, source="facts", engine="spark")) != []
    with pytest.raises(ValueError, match="engine must be one of"):
        caps["grouped"].backward([0], engine="duckdb")
    with pytest.raises(ValueError, match="not a DataFrame"):
        caps["grouped"].backward(caps["grouped"].output, engine="embedded")


def test_large_answers_stay_distributed(made, monkeypatch):
    _, caps = made
    cap = caps["grouped"]
    small = cap.backward("total > 0", source="facts")
    assert "LocalTableScan" in small._jdf.queryExecution().executedPlan().toString()  # read in-process
    monkeypatch.setattr(engines, "ROWS_LIMIT", 3)
    large = cap.backward("total > 0", source="facts")
    plan = large._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "LeftSemi" in plan  # Spark reads the rows, by the rids found here
    assert sorted(tuple(r) for r in large.collect()) == sorted(tuple(r) for r in small.collect())


def test_end_to_end_traces_are_answered_here_as_on_spark(spark, session, tmp_path):
    # a chain with a diamond: orders -> clean (written) -> countries (written) -> grand
    # (written), and a report reading both countries and grand
    orders = spark.createDataFrame(
        [(i, ["NL", "BE", "DE"][i % 3], i * 3 % 11) for i in range(12)], "id int, c string, v int"
    )
    orders.repartition(2).write.parquet(str(tmp_path / "orders"))
    raw = session.source(spark.read.parquet(str(tmp_path / "orders")), "orders")
    clean = session.capture(raw.where("v > 1").repartition(2), name="clean", path=tmp_path / "clean")
    countries = spark.read.parquet(str(tmp_path / "clean")).groupBy("c").agg(F.sum("v").alias("total"))
    session.capture(countries, name="countries", path=tmp_path / "countries")
    grand = spark.read.parquet(str(tmp_path / "countries")).agg(F.sum("total").alias("grand"))
    session.capture(grand, name="grand", path=tmp_path / "grand")
    report = session.capture(
        spark.read.parquet(str(tmp_path / "grand")).crossJoin(spark.read.parquet(str(tmp_path / "countries"))),
        name="report",
    )

    def rows(df):
        return sorted(tuple(r) for r in df.collect())

    def local(df):  # handed over as rows: no Spark job reads the store's files
        return "FileScan" not in df._jdf.queryExecution().executedPlan().toString()

    for out in report.output.where("c != 'DE'").collect():
        here = report.backward([out["_sp_rid"]], end_to_end=True)
        there = report.backward([out["_sp_rid"]], end_to_end=True, engine="spark")
        assert sorted(here) == sorted(there) == ["countries/clean/orders", "grand/countries/clean/orders"]
        for key in here:
            assert local(here[key]) and here[key].schema == there[key].schema
            assert rows(here[key]) == rows(there[key]) != []
    for first in clean.sources["orders"].rows().where("id < 2").collect():  # id 0 is filtered out
        here = clean.forward("orders", [first["_sp_rid"]], end_to_end=True, engine="embedded")
        there = clean.forward("orders", [first["_sp_rid"]], end_to_end=True, engine="spark")
        assert sorted(here) == sorted(there) == ["clean", "countries", "grand", "report"]
        for key in here:
            assert local(here[key]) and rows(here[key]) == rows(there[key])
        assert len(rows(here["report"])) == (3 if first["v"] > 1 else 0)
    by_predicate = report.backward("c = 'NL'", end_to_end=True)["countries/clean/orders"]
    assert sorted(r["id"] for r in by_predicate.collect()) == [i for i in range(12) if i % 3 == 0 and i * 3 % 11 > 1]
    with pytest.raises(ValueError, match="not a DataFrame"):
        report.backward(report.output, end_to_end=True, engine="embedded")


def test_timestamps_answer_as_on_spark_in_any_session_time_zone(spark, session, tmp_path):
    # Spark writes instants as INT96 by default, which Arrow and DuckDB read without a
    # zone: handed to Spark as they are, they read as New York's wall-clock times
    # (02:30 came back as 06:30); compared with a literal in DuckDB, as UTC's
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        spark.sql(
            "SELECT id, TIMESTAMP'2024-03-11 02:30:00' + make_interval(0, 0, 0, 0, id, 0, 0) AS ts, "
            "TIMESTAMP_NTZ'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, id, 0, 0) AS ntz, "
            "array(TIMESTAMP'2024-03-11 02:30:00') AS arr, named_struct('t', TIMESTAMP'2024-03-11 02:30:00') AS st, "
            "map('k', TIMESTAMP'2024-03-11 02:30:00') AS m FROM range(3)"
        ).write.parquet(str(tmp_path / "times"))
        src = session.source(spark.read.parquet(str(tmp_path / "times")), "times")
        cap = session.capture(src.where("id >= 0"), "times")

        def shown(df):
            cols = ("id", "CAST(ts AS STRING)", "CAST(ntz AS STRING)", "CAST(arr AS STRING)", "CAST(st AS STRING)")
            return sorted(tuple(r) for r in df.selectExpr(*cols, "CAST(m AS STRING)").collect())

        here = shown(cap.backward("id >= 0", engine="embedded")["times"])
        assert here == shown(cap.backward("id >= 0", engine="spark")["times"])
        assert here[0][1:4] == ("2024-03-11 02:30:00", "2024-01-01 00:00:00", "[2024-03-11 02:30:00]")
        assert shown(cap.forward("times", [0, 1], engine="embedded")) == shown(
            cap.forward("times", [0, 1], engine="spark")
        )
        for predicate in ("ts = '2024-03-11 03:30:00'", "ts > TIMESTAMP'2024-03-11 03:00:00'", "st.t IS NOT NULL"):
            with pytest.raises(EmbeddedUnsupported, match="session time zone"):
                cap.backward(predicate, engine="embedded")
            with pytest.raises(EmbeddedUnsupported, match="session time zone"):
                cap.forward("times", predicate, engine="embedded")
            auto = sorted(r.id for r in cap.forward("times", predicate).collect())
            assert auto == sorted(r.id for r in cap.forward("times", predicate, engine="spark").collect())
        assert [r.id for r in cap.forward("times", "ts > TIMESTAMP'2024-03-11 03:00:00'").collect()] == [1, 2]
        # timestamps without a zone compare the same everywhere: answered here
        on_ntz = cap.backward("ntz >= TIMESTAMP_NTZ'2024-01-01 01:00:00'", engine="embedded")["times"]
        assert sorted(r.id for r in on_ntz.collect()) == [1, 2]
        traced = cap.backward("id >= 1", source="times", where="ts > TIMESTAMP'2024-03-11 04:00:00'")
        assert [r.id for r in traced.collect()] == [2]
        with pytest.raises(EmbeddedUnsupported, match="session time zone"):
            cap.backward("id >= 1", source="times", where="ts > TIMESTAMP'2024-03-11 04:00:00'", engine="embedded")
    finally:
        spark.conf.unset("spark.sql.session.timeZone")


def test_a_small_output_is_read_here_as_spark_reads_it(spark, session, tmp_path, monkeypatch):
    facts, _ = sales(spark, tmp_path)
    session.source(facts, "facts")
    nested = ["array(id) AS ids", "named_struct('d', to_date(day), 'n', CAST(NULL AS STRING)) AS st"]
    cap = session.capture(
        facts.selectExpr("id", "cust", "amount", *nested, "map(cust, amount) AS m").where("id > 3"), "rows"
    )
    ordered = session.capture(facts.where("id > 3").orderBy(F.desc("amount"), "id"), "ordered")
    timed = session.capture(facts.selectExpr("id", "INTERVAL '3' DAY AS wait").where("id > 3"), "timed")

    def plan(df):
        return df._jdf.queryExecution().executedPlan().toString()

    here = [(c, c.output) for c in (cap, ordered)]
    monkeypatch.setattr(engines, "OUTPUT_ROWS_HERE", 3)
    for c, local in here:
        spread = c.output  # more rows than read here: Spark reads the files
        assert "FileScan parquet" in plan(spread) and "FileScan" not in plan(local)
        assert local.schema == spread.schema and local.collect() == spread.collect()
    monkeypatch.undo()
    # the kept ORDER BY holds; rows equal on it in rid order
    amounts = [r.amount for r in ordered.output.collect()]
    assert amounts == sorted(amounts, reverse=True) and len(amounts) == 36
    assert "FileScan parquet" in plan(timed.output)  # an interval: Spark reads it
