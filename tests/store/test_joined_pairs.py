"""Pair tables made by joins in DuckDB in this process (store/joined_pairs.py): from kept
witnesses, and at capture for windows, they are those Spark resolves at capture."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch
from sparkprov.sources.identity import RID
from sparkprov.store.format import resolvable_by_joins


def _pairs(cap: sp.Capture) -> dict[str, list[tuple]]:
    # (output row's position in the query's order, input rid) per source: rids name
    # output rows only within one capture
    position = {r[RID]: i for i, r in enumerate(cap.output.select(RID).collect())}
    return {
        s: sorted((position[out], *rest) for out, *rest in cap.pairs(s).collect()) for s in cap._entry.lineage.sources
    }


# Q3: an aggregate over joins; Q13: an aggregate over an aggregate over an outer join;
# Q18: nested aggregates under a semi join; Q22: a scalar subquery (a shared side)
@pytest.mark.parametrize("n", [3, 13, 18, 22])
def test_witnesses_give_the_pairs_spark_resolves(spark, tpch_dir, tmp_path, n):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    plain = session.capture(spark.sql(tpch.query(n)), "plain")
    witnessed = session.capture(spark.sql(tpch.query(n)), "witnessed", witnesses=True)
    assert resolvable_by_joins(witnessed._entry.witnesses)
    if n == 22:  # a shared side's lineage is kept once, at capture, not in every row's pairs
        assert witnessed._entry.lineage.later is None and witnessed._entry.lineage.shared
    else:  # left to the witnesses: nothing made until an answer needs it
        assert witnessed._entry.lineage.later == "witnesses"
        assert not Path(witnessed._entry.lineage.path).exists()
    expected = _pairs(plain)
    assert sum(len(p) for p in expected.values()) > 0
    assert _pairs(witnessed) == expected
    assert Path(witnessed._entry.lineage.path).is_dir()


def test_witnesses_left_to_make_pairs_are_made_in_a_process_without_spark(spark, tpch_dir, tmp_path):
    from sparkprov.query import provenance
    from sparkprov.store.catalog import Store

    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    plain = session.capture(spark.sql(tpch.query(22)), "plain")
    deferred = session.capture(spark.sql(tpch.query(22)), "deferred", witnesses=True, strategy="defer")
    entry = Store(tmp_path / "store").load("deferred")
    provenance.write_pairs(entry)  # by joins; the shared side's rows in every row's pairs
    assert _pairs(deferred) == _pairs(plain)


def test_a_windows_ranges_are_flattened_at_capture_not_left_to_the_witnesses(spark, session):
    # a window's slots name ranges of positions: flattened at capture, where a range
    # too large to flatten can still be declined, not by the first answer
    nums = session.source(spark.createDataFrame([(1, 5), (1, 7), (2, 1)], ["g", "v"]), "nums")
    w = Window.partitionBy("g").orderBy("v").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    q = nums.withColumn("run", F.sum("v").over(w))
    cap = session.capture(q, "running", witnesses=True)
    assert not resolvable_by_joins(cap._entry.witnesses)
    assert cap._entry.lineage.later is None and Path(cap._entry.lineage.path).is_dir()
    assert sorted(r.v for r in cap.backward("run = 12", "nums").collect()) == [5, 7]
    assert _pairs(cap) == _pairs(session.capture(q, "running-plain"))


def _windowed(spark, session):
    # partition keys with NULLs, 0.0 beside -0.0 and NaN beside NaN (one partition each
    # to Spark), ties in the order, frames that run past a partition's end or hold no
    # row, and a window over another window's rows
    nan = float("nan")
    keys = [(1, 0.0), (1, -0.0), (None, 2.0), (None, 2.0), (2, nan), (2, nan), (3, None)]
    rows = [(i, g, k, i % 4, float(i * 7 % 11)) for i, (g, k) in enumerate(keys * 6)]
    data = session.source(spark.createDataFrame(rows, "id long, g int, k double, t int, v double"), "data")
    by_t = Window.partitionBy("g", "k").orderBy("t", "id")
    lower = data.select(
        "id",
        "g",
        "k",
        "t",
        "v",
        F.sum("v").over(by_t.rowsBetween(Window.unboundedPreceding, 0)).alias("running"),
        F.avg("v").over(by_t.rowsBetween(-2, 0)).alias("moving"),
        F.count("v").over(by_t.rowsBetween(2, 4)).alias("ahead"),
        F.lag("v", 2).over(by_t).alias("lagged"),
        F.lead("v").over(by_t).alias("led"),
        F.rank().over(Window.partitionBy("g").orderBy("t")).alias("ranked"),
        F.max("v").over(Window.partitionBy("k").orderBy("t").rangeBetween(-1, 0)).alias("near"),
    )
    return lower.select("*", F.sum("running").over(Window.partitionBy("g").orderBy("t").rangeBetween(0, 1)).alias("up"))


@pytest.mark.parametrize("witnesses", [False, True])
def test_window_ranges_flattened_here_are_those_spark_resolves(spark, session, monkeypatch, witnesses):
    from sparkprov.capture import lineage
    from sparkprov.store import joined_pairs

    made = []
    publish = joined_pairs.publish
    monkeypatch.setattr(joined_pairs, "publish", lambda *a: made.append(publish(*a)) or made[-1])
    q = _windowed(spark, session)
    here = session.capture(q, "here", witnesses=witnesses)
    assert made == [True]  # flattened by joins in DuckDB, not by Spark
    monkeypatch.setattr(lineage, "JOINED_MAX_PAIRS", 10)  # declined past the bound: Spark's
    by_spark = session.capture(q, "by-spark", witnesses=witnesses)
    assert made == [True, False]
    expected = _pairs(by_spark)
    assert len(expected["data"]) > 300
    assert _pairs(here) == expected


def _over_aggregates(spark, session, kind: str):
    # a window over an aggregate whose rows hold their input rows' rids ("rids"), or
    # over one injected above an aggregate kept as a side, holding that side's handles
    # ("groups"; a pandas aggregate stays a side)
    rows = [(i, i % 3, i % 5, float(i % 7)) for i in range(60)]
    data = session.source(spark.createDataFrame(rows, "id long, g int, t int, v double"), "data")
    if kind == "rids":
        top = data.groupBy("g", "t").agg(F.sum("v").alias("s"), F.count("*").alias("n"))
    else:

        @F.pandas_udf("double")
        def total(v: pd.Series) -> float:
            return float(v.sum())

        lower = data.groupBy("g", "t").agg(total("v").alias("s"))
        top = lower.groupBy("g", (F.col("t") % 2).alias("t")).agg(F.sum("s").alias("s"), F.count("*").alias("n"))
    w = Window.partitionBy("g").orderBy(F.desc("s"), "t")
    return top.select("*", F.rank().over(w).alias("r"), F.sum("n").over(w.rowsBetween(-1, 0)).alias("m"))


@pytest.mark.parametrize("kind", ["rids", "groups"])
def test_windows_over_collected_arrays_are_flattened_here(spark, session, monkeypatch, kind):
    from sparkprov.capture import lineage
    from sparkprov.store import joined_pairs

    made, kinds = [], set()
    publish = joined_pairs.publish

    def counted(path, output, structure, accept, *shared):
        kinds.update(s["kind"] for side in structure["sides"].values() for s in side["slots"])
        made.append(publish(path, output, structure, accept, *shared))
        return made[-1]

    monkeypatch.setattr(joined_pairs, "publish", counted)
    q = _over_aggregates(spark, session, kind)
    here = session.capture(q, "here")
    assert made == [True] and kind in kinds
    monkeypatch.setattr(lineage, "JOINED_MAX_PAIRS", 5)
    by_spark = session.capture(q, "by-spark")
    assert made == [True, False]
    expected = _pairs(by_spark)
    assert len(expected["data"]) > 60
    assert _pairs(here) == expected


def test_window_sets_beside_ranges_are_resolved_here(spark, session, monkeypatch):
    from sparkprov.capture import lineage
    from sparkprov.store import joined_pairs

    made = []
    publish = joined_pairs.publish
    monkeypatch.setattr(joined_pairs, "publish", lambda *a: made.append(publish(*a)) or made[-1])
    rows = [(i, i // 20, i // 6, float(i % 7)) for i in range(60)]
    data = session.source(spark.createDataFrame(rows, "id long, g int, t int, v double"), "data")
    # windows over whole partitions (a set each, kept once) beside ranged ones, stacked:
    # the upper sets (by t, 6 rows each) hold rows of the lower sets (by g, 20 rows)
    # and of the ranges
    by_g, by_t = Window.partitionBy("g"), Window.partitionBy("t")
    lower = data.select(
        "id",
        "t",
        (F.col("v") - F.avg("v").over(by_g)).alias("dev"),
        F.sum("v").over(by_g.orderBy("id").rowsBetween(-1, 0)).alias("pair"),
    )
    upper = lower.select("*", F.max("dev").over(by_t).alias("top"))
    # 8 rows, of two of the ten upper sets; the rows of t = 3 are of g = 0, and reach the
    # set of g = 1 only through their own set
    q = upper.where("t = 0 OR (t = 3 AND id < 20)")
    here = session.capture(q, "here")
    assert made == [True]  # sets and ranges resolved by joins in DuckDB, not by Spark
    shared = spark.read.parquet(here._entry.lineage.shared)
    assert {r.ref for r in shared.select("ref").distinct().collect()} == {0, 2}  # two windows' sets
    assert shared.where("ref = 2").select("grp").distinct().count() == 2  # only those the output refers to
    monkeypatch.setattr(lineage, "JOINED_MAX_PAIRS", 5)  # declined past the bound: Spark's
    by_spark = session.capture(q, "by-spark")
    assert made == [True, False]
    expected = _pairs(by_spark)
    assert len(expected["data"]) > 150
    assert _pairs(here) == expected
    sizes = set()
    for r in here.output.collect():  # each row: the partitions by g of its partition's rows
        want = {i for i, g, _, _ in rows if g in {g2 for _, g2, t2, _ in rows if t2 == r.t}}
        assert {x.id for x in here.backward([r[RID]], "data").collect()} == want
        sizes.add(len(want))
    assert sizes == {20, 40}


def test_window_ranges_kept_as_blocks_are_left_to_spark(spark, session, monkeypatch):
    from sparkprov.capture import window_blocks

    # a running total over one partition of 1,500 rows: 1.1M pairs flattened, which
    # blocks keep in a few thousand rows
    monkeypatch.setattr(window_blocks, "MIN_PAIRS", 1_000)
    nums = session.source(spark.range(1500).withColumn("g", F.lit(1)), "nums")
    w = Window.partitionBy("g").orderBy("id").rowsBetween(Window.unboundedPreceding, 0)
    cap = session.capture(nums.withColumn("run", F.sum("id").over(w)), "running")
    assert "window-blocks" in cap._entry.features
    assert sorted(r.id for r in cap.backward("id = 9", "nums").collect()) == list(range(10))


def test_timestamp_handles_meet_whichever_wrote_them(tmp_path):
    # a window partitioned by a timestamp: Spark writes one side's handles as INT96,
    # Arrow the other's with a zone; on a machine whose zone is not UTC they are still
    # the same instants
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkprov.store import duck, joined_pairs

    at = pa.array([dt.datetime(2024, 3, 1, 12, 0)] * 2, pa.timestamp("us", tz="UTC"))
    handle = pa.StructArray.from_arrays([at], ["ts"])
    ranges = pa.StructArray.from_arrays([handle, pa.array([1, 1]), pa.array([2, 1])], ["h", "lo", "hi"])
    (tmp_path / "out").mkdir()
    (tmp_path / "side").mkdir()
    pq.write_table(pa.table({RID: [10, 11], "w": ranges}), tmp_path / "out" / "part-0.parquet")
    side = pa.table({"__sp_h": handle, "__sp_pos": [1, 2], "s": [70, 71]})
    pq.write_table(side, tmp_path / "side" / "part-0.parquet", use_deprecated_int96_timestamps=True)
    structure = {
        "output": [{"name": "w", "kind": "window", "ref": 0}],
        "sides": {
            "0": {"ranged": True, "path": str(tmp_path / "side"), "slots": [{"name": "s", "kind": "source", "ref": 0}]}
        },
    }
    with duck.connection() as con:
        zone = con.execute("SELECT current_setting('TimeZone')").fetchone()[0]
        con.execute("SET GLOBAL TimeZone = 'America/New_York'")
    try:
        found = joined_pairs.pairs_by_source(str(tmp_path / "out"), structure)
    finally:
        with duck.connection() as con:
            con.execute(f"SET GLOBAL TimeZone = '{zone}'")
    assert found[0].to_pylist() == [
        {"out_rid": 10, "in_rid": 70},
        {"out_rid": 10, "in_rid": 71},
        {"out_rid": 11, "in_rid": 70},
    ]
