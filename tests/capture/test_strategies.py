"""Capture strategies (inject, logical, auto, defer, lazy) give identical lineage; explain() shows the choice."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch
from sparkprov.capture import row_lineage, writing
from sparkprov.capture.rules import join
from sparkprov.capture.strategy import INJECT_MAX_INPUT_BYTES, STRATEGIES, inject_bound
from sparkprov.plan.catalyst import Bridge
from sparkprov.sources.identity import RID

from .test_rules import lineage_by_output


def _pairs(cap: sp.Capture) -> dict[str, list[tuple]]:
    """(output row's position in the query's order, input rid) per source. Rids name
    output rows only within a capture: a top-level ORDER BY is applied when the output
    is read, so each strategy may store the rows in another order."""
    position = {r[RID]: i for i, r in enumerate(cap.output.select(RID).collect())}
    return {
        s: sorted((position[out], *rest) for out, *rest in cap.pairs(s).collect()) for s in cap._entry.lineage.sources
    }


def _aggregate_strategies(cap: sp.Capture) -> list[str]:
    return [line[3].split(":")[0] for line in cap._entry.explain if line[1].startswith("Aggregate")]


# Q1: an aggregate over one scan; Q6: a global aggregate; Q3: an aggregate over joins;
# Q13: an aggregate over an aggregate over an outer join (NULL slots); Q15: a view
# aggregated twice; Q18: nested aggregates under a semi join; Q4: a semi join over a
# smaller left side; Q22: a scalar subquery (shared lineage). Q9 (more joins, the shape
# of Q3) is left out to keep the suite short.
QUERIES = (1, 3, 4, 6, 13, 15, 18, 22)


@pytest.mark.parametrize("n", QUERIES)
def test_every_strategy_gives_the_same_tpch_lineage(spark, tpch_dir, tmp_path, n):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    # auto injects every aggregate at this size (the test below): its capture would be
    # inject's again
    caps = {s: session.capture(spark.sql(tpch.query(n)), f"q{n}_{s}", strategy=s) for s in STRATEGIES if s != "auto"}
    reference = _pairs(caps["logical"])
    assert sum(len(p) for p in reference.values()) > 0
    assert not Path(caps["lazy"]._entry.lineage.path).exists()  # built by its first answer, below
    for strategy in ("inject", "defer", "lazy"):
        assert _pairs(caps[strategy]) == reference, strategy
    assert set(_aggregate_strategies(caps["logical"])) <= {"group"}
    assert set(_aggregate_strategies(caps["defer"])) <= {"group"}
    # forced inject collects in every aggregate: rids, and the handles of groups below
    # (a semi join's matches, a scalar subquery's row); only window slots are not
    assert set(_aggregate_strategies(caps["inject"])) == {"inject"}


def test_semi_join_matches_resolved_broadcasting_or_not_are_the_same(spark, tpch_dir, tmp_path, monkeypatch):
    # Q4 (EXISTS on a key) and Q21 (EXISTS with l_suppkey <> ..., and NOT EXISTS), logical:
    # a few reached handles take the side relation whose join broadcasts its reduced
    # left side; the lineage is the one the shuffled join gives
    from sparkprov.capture import lineage, run

    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    hinted = []
    side_graph = run.side_graph

    def spied(*args, **kwargs):
        graph = side_graph(*args, **kwargs)

        def narrow(k):
            df = graph.narrow(k)
            if df is not None:
                hinted.append("strategy=broadcast" in df._jdf.queryExecution().optimizedPlan().toString())
            return df

        return dataclasses.replace(graph, narrow=narrow)

    monkeypatch.setattr(run, "side_graph", spied)
    broadcast = {n: _pairs(session.capture(spark.sql(tpch.query(n)), f"q{n}", strategy="logical")) for n in (4, 21)}
    assert hinted and all(hinted)
    monkeypatch.setattr(lineage, "NARROW_MAX_HANDLES", -1)
    shuffled = {n: _pairs(session.capture(spark.sql(tpch.query(n)), f"q{n}", strategy="logical")) for n in (4, 21)}
    assert broadcast == shuffled
    assert all(sum(len(p) for p in pairs.values()) > 0 for pairs in shuffled.values())


def test_auto_injects_unless_the_input_is_estimated_too_large(spark, tpch_dir, tmp_path):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    joined = session.capture(spark.sql(tpch.query(3)), "q3")
    assert _aggregate_strategies(joined) == ["inject"]
    assert "inject" in joined.explain()
    # an inject capture's output rows carry their rids; the output the user sees does not
    assert joined.output.columns == [*spark.sql(tpch.query(3)).columns, "_sp_rid"]
    scan_only = session.capture(spark.sql(tpch.query(1)), "q1")
    assert _aggregate_strategies(scan_only) == ["inject"]
    # above the bound (lineitem at SF 0.01 is about 2 MB of Parquet), auto keeps a side
    # relation and explain() says why; the lineage is the same
    spark.conf.set(INJECT_MAX_INPUT_BYTES, "1m")
    try:
        bounded = session.capture(spark.sql(tpch.query(1)), "q1")
    finally:
        spark.conf.unset(INJECT_MAX_INPUT_BYTES)
    assert _aggregate_strategies(bounded) == ["group"]
    assert f"above {INJECT_MAX_INPUT_BYTES}=1,048,576" in bounded.explain()
    assert _pairs(bounded) == _pairs(scan_only)
    spark.conf.set(INJECT_MAX_INPUT_BYTES, "lots")
    try:
        with pytest.raises(ValueError, match="must be a size in bytes"):
            session.capture(spark.sql(tpch.query(1)), "q1")
    finally:
        spark.conf.unset(INJECT_MAX_INPUT_BYTES)


def test_the_inject_bound_unset_is_a_quarter_of_the_heap_that_runs_the_tasks(spark):
    # unset, the bound follows the memory the session was given (a driver of 6 GiB
    # injects TPC-H SF 3's aggregates over 1.1 GB of files), never below 1 GiB
    bridge = Bridge(spark)
    heap = spark._jvm.java.lang.Runtime.getRuntime().maxMemory()  # local mode: the driver runs the tasks
    assert bridge.executor_heap_bytes() == heap
    assert inject_bound(bridge) == max(1 << 30, heap // 4)
    spark.conf.set(INJECT_MAX_INPUT_BYTES, "8g")
    try:
        assert inject_bound(bridge) == 8 << 30
    finally:
        spark.conf.unset(INJECT_MAX_INPUT_BYTES)


@pytest.fixture
def two(spark, session):
    left = session.source(spark.createDataFrame([(0, "a"), (1, "a"), (2, "b"), (3, "c")], "k int, g string"), "l")
    right = session.source(spark.createDataFrame([(10, "a"), (11, "b"), (12, "b")], "k int, g string"), "r")
    return left, right.select(F.col("k").alias("rk"), F.col("g").alias("rg"))


@pytest.mark.parametrize(
    "nested, users, expected", [(False, None, "65536"), (False, "1000000", "1000000"), (True, None, "128")]
)
def test_injected_aggregates_hash_their_groups_where_memory_allows(
    spark, session, monkeypatch, nested, users, expected
):
    # Spark sorts a task's input once its hash map holds 128 groups of rid arrays
    # (TPC-DS q22 at SF 1: 113 s instead of 17 s): the capture's query runs with more
    # hashed, a user's higher setting kept, unless an aggregate collects an inner one's
    # arrays (a task would hold every group's at once); the session's setting is back after
    from sparkprov.capture import run

    key = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"
    if users:
        spark.conf.set(key, users)
    before = spark.conf.get(key, None)
    seen = []
    write = run._write_output
    monkeypatch.setattr(run, "_write_output", lambda *a: seen.append(spark.conf.get(key)) or write(*a))
    try:
        rows = session.source(spark.range(2000).selectExpr("id", "id % 500 AS g"), "rows")
        q = rows.groupBy("g").agg(F.max("id").alias("m"))
        if nested:  # grouped by the inner aggregate's result: not merged into one
            q = q.groupBy((F.col("m") % 250).alias("g")).agg(F.count("*").alias("n"))
        cap = session.capture(q, "many-groups", strategy="inject")
        assert seen == [expected] and spark.conf.get(key, None) == before
        expected_ids = [7, 507, 1007, 1507] + ([257, 757, 1257, 1757] if nested else [])
        assert sorted(r.id for r in cap.backward("g = 7", "rows").collect()) == sorted(expected_ids)
    finally:
        spark.conf.unset(key)


def test_inject_over_an_outer_join_and_a_nested_aggregate(session, two):
    left, right = two
    joined = left.join(right, left["g"] == right["rg"], "left").groupBy("g").agg(F.count("rk").alias("n"))
    # the padded row (c) has no right rid: its lineage is the left row alone
    expected = {
        ("a", 2): {("l", 0), ("l", 1), ("r", 10)},
        ("b", 2): {("l", 2), ("r", 11), ("r", 12)},
        ("c", 0): {("l", 3)},
    }
    for strategy in STRATEGIES:
        got = lineage_by_output(session.capture(joined, f"outer_{strategy}", strategy=strategy))
        assert got == expected, strategy
    # an aggregate over the injected one: its arrays are flattened into the outer row's
    nested = joined.groupBy((F.col("n") > 0).alias("matched")).agg(F.count("*").alias("groups"))
    got = lineage_by_output(session.capture(nested, "nested", strategy="inject"))
    assert got == {(True, 2): expected[("a", 2)] | expected[("b", 2)], (False, 1): expected[("c", 0)]}


def _join_strategies(cap: sp.Capture) -> list[str]:
    return [line[3].split(":")[0] for line in cap._entry.explain if line[1].startswith("Join")]


def test_semi_join_on_keys_injects_its_matches(spark, session):
    rows = [(0, "a"), (1, "a"), (2, "b"), (3, "c"), (4, None)]
    left = session.source(spark.createDataFrame(rows, "k int, g string"), "sl")
    matched = [(10, "a"), (11, "b"), (12, "b"), (13, None)]
    right = session.source(spark.createDataFrame(matched, "k int, g string"), "sr")
    right = right.select(F.col("k").alias("rk"), F.col("g").alias("rg"))
    on_key = {
        (0, "a"): {("sl", 0), ("sr", 10)},
        (1, "a"): {("sl", 1), ("sr", 10)},
        (2, "b"): {("sl", 2), ("sr", 11), ("sr", 12)},
    }
    cases = [
        ("key", left["g"] == right["rg"], on_key, "inject"),
        # NULL matches NULL under <=>: row 4 is kept, with the right row 13
        ("nullsafe", left["g"].eqNullSafe(right["rg"]), {**on_key, (4, None): {("sl", 4), ("sr", 13)}}, "inject"),
        # a condition beyond key equalities: the matches come from a side relation
        (
            "theta",
            (left["g"] == right["rg"]) & (left["k"] <= right["rk"] - 10),
            {(0, "a"): {("sl", 0), ("sr", 10)}, (2, "b"): {("sl", 2), ("sr", 12)}},
            "left slots plus a group of matches; side relation",
        ),
    ]
    for label, cond, expected, auto in cases:
        for strategy in STRATEGIES:
            cap = session.capture(left.join(right, cond, "left_semi"), f"semi_{label}_{strategy}", strategy=strategy)
            assert lineage_by_output(cap) == expected, (label, strategy)
            logical = "left slots plus a group of matches; side relation"
            chosen = {"logical": logical, "defer": logical, "lazy": "lazy"}.get(strategy, auto)
            assert _join_strategies(cap) == [chosen], (label, strategy)


def test_exists_under_or_injects_its_matches_and_keeps_every_left_row(spark, session):
    # Spark plans EXISTS under OR as an existence join: every left row, with a flag the
    # filter above reads. Injected, a left outer join on the key: row 3 is kept by the
    # other branch, without matches; row 0 by both, with its matches
    rows = [(0, "a"), (1, "a"), (2, "b"), (3, "c"), (4, None), (5, "d")]
    session.source(spark.createDataFrame(rows, "k int, g string"), "el").createOrReplaceTempView("el")
    matched = [(10, "a"), (11, "b"), (12, "b"), (13, None)]
    session.source(spark.createDataFrame(matched, "k int, g string"), "er").createOrReplaceTempView("er")
    query = "SELECT k, g FROM el WHERE k IN (0, 3) OR EXISTS (SELECT 1 FROM er WHERE er.g = el.g)"
    expected = {
        (0, "a"): {("el", 0), ("er", 10)},
        (1, "a"): {("el", 1), ("er", 10)},
        (2, "b"): {("el", 2), ("er", 11), ("er", 12)},
        (3, "c"): {("el", 3)},
    }
    for strategy in STRATEGIES:
        cap = session.capture(spark.sql(query), f"exists_{strategy}", strategy=strategy)
        assert "ExistenceJoin" in " ".join(line[1] for line in cap._entry.explain) or strategy == "lazy"
        assert lineage_by_output(cap) == expected, strategy
        injected = "a left outer join in place of the existence join" in _join_explain(cap)
        assert injected == (strategy in ("auto", "inject")), (strategy, _join_explain(cap))


def test_semi_join_over_a_smaller_left_side_groups_its_pairs_by_left_row(spark, session):
    # The left side reads less than the right: matching pairs are grouped back by left
    # row, whatever the condition. Each left row is an explode's copy of another, equal
    # in every column and slot: the semi join keeps both copies, and so must capture.
    left = session.source(spark.createDataFrame([(0, "a"), (1, "b"), (2, "c")], "k int, g string"), "pl")
    left = left.select("k", F.explode(F.array("g", "g")).alias("g"))
    matched = [(10, "a"), (11, "a"), (12, "b")] + [(20 + i, "z") for i in range(60)]
    right = session.source(spark.createDataFrame(matched, "k int, g string"), "pr")
    right = right.select(F.col("k").alias("rk"), F.col("g").alias("rg"))
    cases = [
        ("key", left["g"] == right["rg"], {(0, "a"): {10, 11}, (1, "b"): {12}}),
        ("theta", (left["g"] == right["rg"]) & (left["k"] + 11 <= right["rk"]), {(0, "a"): {11}, (1, "b"): {12}}),
    ]
    for label, cond, matches in cases:
        expected = {row: {("pl", row[0])} | {("pr", m) for m in ms} for row, ms in matches.items()}
        for strategy in ("auto", "inject", "logical"):
            cap = session.capture(left.join(right, cond, "left_semi"), f"rows_{label}_{strategy}", strategy=strategy)
            assert cap.output.count() == 2 * len(matches), (label, strategy)
            assert lineage_by_output(cap) == expected, (label, strategy)
            chosen = "left rows numbered" if strategy != "logical" else "left slots plus a group of matches"
            assert chosen in _join_explain(cap), (label, strategy)


def test_semi_join_over_a_self_join_keeps_its_matches_as_a_side(spark, session):
    # TPC-DS q95's shape: the sales of orders shipped from two warehouses (sales joined
    # with itself by order). A row's matches are its order's pairs of rows: injected,
    # each left row would gather them all; auto keeps them as a side relation, resolved
    # for the rows the output keeps, where both inputs of the join are too large to
    # broadcast (the threshold lowered: these rows are a few kilobytes)
    rows = [(i, i % 5, i % 3) for i in range(60)]
    sales = session.source(spark.createDataFrame(rows, "k int, o int, w int"), "sales")
    one = sales.select(F.col("o").alias("o1"), F.col("w").alias("w1"))
    two = sales.select(F.col("o").alias("o2"), F.col("w").alias("w2"))
    shipped = one.join(two, (F.col("o1") == F.col("o2")) & (F.col("w1") != F.col("w2")))
    query = sales.where("k < 7").join(shipped, F.col("o") == F.col("o1"), "left_semi")
    expected = {(k, o, w): {("sales", j) for j, oj, _ in rows if oj == o} for k, o, w in rows if k < 7}
    chosen = {}
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "200")
    try:
        for strategy in ("auto", "inject"):
            cap = session.capture(query, f"shipped_{strategy}", strategy=strategy)
            assert lineage_by_output(cap) == expected, strategy
            chosen[strategy] = _join_explain(cap)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert "left slots plus a group of matches; side relation" in chosen["auto"]
    assert "inject: " in chosen["inject"]


def _join_explain(cap: sp.Capture) -> str:
    return " ".join(line[3] for line in cap._entry.explain if line[1].startswith("Join"))


def test_witnesses_keep_side_relations_and_bad_strategies_are_refused(session, two):
    left, right = two
    q = left.join(right, left["g"] == right["rg"]).groupBy("g").count()
    cap = session.capture(q, "wit", strategy="inject", witnesses=True)
    assert _aggregate_strategies(cap) == ["group"]  # why/how read the groups from side relations
    assert cap.why([0]).count() > 0  # and they are there
    with pytest.raises(ValueError, match="strategy must be one of auto, inject, logical"):
        session.capture(q, "bad", strategy="eager")


# Q7 reads nation twice: its pairs need a distinct. Q22's rows also refer to a scalar
# subquery's lineage, stored once at capture.
@pytest.mark.parametrize("n", [3, 7, 22])
def test_lineage_kept_in_the_output_rows_gets_its_pair_table_on_first_use(spark, tpch_dir, tmp_path, n):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    cap = session.capture(spark.sql(tpch.query(n)), f"q{n}")
    lineage = cap._entry.lineage
    # every output slot names source rows (rids, injected rid arrays): no pair table yet
    assert lineage.in_output["unique"] == (n != 7)
    assert not Path(lineage.path).exists()
    if n == 22:  # the subquery's lineage is stored at capture, once
        assert Path(lineage.shared).is_dir()
    else:
        assert lineage.shared is None
    first = cap.output.orderBy(RID).first()[RID]
    local = cap.backward([first], engine="embedded")  # builds the table in this process
    assert Path(lineage.path).is_dir()
    answered = cap.backward([first], engine="spark")
    for source, rows in local.items():
        assert sorted(map(tuple, rows.collect())) == sorted(map(tuple, answered[source].collect())), source
    # the same table built by Spark elsewhere: identical pairs, source by source
    other = dataclasses.replace(cap._entry, lineage=dataclasses.replace(lineage, path=str(tmp_path / "spark-built")))
    row_lineage.ensure_pairs(spark, other)
    read = [
        spark.read.parquet(p).orderBy("src", "out_rid", "in_rid").collect()
        for p in (lineage.path, str(tmp_path / "spark-built"))
    ]
    assert read[0] == read[1] and len(read[0]) > 0
    # Q22's rows refer to the subquery's lineage: pairs under its pseudo-source number
    assert any(r["src"] < 0 for r in read[0]) == (n == 22)


def test_tpch_aggregates_reduced_to_the_keys_a_join_meets_keep_their_lineage(spark, tpch_dir, tmp_path, monkeypatch):
    # Q2: min(ps_supplycost) per part is joined to the parts of one size and type; its
    # input is first reduced to those parts. Q20: lineitem's sum per part and supplier,
    # to the part-suppliers of 'forest' parts (a semi join, small at this scale). Both
    # give the lineage of the rewrite without the reduction
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    reduced = {n: session.capture(spark.sql(tpch.query(n)), f"q{n}") for n in (2, 20)}
    notes = {n: [ln[3] for ln in c._entry.explain if "first reduced" in (ln[3] or "")] for n, c in reduced.items()}
    assert [len(notes[2]), len(notes[20])] == [1, 1]
    monkeypatch.setattr(join, "plan_reductions", lambda *args: None)
    for n, cap in reduced.items():
        pairs = _pairs(cap)
        assert sum(len(p) for p in pairs.values()) > 0
        assert _pairs(session.capture(spark.sql(tpch.query(n)), f"q{n}_unreduced")) == pairs, n


def test_a_pair_table_from_large_rid_arrays_is_read_a_few_rows_at_a_time(spark, tmp_path, monkeypatch):
    # an aggregate's groups of many rids each: the vectorized reader would reserve one
    # vector for 4,096 rows' arrays (a 100M-row aggregate under a 2g driver ran out of
    # memory building its pair table), so a batch holds BATCH_VALUES rids at most
    session = sp.LineageSession(spark, store=tmp_path / "store")
    df = session.source(spark.range(30_000).selectExpr("id % 3 AS g", "id"), "numbers")
    cap = session.capture(df.groupBy("g").count(), "big", strategy="inject")
    assert cap._entry.lineage.in_output
    batches = []
    real = writing.publish_pairs

    def spied(spark, *args, **kwargs):
        batches.append(spark.conf.get(row_lineage._BATCH))
        return real(spark, *args, **kwargs)

    monkeypatch.setattr(writing, "publish_pairs", spied)
    group = cap.output.where("g = 0").first()[RID]
    assert cap.backward([group], "numbers", engine="spark").count() == 10_000
    assert batches == [str(row_lineage.BATCH_VALUES // 10_000)]
    assert spark.conf.get(row_lineage._BATCH, None) is None  # the session's setting as it was
