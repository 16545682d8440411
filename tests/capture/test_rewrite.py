"""Rules with tricky inputs: NULL and floating-point group keys, DISTINCT aggregates,
empty inputs, LIMIT and rand() below a grouping operator, constants, unions."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import sparkprov as sp


def lineage_by_output(cap: sp.Capture, key: str = "k") -> dict[tuple, set]:
    """{output row values: {(source, key of input row)}} for every output row."""
    out = {}
    for row in cap.output.collect():
        back = cap.backward([row["_sp_rid"]])
        out[tuple(row)[:-1]] = {(n, r[key]) for n, df in back.items() for r in df.collect()}
    return out


@pytest.fixture
def keyed(spark, session):
    rows = [(0, None, 1.0), (1, None, -0.0), (2, "a", 0.0), (3, "a", float("nan")), (4, "b", float("nan"))]
    return session.source(spark.createDataFrame(rows, "k int, g string, x double"), "t")


def test_null_and_float_keys_group_together(session, keyed):
    by_g = lineage_by_output(session.capture(keyed.groupBy("g").count(), name="g"))
    assert by_g == {(None, 2): {("t", 0), ("t", 1)}, ("a", 2): {("t", 2), ("t", 3)}, ("b", 1): {("t", 4)}}
    by_x = session.capture(keyed.groupBy("x").agg(F.count("*").alias("n")), name="x")
    assert sorted(r["n"] for r in by_x.output.collect()) == [1, 2, 2]  # 0.0 and -0.0 together, the two NaNs together
    for row in by_x.output.collect():
        keys = {r["k"] for r in by_x.backward([row["_sp_rid"]], source="t").collect()}
        assert len(keys) == row["n"]


def test_distinct_aggregates_and_empty_input(session, keyed):
    cap = session.capture(keyed.agg(F.countDistinct("g").alias("d"), F.sum("k").alias("s")), name="cd")
    assert lineage_by_output(cap) == {(2, 10): {("t", k) for k in range(5)}}
    empty = session.capture(keyed.where("k > 100").agg(F.count("*").alias("n")), name="empty")
    assert [tuple(r)[:-1] for r in empty.output.collect()] == [(0,)]
    assert empty.backward([0], source="t").count() == 0  # the one output row has empty lineage


def test_limit_and_rand_below_grouping(session, keyed):
    top = keyed.orderBy("k").limit(3).groupBy("g").agg(F.count("*").alias("n"))
    assert lineage_by_output(session.capture(top, name="lim")) == {
        (None, 2): {("t", 0), ("t", 1)},
        ("a", 1): {("t", 2)},
    }
    sampled = keyed.where(F.rand(7) < 0.6).agg(F.collect_list("k").alias("ks"))
    cap = session.capture(sampled, name="rand")
    (row,) = cap.output.collect()
    # whatever rows the run kept are exactly the lineage: capture records what happened
    assert {r["k"] for r in cap.backward([row["_sp_rid"]], source="t").collect()} == set(row["ks"])


def test_constants_and_union_distinct(spark, session, keyed):
    q = keyed.select(F.col("g")).union(spark.sql("SELECT 'a' AS g")).distinct()
    by = lineage_by_output(session.capture(q, name="u"), key="k")
    assert by == {(None,): {("t", 0), ("t", 1)}, ("a",): {("t", 2), ("t", 3)}, ("b",): {("t", 4)}}


def test_non_deterministic_grouping_is_captured_as_it_ran(session, keyed):
    # Spark computes rand() in a projection below the aggregate; capture keeps that input
    cap = session.capture(keyed.groupBy((F.rand(3) * 2).cast("int").alias("r")).count(), name="r")
    rows = cap.output.collect()
    assert sum(r["count"] for r in rows) == 5
    seen = set()
    for row in rows:
        keys = {r["k"] for r in cap.backward([row["_sp_rid"]], source="t").collect()}
        assert len(keys) == row["count"] and not keys & seen
        seen |= keys


def test_outer_semi_and_anti_joins(spark, session, keyed):
    other = session.source(spark.createDataFrame([(10, "a"), (11, "a"), (12, "z")], "k int, g string"), "o")
    o = other.select(F.col("k").alias("ok"), F.col("g").alias("og"))
    cond = keyed["g"] == o["og"]

    semi = lineage_by_output(session.capture(keyed.join(o, cond, "left_semi").select("k"), name="semi"))
    assert semi == {(2,): {("t", 2), ("o", 10), ("o", 11)}, (3,): {("t", 3), ("o", 10), ("o", 11)}}

    anti = lineage_by_output(session.capture(keyed.join(o, cond, "left_anti").select("k"), name="anti"))
    assert anti == {(0,): {("t", 0)}, (1,): {("t", 1)}, (4,): {("t", 4)}}

    full = session.capture(keyed.join(o, cond, "full").select("k", "ok"), name="full")
    got = {}
    for row in full.output.collect():
        back = full.backward([row["_sp_rid"]])
        got[(row["k"], row["ok"])] = {(n, r["k"]) for n, df in back.items() for r in df.collect()}
    assert got[(4, None)] == {("t", 4)}  # NULL-padded: only the preserved side
    assert got[(None, 12)] == {("o", 12)}
    assert got[(2, 10)] == {("t", 2), ("o", 10)}
    assert len(got) == 8
