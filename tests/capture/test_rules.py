"""Rules with tricky inputs: NULL and floating-point group keys, DISTINCT aggregates,
empty inputs, LIMIT and rand() below a grouping operator, constants, unions."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import Observation
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.capture.rules import join


def lineage_by_output(cap: sp.Capture, key: str = "k") -> dict[tuple, set]:
    """{output row values: {(source, key of input row)}} for every output row."""
    out = {}
    for row in cap.output.collect():
        back = cap.backward([row["_sp_rid"]])
        out[tuple(row)[:-1]] = {(n, r[key]) for n, df in back.items() for r in df.collect()}
    return out


def _partition_keys(df) -> dict[int, set]:
    """{partition number: the keys k of its rows} of ``df``."""
    parts: dict[int, set] = {}
    for r in df.select("k", F.spark_partition_id().alias("p")).collect():
        parts.setdefault(r["p"], set()).add(r["k"])
    return parts


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
    # OFFSET skips rows by order, as LIMIT keeps them
    skipped = keyed.orderBy("k").offset(2).groupBy("g").agg(F.count("*").alias("n"))
    got = lineage_by_output(session.capture(skipped, name="off"))
    assert got == {("a", 2): {("t", 2), ("t", 3)}, ("b", 1): {("t", 4)}}
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


def _physical_plans(spark, run):
    """What ``run()`` returns, and the physical plans Spark chose before running the
    captured queries it ran (those reading a rid column; adaptive execution may
    broadcast a side later, once it has seen its rows)."""
    store = spark._jsparkSession.sharedState().statusStore()

    def listed() -> list:
        found = store.executionsList()
        return [found.apply(i) for i in range(found.size())]

    # by id, not by position: the store keeps the last spark.sql.ui.retainedExecutions
    # (1,000), so past that a session's list stops growing
    last = max((e.executionId() for e in listed()), default=-1)
    result = run()
    plans = [e.physicalPlanDescription() for e in listed() if e.executionId() > last]
    return result, [p.split("== Initial Plan ==")[-1].split("\n\n")[0] for p in plans if "__sp_" in p]


def test_a_join_broadcasts_the_side_spark_broadcasts_without_capture(spark, session, tmp_path):
    # Spark prunes the small side, a wide table, to its key, and its estimate fits a
    # threshold set to it; with a rid column, and before capture prunes it, it does not
    # (TPC-H Q9's part at SF 10)
    spark.range(2000).selectExpr("id AS k", "id % 7 AS v").write.parquet(str(tmp_path / "big"))
    wide = [f"repeat(CAST(id AS STRING), 30) AS c{i}" for i in range(8)]
    spark.range(50).selectExpr("id AS k", *wide).write.parquet(str(tmp_path / "small"))
    big = session.source(spark.read.parquet(str(tmp_path / "big")), "big")
    small = session.source(spark.read.parquet(str(tmp_path / "small")), "small").where("k < 40")
    query = big.join(small, "k").select("k", "v")
    merge = big.join(small.hint("merge"), "k").select("k", "v")
    node = query._jdf.queryExecution().optimizedPlan()
    while node.nodeName() != "Join":
        node = node.children().apply(0)
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(node.right().stats().sizeInBytes()))
    try:
        assert "BroadcastHashJoin" in query._jdf.queryExecution().sparkPlan().toString()
        cap, broadcast = _physical_plans(spark, lambda: session.capture(query, name="broadcast"))
        merged, shuffled = _physical_plans(spark, lambda: session.capture(merge, name="merged"))
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert any("BroadcastHashJoin" in p for p in broadcast)
    assert not any("BroadcastHashJoin" in p for p in shuffled)  # the user's hint stays
    assert lineage_by_output(cap) == lineage_by_output(merged)
    assert len(lineage_by_output(cap)) == 40


def test_scalar_subquery_lineage_is_stored_once(spark, session, tmp_path):
    spark.range(200).selectExpr("id AS k", "id % 10 AS v").write.parquet(str(tmp_path / "big"))
    big = session.source(spark.read.parquet(str(tmp_path / "big")), "big")
    # every output row depends on all 200 rows behind the average (4.5)
    query = big.where(F.col("v") > big.select(F.avg("v")).scalar()).select("k")
    cap = session.capture(query, name="sq")
    assert cap.output.count() == 100  # v in 5..9
    shared = spark.read.parquet(cap._entry.lineage.shared).count()
    assert shared == 200  # the subquery's lineage, stored once at capture: not 100 x 200
    (row,) = cap.output.where("k = 9").collect()
    assert cap.backward([row["_sp_rid"]], source="big").count() == 200
    # the pair table, built from the output rows' slots by that first answer
    stored = spark.read.parquet(cap._entry.lineage.path).count()
    assert stored == 100 + 100  # each row's own input row, plus one reference per row
    assert cap.pairs("big").count() == 100 * 200  # the expanded view, computed lazily
    assert cap.forward("big", "k = 0").count() == 100  # row 0 is behind the average only


def test_a_scalar_subquery_reads_its_rows_once_for_value_and_lineage(spark, session, tmp_path):
    # its row is kept when the query computes it, and the lineage is read from that row
    spark.range(50).selectExpr("id AS k", "id % 10 AS v").write.parquet(str(tmp_path / "few"))
    few = session.source(spark.read.parquet(str(tmp_path / "few")), "few")
    reads = spark.sparkContext.accumulator(0)

    def counted(v):
        reads.add(1)
        return v

    average = few.select(F.avg(F.udf(counted, "long")("v"))).scalar()
    cap = session.capture(few.where(F.col("v") > average).select("k"), name="once")
    assert reads.value == 50
    assert any("computed once by the query" in (line[3] or "") for line in cap._entry.explain)
    assert cap.output.count() == 25
    (row,) = cap.output.where("k = 9").collect()
    assert cap.backward([row["_sp_rid"]], source="few").count() == 50
    assert reads.value == 50  # answers read the stored lineage


def test_scalar_subqueries_spark_merges_keep_one_row_and_one_lineage(spark, session, tmp_path):
    # TPC-DS q9's shape: a count and two averages over the same rows, which Spark
    # merges into one plan that three subqueries read; its row and lineage kept once
    spark.range(60).selectExpr("id AS k", "id % 10 AS v", "id % 7 AS w").write.parquet(str(tmp_path / "m"))
    m = session.source(spark.read.parquet(str(tmp_path / "m")), "m")
    m.createOrReplaceTempView("m")
    low = "FROM m WHERE v < 5"  # 30 rows
    query = spark.sql(
        f"SELECT k, CASE WHEN (SELECT count(*) {low}) > 20 THEN (SELECT avg(w) {low}) "
        f"ELSE (SELECT avg(k) {low}) END AS x FROM m WHERE k < 3"
    )
    cap = session.capture(query, name="merged")
    assert sum("the same plan as one above" in (line[3] or "") for line in cap._entry.explain) == 2
    assert spark.read.parquet(cap._entry.lineage.shared).count() == 30  # once, not three times
    (row,) = cap.output.where("k = 1").collect()
    want = sorted({1} | {k for k in range(60) if k % 10 < 5})
    assert sorted(r.k for r in cap.backward([row["_sp_rid"]], source="m").collect()) == want
    assert sorted(r.x for r in cap.output.collect()) == sorted(r.x for r in query.collect())


def test_explain_names_every_operator(spark, session, keyed):
    other = session.source(spark.createDataFrame([(10, "a")], "k int, g string"), "o")
    query = keyed.where(F.col("g").isin(["a", "b"])).join(
        other.select(F.col("g").alias("og")), F.col("g") == F.col("og"), "left_anti"
    )
    report = session.capture(query.groupBy("g").count(), name="ex").explain()
    lines = report.splitlines()
    assert re.fullmatch(r"capture 'ex' version 1: \d+ operators, all exact", lines[0])
    # over a join, auto injects (a logical side relation would run the join again)
    assert any("Aggregate" in x and "inject: input rids" in x for x in lines)
    assert any("LeftAnti" in x and "left slots only" in x for x in lines)
    logical = session.capture(query.groupBy("g").count(), name="ex_logical", strategy="logical").explain()
    assert any("Aggregate" in x and "group: handle" in x for x in logical.splitlines())
    assert any("source t: rid = position in a Parquet copy" in x for x in lines)
    assert all(" exact " in x for x in lines[1:] if not x.startswith("source "))


def test_scalar_subquery_over_limit_keeps_the_row_it_used(spark, session, keyed):
    # which two rows the LIMIT keeps is up to the run: the query and its lineage agree on them
    threshold = keyed.orderBy(F.rand(5)).limit(2).select(F.max("k")).scalar()
    cap = session.capture(keyed.where(F.col("k") >= threshold).select("k"), name="lim")
    shared = spark.read.parquet(cap._entry.lineage.shared).select(F.col("in_rid").alias("_sp_rid"))
    kept = {r["k"] for r in cap.sources["t"].rows().join(shared, "_sp_rid").collect()}
    assert len(kept) == 2
    outputs = sorted(r["k"] for r in cap.output.collect())
    assert outputs == [k for k in range(5) if k >= max(kept)]
    for k, lineage in lineage_by_output(cap).items():
        assert lineage == {("t", k[0])} | {("t", x) for x in kept}


def test_window_functions(session, keyed):
    from pyspark.sql import Window

    ordered = Window.partitionBy("g").orderBy("k")
    query = keyed.select(
        "k",
        F.lag("k").over(ordered).alias("prev"),
        F.sum("k").over(ordered.rowsBetween(-1, 0)).alias("pair"),
        F.count("*").over(Window.partitionBy("g")).alias("n"),
    )
    got = lineage_by_output(session.capture(query, name="w"))
    assert got[(0, None, 0, 2)] == {("t", 0), ("t", 1)}  # the whole partition, for count
    assert got[(3, 2, 5, 2)] == {("t", 2), ("t", 3)}
    assert got[(4, None, 4, 1)] == {("t", 4)}
    top = keyed.select("k", "g", F.row_number().over(Window.orderBy(F.desc("k"))).alias("rn")).where("rn <= 2")
    got = lineage_by_output(session.capture(top, name="top"))
    assert got == {(4, "b", 1): {("t", 4)}, (3, "a", 2): {("t", 3), ("t", 4)}}


def test_window_frames_after_the_row_or_empty(spark, session, keyed):
    from pyspark.sql import Window

    ordered = Window.partitionBy("g").orderBy("k")
    query = keyed.select(
        "k",
        F.sum("k").over(ordered.rowsBetween(1, 2)).alias("after"),
        F.sum("k").over(ordered.rowsBetween(-2, -1)).alias("before"),
    )
    got = lineage_by_output(session.capture(query, name="frames"))
    # a row whose frame is empty depends on itself alone
    assert got[(0, 1, None)] == {("t", 0), ("t", 1)} and got[(1, None, 0)] == {("t", 0), ("t", 1)}
    assert got[(4, None, None)] == {("t", 4)}
    # a frame ending before the row: empty in partitions of two rows, not the first row
    far = keyed.select("k", F.sum("k").over(ordered.rowsBetween(-3, -2)).alias("far"))
    assert lineage_by_output(session.capture(far, name="far")) == {(k, None): {("t", k)} for k in range(5)}
    # one long partition: each row with the two before it, and its predecessor for lag
    long = session.source(spark.range(3000).select((F.col("id") % 1).alias("g"), F.col("id").alias("k")), "long")
    w = Window.partitionBy("g").orderBy("k")
    cap = session.capture(long.select("k", F.avg("k").over(w.rowsBetween(-2, 0)), F.lag("k").over(w)), name="long")
    rid_of = {r["_sp_rid"]: r["k"] for r in cap.output.collect()}
    k_of = {r["_sp_rid"]: r["id"] for r in cap.sources["long"].rows().collect()}  # the range itself
    pairs = {(rid_of[r["out_rid"]], k_of[r["in_rid"]]) for r in cap.pairs("long").collect()}
    assert pairs == {(k, j) for k in range(3000) for j in range(max(0, k - 2), k + 1)}


def test_stacked_windows_reach_the_lower_frames_once_each(spark, session):
    from pyspark.sql import Window

    n = 200
    rows = session.source(spark.range(n).select((F.col("id") % 1).alias("g"), F.col("id").alias("k")), "rows")
    up, down = Window.partitionBy("g").orderBy("k"), Window.partitionBy("g").orderBy(F.desc("k"))
    running = rows.withColumn("run", F.sum("k").over(up.rowsBetween(Window.unboundedPreceding, 0)))
    # a frame over the running totals of the rows beside each row (another order: two windows)
    query = running.select("k", F.max("run").over(down.rowsBetween(-1, 1)).alias("near"), F.lag("run").over(up))
    cap = session.capture(query, name="stacked")
    rid_of = {r["_sp_rid"]: r["k"] for r in cap.output.collect()}
    k_of = {r["_sp_rid"]: r["id"] for r in cap.sources["rows"].rows().collect()}
    got = [(rid_of[r["out_rid"]], k_of[r["in_rid"]]) for r in cap.pairs("rows").collect()]
    # row k reads the running totals of k - 1 .. k + 1: every row up to k + 1
    assert sorted(got) == [(k, j) for k in range(n) for j in range(min(k + 1, n - 1) + 1)]
    # ranges of one row apart from each other stay apart
    apart = session.capture(rows.select("k", F.lag("k", 3).over(up), F.lead("k", 3).over(up)), name="apart")
    rid_of = {r["_sp_rid"]: r["k"] for r in apart.output.collect()}
    got = {(rid_of[r["out_rid"]], k_of[r["in_rid"]]) for r in apart.pairs("rows").collect()}
    assert got == {(k, j) for k in range(n) for j in (k - 3, k, k + 3) if 0 <= j < n}


def test_size_based_and_offset_window_functions(session, keyed):
    from pyspark.sql import Window

    ordered = Window.partitionBy("g").orderBy("k")
    query = keyed.select(
        "k",
        F.lead("k", 1).over(ordered).alias("next"),
        F.ntile(2).over(ordered).alias("half"),
        F.percent_rank().over(ordered).alias("pr"),
        F.nth_value("k", 2)
        .over(ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
        .alias("nth"),
    )
    got = lineage_by_output(session.capture(query, name="w2"))
    # ntile, percent_rank and the unbounded nth_value read the whole partition
    assert got[(0, 1, 1, 0.0, 1)] == {("t", 0), ("t", 1)}
    assert got[(2, 3, 1, 0.0, 3)] == {("t", 2), ("t", 3)}
    assert got[(4, None, 1, 0.0, None)] == {("t", 4)}
    lead = lineage_by_output(
        session.capture(keyed.select("k", F.lead("k", 1).over(ordered).alias("next")), name="lead")
    )
    assert lead[(0, 1)] == {("t", 0), ("t", 1)} and lead[(1, None)] == {("t", 1)}


def test_generators(spark, session, keyed):
    arrays = keyed.select("k", F.when(F.col("k") < 3, F.array(F.col("k"), F.lit(9))).alias("xs"))
    pos = lineage_by_output(session.capture(arrays.select("k", F.posexplode_outer("xs")), name="pe"))
    assert pos[(1, 0, 1)] == {("t", 1)} and pos[(1, 1, 9)] == {("t", 1)}
    assert pos[(4, None, None)] == {("t", 4)}  # the outer form keeps rows with no elements
    stacked = keyed.selectExpr("k", "stack(2, k, k * 10) AS v")
    cap = session.capture(stacked, name="st")
    got = lineage_by_output(cap)
    assert got[(3, 30)] == {("t", 3)} and got[(0, 0)] == {("t", 0)} and cap.output.count() == 10


def test_python_udfs(session, keyed):
    plus = F.udf(lambda x: x + 1, "int")
    arrow = F.udf(lambda x: x * 2, "int", useArrow=True)

    @F.pandas_udf("int")
    def minus(s: pd.Series) -> pd.Series:
        return s - 1

    @F.pandas_udf("double")
    def mean(s: pd.Series) -> float:
        return float(s.mean())

    # row-level UDFs, also in a filter: each output row is its one input row
    rows = keyed.where(plus("k") > 1).select("k", plus("k").alias("p"), arrow("k").alias("a"), minus("k").alias("m"))
    got = lineage_by_output(session.capture(rows, name="udf"))
    assert got == {(k, k + 1, 2 * k, k - 1): {("t", k)} for k in range(1, 5)}
    # a grouped-aggregate pandas UDF reads the whole group
    grouped = lineage_by_output(session.capture(keyed.groupBy("g").agg(mean("k").alias("m")), name="pudaf"))
    assert grouped == {(None, 0.5): {("t", 0), ("t", 1)}, ("a", 2.5): {("t", 2), ("t", 3)}, ("b", 4.0): {("t", 4)}}
    report = session.load("udf").explain()
    assert "Python UDF results appended" in report


def test_python_functions_over_groups_and_partitions(session, keyed):
    def top(pdf):  # one row per group: its largest k
        return pdf.nlargest(1, "k")[["k", "g"]]

    def size(key, pdf):
        return pd.DataFrame({"g": [key[0]], "n": [len(pdf)]})

    got = lineage_by_output(session.capture(keyed.groupBy("g").applyInPandas(top, "k int, g string"), name="ap"))
    assert got == {(1, None): {("t", 0), ("t", 1)}, (3, "a"): {("t", 2), ("t", 3)}, (4, "b"): {("t", 4)}}
    sizes = session.capture(keyed.groupBy("g").applyInPandas(size, "g string, n long"), name="ap2")
    assert {r["g"]: r["n"] for r in sizes.output.collect()} == {None: 2, "a": 2, "b": 1}

    # a partition function: every output row depends on its whole input partition
    two = keyed.repartition(2, "g")
    parts = _partition_keys(two)

    def evens(batches):
        for pdf in batches:
            yield pdf[pdf["k"] % 2 == 0][["k"]]

    def evens_arrow(batches):
        import pyarrow.compute as pc

        for batch in batches:
            yield batch.filter(pc.equal(pc.bit_wise_and(batch.column("k"), 1), 0)).select(["k"])

    for name, query in {"mp": two.mapInPandas(evens, "k int"), "ma": two.mapInArrow(evens_arrow, "k int")}.items():
        cap = session.capture(query, name=name)
        got = lineage_by_output(cap)
        assert set(got) == {(0,), (2,), (4,)}
        for (k,), lineage in got.items():
            (part,) = [p for p, ks in parts.items() if k in ks]
            assert lineage == {("t", x) for x in parts[part]}
        assert "1 coarse" in cap.explain().splitlines()[0]


def test_partition_functions_under_a_union_and_a_coalesce(spark, session, keyed):
    # a task's partition number is not its input's above a union (the second input's
    # partitions come after the first's) or a coalesce (one task, several inputs): each
    # output row's lineage is still its own input partition, never another's or none
    two = keyed.repartition(2, "g")
    parts = _partition_keys(two)

    def tagged(tag):
        def f(batches):
            for pdf in batches:
                yield pdf[["k"]].assign(tag=tag)

        return f

    def arrow_tagged(batches):
        for batch in batches:
            yield pa.RecordBatch.from_arrays([batch.column("k"), pa.array(["ma"] * batch.num_rows)], ["k", "tag"])

    spark.udtf.register("sp_counted_u", F.udtf(Counted, returnType="v int, n int"))
    two.createOrReplaceTempView("sp_two_u")
    queries = {
        "union": two.mapInPandas(tagged("mp"), "k int, tag string")
        .unionByName(two.mapInPandas(tagged("mp2"), "k int, tag string"))
        .unionByName(two.mapInArrow(arrow_tagged, "k int, tag string")),
        "coalesced": two.mapInPandas(tagged("mp"), "k int, tag string").coalesce(1),
        "udtfs": spark.sql(
            "SELECT u.v AS k, 'a' AS tag FROM sp_two_u t, LATERAL sp_counted_u(t.k) u WHERE u.v >= 0 "
            "UNION ALL SELECT u.v AS k, 'b' AS tag FROM sp_two_u t, LATERAL sp_counted_u(t.k) u WHERE u.v >= 0"
        ),
    }
    for name, query in queries.items():
        cap = session.capture(query, name=f"parts_{name}")
        got = lineage_by_output(cap)
        assert len(got) == {"union": 15, "coalesced": 5, "udtfs": 10}[name], got
        for (k, tag), lineage in got.items():
            (part,) = [ks for ks in parts.values() if k in ks]
            assert lineage == {("t", x) for x in part}, (name, k, tag)


def test_python_functions_in_arrow_and_iterator_forms(spark, session, keyed):
    # applyInArrow, and both APIs' iterator forms (chosen by PySpark from the type
    # hints): each output row's lineage is its whole group, as for applyInPandas
    groups = {(None,): {("t", 0), ("t", 1)}, ("a",): {("t", 2), ("t", 3)}, ("b",): {("t", 4)}}

    def size_table(key, table):
        return pa.table({"g": pa.array([key[0].as_py()], pa.string()), "n": [table.num_rows]})

    def size_arrow_iter(key: tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        n = sum(b.num_rows for b in batches)
        yield pa.RecordBatch.from_pydict({"g": pa.array([key[0].as_py()], pa.string()), "n": pa.array([n], pa.int64())})

    def size_pandas_iter(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        frames = list(batches)
        yield pd.DataFrame({"g": [frames[0]["g"].iloc[0]], "n": [sum(len(f) for f in frames)]})

    def largest(table):  # no key; the Table form
        return table.take([pc.index(table.column("k"), pc.max(table.column("k"))).as_py()]).select(["g"])

    by_g = keyed.groupBy("g")
    queries = {
        "aa": by_g.applyInArrow(size_table, "g string, n long"),
        "aai": by_g.applyInArrow(size_arrow_iter, "g string, n long"),
        "api": by_g.applyInPandas(size_pandas_iter, "g string, n long"),
        "aal": by_g.applyInArrow(largest, "g string"),
    }
    for name, query in queries.items():
        got = lineage_by_output(session.capture(query, name=name))
        assert {k[:1]: v for k, v in got.items()} == groups, name
        if name != "aal":
            assert {k[0]: k[1] for k in got} == {None: 2, "a": 2, "b": 1}, name

    other = session.source(spark.createDataFrame([(10, "a"), (12, "z")], "k int, g string"), "o")

    def both(left, right):
        return pa.table({"n": [left.num_rows * 10 + right.num_rows]})

    cogrouped = by_g.cogroup(other.groupBy("g")).applyInArrow(both, "n long")
    got = lineage_by_output(session.capture(cogrouped, name="coa"))
    a_groups = {("t", 2), ("t", 3), ("o", 10)}
    assert got == {(20,): groups[(None,)], (21,): a_groups, (10,): groups[("b",)], (1,): {("o", 12)}}


class Tens:  # a Python UDTF: each call yields rows made from its argument alone
    def eval(self, x):
        yield (x,)
        yield (x * 10,)


class Counted:  # terminate() yields after the whole partition
    def __init__(self):
        self.n = 0

    def eval(self, x):
        self.n += 1
        yield (x, 0)

    def terminate(self):
        yield (-1, self.n)


class Groups:  # takes a table argument: whole partitions of rows
    def __init__(self):
        self.keys = []

    def eval(self, row):
        self.keys.append(row["k"])

    def terminate(self):
        if self.keys:
            yield (min(self.keys), len(self.keys))


def test_python_udtfs(spark, session, keyed):
    spark.udtf.register("sp_tens", F.udtf(Tens, returnType="v int"))
    spark.udtf.register("sp_counted", F.udtf(Counted, returnType="v int, n int"))
    spark.udtf.register("sp_groups", F.udtf(Groups, returnType="first int, n int"))
    two = keyed.repartition(2, "g")
    two.createOrReplaceTempView("sp_two")
    parts = _partition_keys(two)

    # LATERAL without terminate(): every output row comes from the row it was called on
    spark.udtf.register("sp_tens_rows", F.udtf(Tens, returnType="v int", useArrow=False))
    for udtf in ("sp_tens", "sp_tens_rows"):  # evaluated with Arrow, and row by row
        tens = session.capture(spark.sql(f"SELECT t.k, u.v FROM sp_two t, LATERAL {udtf}(t.k) u"), name=udtf)
        assert lineage_by_output(tens) == {(k, v): {("t", k)} for k in range(5) for v in (k, 10 * k)}
        assert "1 coarse" not in tens.explain().splitlines()[0]

    # with terminate(): its rows (v = -1) count the whole partition, so every row's
    # lineage is its input partition
    counted = session.capture(spark.sql("SELECT u.v, u.n FROM sp_two t, LATERAL sp_counted(t.k) u"), name="counted")
    got = lineage_by_output(counted, key="k")
    ends = {n for (v, n) in got if v == -1}
    assert sorted(ends) == sorted(len(ks) for ks in parts.values() if ks)
    for (v, n), lineage in got.items():
        (part,) = [ks for ks in parts.values() if (v in ks if v >= 0 else len(ks) == n)]
        assert lineage == {("t", x) for x in part}
    assert "has terminate()" in counted.explain()

    # a table argument, partitioned by g: each group's row is in the lineage of its output row
    groups = session.capture(spark.sql("SELECT * FROM sp_groups(TABLE(sp_two) PARTITION BY g)"), name="groups")
    got = lineage_by_output(groups)
    assert sorted(n for _, n in got) == [1, 2, 2]
    groups_of = {0: {0, 1}, 2: {2, 3}, 4: {4}}  # smallest k of each g -> the group's ks
    for (first, _), lineage in got.items():
        assert {("t", k) for k in groups_of[first]} <= lineage
    assert "takes a table argument" in groups.explain()


def test_cogrouped_python_function(spark, session, keyed):
    other = session.source(spark.createDataFrame([(10, "a"), (11, "a"), (12, "z")], "k int, g string"), "o")

    def sizes(key, left, right):
        return pd.DataFrame({"g": [key[0]], "n": [len(left) * 10 + len(right)]})

    query = keyed.groupBy("g").cogroup(other.groupBy("g")).applyInPandas(sizes, "g string, n long")
    got = lineage_by_output(session.capture(query, name="co"))
    assert got == {
        (None, 20): {("t", 0), ("t", 1)},
        ("a", 22): {("t", 2), ("t", 3), ("o", 10), ("o", 11)},  # both groups
        ("b", 10): {("t", 4)},
        ("z", 1): {("o", 12)},  # only the right side has this key
    }


def test_pivot_unpivot_cache_hints_and_observe(session, keyed):
    pivoted = keyed.groupBy("g").pivot("k", [0, 2, 4]).agg(F.max("x"))
    got = lineage_by_output(session.capture(pivoted, name="pivot"))
    # a pivoted row is its group: every row with that g, whichever k they have
    assert {k[0]: v for k, v in got.items()} == {
        None: {("t", 0), ("t", 1)},
        "a": {("t", 2), ("t", 3)},
        "b": {("t", 4)},
    }
    long = keyed.unpivot("k", ["x"], "name", "value").cache()
    seen = Observation("seen")
    observed = long.hint("broadcast").observe(seen, F.count(F.lit(1)).alias("rows")).where("k < 2")
    got = lineage_by_output(session.capture(observed, name="unpivot"))
    assert got == {(0, "x", 1.0): {("t", 0)}, (1, "x", -0.0): {("t", 1)}}
    assert seen.get == {"rows": 5}  # df.observe() still reports to the user
    long.unpersist()


def test_pandas_api_on_spark(spark, session, tmp_path):
    import pyspark.pandas as ps

    spark.createDataFrame([(k, k % 2) for k in range(6)], "k long, g long").write.parquet(str(tmp_path / "t"))
    frame = ps.read_parquet(str(tmp_path / "t"))  # with the default (distributed-sequence) index
    rows = frame[frame.k > 2].to_spark(index_col="idx")
    cap = session.capture(rows, name="ps")
    (name,) = cap.sources
    got = lineage_by_output(cap)
    assert {values[1]: lineage for values, lineage in got.items()} == {k: {(name, k)} for k in (3, 4, 5)}
    assert "AttachDistributedSequence" in cap.explain()


def test_uncorrelated_exists_keeps_every_matching_row(spark, session, keyed):
    other = session.source(spark.createDataFrame([(5,), (6,), (-1,)], "k int"), "u")
    keyed.createOrReplaceTempView("sp_keyed")
    other.createOrReplaceTempView("sp_other")
    query = spark.sql("SELECT k FROM sp_keyed WHERE k < 2 AND EXISTS (SELECT 1 FROM sp_other WHERE k > 0)")
    got = lineage_by_output(session.capture(query, name="ex"), key="k")
    # Spark would check for one row (LIMIT 1); every row the subquery returns matches
    assert got == {(0,): {("t", 0), ("u", 5), ("u", 6)}, (1,): {("t", 1), ("u", 5), ("u", 6)}}


def test_an_aggregate_joined_to_a_filtered_side_collects_only_groups_it_meets(session, spark, tmp_path, monkeypatch):
    # The aggregate's input is first reduced to the keys the filtered side holds: the
    # groups the join keeps have all their rows, so their values and lineage are those
    # of the query without the reduction. A preserved (outer) side keeps every group.
    # Parquet sources: Catalyst sizes their files (the filtered side must be small)
    spark.createDataFrame([(i, i % 5, float(i)) for i in range(20)], "k int, g int, v double").write.parquet(
        str(tmp_path / "facts")
    )
    spark.createDataFrame([(g, g in (1, 3)) for g in range(5)], "k int, hot boolean").write.parquet(
        str(tmp_path / "dims")
    )
    facts = session.source(spark.read.parquet(str(tmp_path / "facts")), "facts")
    dims = session.source(spark.read.parquet(str(tmp_path / "dims")), "dims")
    sums = facts.groupBy("g").agg(F.sum("v").alias("s"))
    hot = dims.where("hot")

    def expected(groups, with_dims):
        rows = {g: {("facts", i) for i in range(g, 20, 5)} for g in groups}
        return {(g, float(sum(range(g, 20, 5)))): rows[g] | ({("dims", g)} if with_dims(g) else set()) for g in groups}

    queries = {
        "inner": (hot.join(sums, hot.k == sums.g).select("g", "s"), True, expected((1, 3), lambda g: True)),
        "right": (sums.join(hot, sums.g == hot.k, "right").select("g", "s"), True, expected((1, 3), lambda g: True)),
        "left": (
            sums.join(hot, sums.g == hot.k, "left").select("g", "s"),
            False,
            expected(range(5), lambda g: g in (1, 3)),
        ),
        # Catalyst's inferred IS NOT NULL on the join key is no filter: every key is read
        "unfiltered": (dims.join(sums, dims.k == sums.g).select("g", "s"), False, expected(range(5), lambda g: True)),
    }
    found = {}
    for name, (df, reduced, want) in queries.items():
        cap = session.capture(df, name)
        assert any("first reduced" in (line[3] or "") for line in cap._entry.explain) == reduced, name
        found[name] = lineage_by_output(cap)
        assert found[name] == want, name
    # a logical aggregate (a side relation run again after the query) reads the reduced input too
    logical = session.capture(queries["inner"][0], "inner_logical", strategy="logical")
    assert any("first reduced" in (line[3] or "") for line in logical._entry.explain)
    assert lineage_by_output(logical) == found["inner"]
    # the same lineage without the reduction
    monkeypatch.setattr(join, "plan_reductions", lambda *args: None)
    for name, (df, _, _) in queries.items():
        cap = session.capture(df, f"{name}_unreduced")
        assert not any("first reduced" in (line[3] or "") for line in cap._entry.explain)
        assert lineage_by_output(cap) == found[name], name
