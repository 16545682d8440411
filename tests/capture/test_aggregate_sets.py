"""Aggregates whose rows a join repeats (an average per key met by every row with the
key): each group's lineage kept once, as a set of a shared side that the rows meeting
it refer to (capture/rules/aggregate.py, ``join_repeats.plan_repeats``)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from sparkprov.bench.checks import check_row
from sparkprov.capture import strategy
from sparkprov.errors import UnsupportedOperation

from .test_window_sets import _pairs, _traced_by_both_engines

KEPT_ONCE = "each group's kept once"


@pytest.fixture(autouse=True)
def any_size(monkeypatch):
    # kept as sets from inputs of any size (by default, from 64 MiB of files)
    monkeypatch.setattr(strategy, "SETS_MIN_INPUT_BYTES", 0)


@pytest.fixture
def sales(spark, session, tmp_path):
    # 90 sales over 30 days; a week is 7 days, so each week's total meets 7 days
    rows = spark.range(90).select(
        F.col("id").alias("k"), (F.col("id") % 30).alias("day"), (F.col("id") * 7 % 11).alias("amount")
    )
    rows.write.parquet(str(tmp_path / "sales"))
    days = spark.range(30).select(
        F.col("id").alias("k"), F.col("id").alias("day"), (F.col("id") / 7).cast("int").alias("week")
    )
    days.write.parquet(str(tmp_path / "days"))
    s = session.source(spark.read.parquet(str(tmp_path / "sales")), "sales")
    d = session.source(spark.read.parquet(str(tmp_path / "days")), "days")
    return s, d


def _weekly(s, d):
    """Each day beside its week's total: the weekly aggregate met by its seven days."""
    week_of = d.select("day", "week")
    totals = s.join(week_of, "day").groupBy("week").agg(F.sum("amount").alias("total"))
    return d.join(totals, "week").select(d["k"], "week", "total")


def test_a_total_met_by_every_day_of_its_week_is_kept_once_per_week(spark, session, sales):
    s, d = sales
    cap = session.capture(_weekly(s, d), "weekly")
    assert KEPT_ONCE in cap.explain(), cap.explain()
    logical = session.capture(_weekly(s, d), "weekly-logical", strategy="logical")
    assert KEPT_ONCE not in logical.explain()
    got = _pairs(cap, "sales")
    week = {day: day // 7 for day in range(30)}
    # every day's row: the sales of every day of its week
    assert got == {(day, k) for day in range(30) for k in range(90) if week[k % 30] == week[day]}
    assert got == _pairs(logical, "sales")
    assert _pairs(cap, "days") == _pairs(logical, "days")
    _traced_by_both_engines(cap, "sales", got)
    for row in cap.output.limit(3).collect():  # re-execution over B(o), and forward from it
        assert check_row(cap, row["_sp_rid"], lambda r: _weekly(r["sales"], r["days"])) == []
    # stored once: each sale's rid once beside its week (the 30 days' rows would hold 7 times as many)
    shared = spark.read.parquet(cap._entry.lineage.shared).where("src >= 0")
    assert shared.count() == 90 + 30  # each sale once, and each day its week's total reads


def test_aggregates_met_one_row_a_key_are_not_kept_as_sets(session, sales):
    s, d = sales
    by_day = s.groupBy("day").agg(F.sum("amount").alias("total"))
    counted = s.groupBy("day").agg(F.count("*").alias("n"))
    top = s.groupBy(F.col("day").alias("d")).agg(F.max("amount").alias("top"))
    # both sides grouped by the key; then the join of two such, met on a key equal to it
    both = by_day.join(counted, "day")
    cap = session.capture(both.join(top, both["day"] == top["d"]), "one-to-one")
    assert KEPT_ONCE not in cap.explain(), cap.explain()
    row = cap.output.where("day = 3").first()
    assert sorted(r.k for r in cap.backward([row["_sp_rid"]], "sales").collect()) == [3, 33, 63]
    # a day's total met by a small table's days: counted, each day is there once
    cap = session.capture(d.join(by_day, "day"), "days")
    assert KEPT_ONCE not in cap.explain(), cap.explain()
    row = cap.output.where("day = 3").first()
    assert sorted(r.k for r in cap.backward([row["_sp_rid"]], "sales").collect()) == [3, 33, 63]


def test_small_inputs_and_rows_grouped_again_keep_their_rids_in_their_rows(session, sales, monkeypatch):
    s, d = sales
    cap = session.capture(_weekly(s, d).groupBy("total").count(), "grouped-again")
    assert KEPT_ONCE not in cap.explain(), cap.explain()
    monkeypatch.setattr(strategy, "SETS_MIN_INPUT_BYTES", 64 << 20)
    cap = session.capture(_weekly(s, d), "small")
    assert KEPT_ONCE not in cap.explain(), cap.explain()
    assert _pairs(cap, "sales") == _pairs(session.capture(_weekly(s, d), "small-logical", strategy="logical"), "sales")


def test_groups_whose_ids_collide_are_refused(session, sales, monkeypatch):
    from sparkprov.plan.catalyst import Bridge

    s, d = sales
    monkeypatch.setattr(Bridge, "hash64", lambda self, exprs: self.long_literal(7))
    with pytest.raises(UnsupportedOperation, match="groups' keys hash to the same set id"):
        session.capture(_weekly(s, d), "clash")
