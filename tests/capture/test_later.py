"""Lineage finished after the capture returns: defer (resolved in the background) and
lazy (nothing captured while the query runs, lineage built on first use)."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.plan.catalyst import Bridge

from ..cli.test_main import sparkprov_process
from .test_rules import lineage_by_output


@pytest.fixture
def orders(spark, session):
    rows = [(i, f"c{i % 3}", i % 4, float(i)) for i in range(12)]
    return session.source(spark.createDataFrame(rows, "k int, cust string, g int, amount double"), "orders")


def test_lazy_capture_stores_no_lineage_until_the_first_answer(session, orders):
    q = orders.where("k > 1").groupBy("cust").agg(F.sum("g").alias("total"))
    eager = session.capture(q, "eager")
    cap = session.capture(q, "lazy", strategy="lazy")
    lineage = Path(cap._entry.lineage.path)
    assert not lineage.exists() and cap._entry.timings["lineage_s"] == 0
    assert sorted(tuple(r)[:-1] for r in cap.output.collect()) == sorted(tuple(r)[:-1] for r in eager.output.collect())
    text = cap.explain()
    assert "Aggregate" in text and "lazy: nothing captured; the first answer runs the query again" in text
    assert lineage_by_output(cap) == lineage_by_output(eager)  # the first trace built the pair table
    assert lineage.is_dir()
    assert cap.build_lineage() < 0.5  # built once


def test_defer_returns_with_the_output_and_resolves_groups_in_the_background(session, orders):
    q = orders.groupBy("cust").agg(F.sum("amount").alias("total")).where("total > 10")
    eager = session.capture(q, "eager")
    cap = session.capture(q, "deferred", strategy="defer")
    assert cap._entry.lineage.later == "defer" and cap._entry.timings["lineage_s"] < 0.5
    assert "strategy='defer': the side relation is resolved after the output is written" in cap.explain()
    assert lineage_by_output(cap) == lineage_by_output(eager)  # answers wait for the resolution
    assert Path(cap._entry.lineage.path).is_dir() and cap.build_lineage() < 0.5
    # a query whose slots are all rids has nothing to resolve: its lineage is in its rows
    rows = session.capture(orders.where("k < 3"), "rows", strategy="defer")
    assert rows._entry.lineage.later is None and rows._entry.lineage.in_output


def test_equal_output_rows_share_out_their_lineage(session, orders):
    # every output row is one input row, and rows with equal values cannot be told apart
    # by their values: each gets one of the equal rows' lineage, each input row once
    cap = session.capture(orders.select("cust"), "dupes", strategy="lazy")
    out = cap.output.collect()
    assert sorted(r["cust"] for r in out) == sorted(f"c{i % 3}" for i in range(12))
    seen = []
    for row in out:
        (back,) = cap.backward([row["_sp_rid"]]).values()
        (src,) = back.collect()
        assert src["cust"] == row["cust"]
        seen.append(src["k"])
    assert sorted(seen) == list(range(12))


def test_a_query_that_could_give_other_rows_is_refused(spark, session, orders):
    for label, q in [
        ("rand", orders.select("k", F.rand(1).alias("r"))),
        ("LIMIT without ORDER BY", orders.limit(3)),
        ("sample", orders.sample(0.5, seed=1)),
        ("the current time or date", orders.select("k", F.current_timestamp().alias("at"))),
    ]:
        with pytest.raises(sp.UnsupportedOperation, match="strategy='lazy' builds lineage by running the query again"):
            session.capture(q, f"refused_{label.split()[0]}", strategy="lazy")
    top = session.capture(orders.orderBy(F.desc("k")).limit(3), "top", strategy="lazy")  # an order: accepted
    assert lineage_by_output(top) == {(k, f"c{k % 3}", k % 4, float(k)): {("orders", k)} for k in (9, 10, 11)}
    with pytest.raises(ValueError, match="witnesses=True keeps what capture records"):
        session.capture(orders, "wit", strategy="lazy", witnesses=True)


def test_a_refused_query_stops_even_before_its_first_job_starts(spark, session):
    # the check starts with the query's planning, and may refuse it before the query's
    # first job exists: the query is still stopped, not left to run to its end
    slow = F.udf(lambda k: time.sleep(0.2) or k, "long")
    q = spark.range(0, 400, numPartitions=2).select(slow("id").alias("k"), F.rand(1).alias("r"))
    tracker = spark.sparkContext.statusTracker()
    running = set(tracker.getActiveJobsIds())  # none, unless an earlier test left one
    started = time.perf_counter()
    with pytest.raises(sp.UnsupportedOperation, match="strategy='lazy' builds lineage by running the query again"):
        session.capture(q, "slow", strategy="lazy")
    assert time.perf_counter() - started < 15  # 400 rows of 0.2 s on two cores: 40 s if run
    assert set(tracker.getActiveJobsIds()) <= running  # not left running either
    assert not (Path(session.store.root) / "data").exists() or not any(
        Path(session.store.root, "data").rglob("*.parquet")
    )


def test_a_check_that_changes_session_settings_waits_for_the_querys_first_job(session, orders, monkeypatch):
    # without its compiled helper, optimizing for capture sets the session's settings
    # for a moment: the check starts once the query is planned, and gives the same lineage
    q = orders.where("k > 1").groupBy("cust").agg(F.sum("g").alias("total"))
    eager = session.capture(q, "eager")
    monkeypatch.setattr(Bridge, "optimizes_apart", lambda self: False)
    cap = session.capture(q, "waited", strategy="lazy")
    assert cap._entry.timings["check_s"] > 0
    assert lineage_by_output(cap) == lineage_by_output(eager)


def test_a_changed_source_or_a_different_second_run_builds_nothing(spark, session, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string").write.parquet(path)
    cap = session.capture(spark.read.parquet(path).groupBy("v").count(), "changed", strategy="lazy")
    spark.createDataFrame([(3, "c")], "k int, v string").write.mode("overwrite").parquet(path)
    with pytest.raises(sp.SourceChanged, match="changed after capture"):
        cap.backward([0])
    assert not Path(cap._entry.lineage.path).exists()

    # a Python function declared deterministic that is not: its second run differs
    stamp = F.udf(lambda k: f"{k}-{time.time_ns()}", "string")
    again = session.capture(spark.range(3).select(stamp("id").alias("s")), "stamped", strategy="lazy")
    with pytest.raises(sp.LineageNotBuilt, match="the query gave other rows when run again"):
        again.build_lineage()
    assert not Path(again._entry.lineage.path).exists()


def test_floating_point_values_match_within_a_tolerance(spark, session, orders):
    # a Python function stands for a sum of doubles whose terms arrive in another order
    # in the second run: its value moves in the last bits, and the rows still match
    sums = orders.groupBy("cust").agg(F.sum("amount").alias("total"))
    last_bits = F.udf(lambda x: x * (1 + random.random() * 1e-13), "double")
    cap = session.capture(sums.select("cust", last_bits("total").alias("total")), "jitter", strategy="lazy")
    expected = {f"c{c}": {("orders", k) for k in range(12) if k % 3 == c} for c in range(3)}
    assert {row[0]: {s for s in found} for row, found in lineage_by_output(cap).items()} == expected
    # values that move by more are other rows: nothing is built
    other = F.udf(lambda x: x + random.random(), "double")
    moved = session.capture(sums.select("cust", other("total").alias("total")), "moved", strategy="lazy")
    with pytest.raises(sp.LineageNotBuilt, match="floating-point values further apart than 1e-09"):
        moved.build_lineage()


def test_only_the_capturing_process_can_build_it(session, orders):
    cap = session.capture(orders.groupBy("g").count(), "counts", strategy="lazy")
    store = str(session.store.root)
    elsewhere = sparkprov_process("trace", "backward", "counts", "--where", "g = 1", "--store", store)
    assert elsewhere.returncode == 1
    assert "made with strategy='lazy' and its lineage was never built" in elsewhere.stderr
    cap.build_lineage()
    answered = sparkprov_process("trace", "backward", "counts", "--where", "g = 1", "--store", store, "--json")
    assert answered.returncode == 0, answered.stderr
    rows = json.loads(answered.stdout)["relations"]["orders"]["rows"]
    assert sorted(r["k"] for r in rows) == [1, 5, 9]


def test_witnesses_with_defer_make_the_pairs_from_them_anywhere(spark, session, orders):
    # the capture keeps the side relations only; the first answer, in any process,
    # makes the pair table from every row's derivation (no Spark needed)
    other = session.source(spark.createDataFrame([(c, f"r{c}") for c in range(4)], "g int, region string"), "regions")
    q = orders.join(other, "g").groupBy("region", "cust").agg(F.sum("amount").alias("total")).where("total > 3")
    eager = session.capture(q, "witnessed", witnesses=True)
    cap = session.capture(q, "witnessed-later", witnesses=True, strategy="defer")
    lineage = Path(cap._entry.lineage.path)
    assert cap._entry.lineage.later == "witnesses" and not lineage.exists()
    assert sorted(tuple(r) for r in cap.how("true").collect()) == sorted(tuple(r) for r in eager.how("true").collect())
    assert not lineage.exists()  # why and how read the side relations alone
    elsewhere = sparkprov_process(
        "trace", "backward", "witnessed-later", "--where", "cust = 'c1'", "--store", str(session.store.root), "--json"
    )
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert lineage.is_dir()
    rows = json.loads(elsewhere.stdout)["relations"]["orders"]["rows"]
    want = eager.backward("cust = 'c1'", "orders")
    assert sorted(r["k"] for r in rows) == sorted(r.k for r in want.collect()) != []

    def traced(c):  # every output row's lineage, by its values
        return {
            tuple(o)[:-1]: {(n, tuple(r)) for n, df in c.backward([o._sp_rid]).items() for r in df.collect()}
            for o in c.output.collect()
        }

    assert traced(cap) == traced(eager)
