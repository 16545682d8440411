"""Windows whose functions read their whole partition (an aggregate over the unbounded
frame, ntile, percent_rank, cume_dist): each partition's lineage kept once, as a set
of a shared side that its rows refer to (capture/rules/window.py)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from sparkprov.bench.checks import check_row
from sparkprov.errors import UnsupportedOperation
from sparkprov.store.files import parquet_files
from sparkprov.store.format import shared_path


def _pairs(cap, source: str, key: str = "k") -> set[tuple]:
    """(output row's key, input row's k) for every pair of ``cap`` with ``source``."""
    out = {r["_sp_rid"]: r[key] for r in cap.output.collect()}
    src = {r["_sp_rid"]: r["k"] for r in cap.sources[source].rows().collect()}
    return {(out[r["out_rid"]], src[r["in_rid"]]) for r in cap.pairs(source).collect()}


def _traced_by_both_engines(cap, source: str, pairs: set[tuple], key: str = "k", rows: int = 4) -> None:
    """Backward and forward answers of a few rows, by both engines, agree with ``pairs``."""
    out = {r["_sp_rid"]: r[key] for r in cap.output.collect()}
    for rid in sorted(out)[:rows]:
        want = sorted(i for o, i in pairs if o == out[rid])
        for engine in ("spark", "embedded"):
            assert sorted(r.k for r in cap.backward([rid], source, engine=engine).collect()) == want, engine
    for k in sorted({i for _, i in pairs})[:rows]:
        want = sorted({o for o, i in pairs if i == k}, key=str)  # keys may be NULL
        for engine in ("spark", "embedded"):
            got = sorted((r[key] for r in cap.forward(source, f"k = {k}", engine=engine).collect()), key=str)
            assert got == want, (engine, k)


def test_windows_over_the_whole_input_keep_its_lineage_once(spark, session, tmp_path):
    n = 60
    spark.range(n).select(F.col("id").alias("k"), (F.col("id") * 7 % 13).alias("x")).write.parquet(str(tmp_path / "t"))
    t = session.source(spark.read.parquet(str(tmp_path / "t")), "t")
    whole = Window.partitionBy()

    def zscores(src):  # every row reads the whole input; the lag, its row and the one before
        z = (F.col("x") - F.avg("x").over(whole)) / F.stddev("x").over(whole)
        return src.select(
            "k",
            z.alias("z"),
            F.ntile(4).over(Window.orderBy("x", "k")).alias("q"),
            F.lag("k").over(Window.orderBy("k")).alias("prev"),
        )

    # resolved at capture (the lag's ranges), built by the first answer; the share below
    # keeps its lineage in the output rows
    for strategy in ("auto", "lazy"):
        cap = session.capture(zscores(t), f"z-{strategy}", strategy=strategy)
        assert strategy == "lazy" or "whole input's lineage, kept once" in cap.explain(), cap.explain()
        k_of = {r["_sp_rid"]: r["k"] for r in cap.output.collect()}
        rid = next(r for r, k in k_of.items() if k == 17)
        assert sorted(r.k for r in cap.backward([rid], "t").collect()) == list(range(n)), strategy
    assert _pairs(cap, "t") == {(o, i) for o in range(n) for i in range(n)}
    assert cap.backward([rid], "t", engine="embedded").count() == n
    for engine in ("spark", "embedded"):  # behind every row's average
        assert cap.forward("t", "k = 3", engine=engine).count() == n, engine
    for rid in list(k_of)[:2]:  # re-execution over B(o), and forward from it
        assert check_row(cap, rid, lambda restricted: zscores(restricted["t"])) == []
    # stored once: flattened, 20,000 rows would need 400M pairs (refused above 50M)
    big = session.source(spark.range(20_000).select(F.col("id").alias("k"), (F.col("id") % 97).alias("x")), "big")
    cap = session.capture(big.select("k", (F.col("x") / F.sum("x").over(whole)).alias("share")), "share")
    assert spark.read.parquet(cap._entry.lineage.shared).count() == 20_000
    (row,) = cap.output.where("k = 5").collect()
    assert cap.backward([row["_sp_rid"]], "big").count() == 20_000
    assert spark.read.parquet(cap._entry.lineage.path).count() == 2 * 20_000  # its own row, and a reference


@pytest.fixture
def parted(spark, session, tmp_path):
    """60 rows: k, g = k % 3, and two keys with NULLs where (a, h) takes both (NULL, 1)
    and (1, NULL), which a hash that skips NULLs would not tell apart."""
    spark.range(60).select(
        F.col("id").alias("k"),
        (F.col("id") % 3).alias("g"),
        F.when(F.col("id") % 5 == 0, None).otherwise(F.col("id") % 2).alias("h"),
        F.when(F.col("id") % 4 == 1, None).otherwise(F.col("id") % 2).alias("a"),
        (F.col("id") * 7 % 13).alias("x"),
    ).write.parquet(str(tmp_path / "p"))
    return session.source(spark.read.parquet(str(tmp_path / "p")), "p")


def test_window_partitions_keep_their_lineage_once_each(spark, session, parted):
    rows = {r.k: r for r in parted.collect()}
    # one set per (a, h), NULLs included: a row's lineage is its partition exactly
    sums = session.capture(parted.select("k", F.sum("x").over(Window.partitionBy("a", "h")).alias("s")), "sums")
    own = "own slots plus a reference to its partition's lineage, kept once per partition"  # the rule's line
    assert own in sums.explain(), sums.explain()
    assert sums._entry.features == ["window-sets"]  # a reader from before sets refuses it
    same = {(o, i) for o in rows for i in rows if (rows[o].a, rows[o].h) == (rows[i].a, rows[i].h)}
    assert _pairs(sums, "p") == same
    _traced_by_both_engines(sums, "p", same)
    shared = spark.read.parquet(sums._entry.lineage.shared)
    assert shared.count() == 60 and shared.select("grp").distinct().count() == 6  # each row once, a set per key

    def features(src):  # two windows stacked, a ranged function beside each
        by_g = Window.partitionBy("g")
        return src.select(
            "k",
            (F.col("x") - F.avg("x").over(by_g)).alias("dev"),
            F.sum("x").over(by_g.orderBy("k").rowsBetween(-1, 0)).alias("pair"),
            F.ntile(3).over(Window.partitionBy("h").orderBy("k")).alias("q"),
        )

    # the same lineage as the ranges kept with witnesses (which why and how read), at
    # capture and built by the first answer
    ranges = session.capture(features(parted), "ranges", witnesses=True)
    assert own not in ranges.explain()
    expected = _pairs(ranges, "p")
    for strategy in ("auto", "lazy", "logical"):
        cap = session.capture(features(parted), f"features-{strategy}", strategy=strategy)
        assert _pairs(cap, "p") == expected, strategy
    _traced_by_both_engines(cap, "p", expected)
    for rid in [r["_sp_rid"] for r in cap.output.collect()][:2]:  # re-execution over B(o), and forward from it
        assert check_row(cap, rid, lambda restricted: features(restricted["p"])) == []

    # an aggregate over a window's rows: a group's rows come from several partitions
    def top(src):
        return src.select("h", F.ntile(3).over(Window.partitionBy("g").orderBy("k")).alias("q")).groupBy("h").max("q")

    cap = session.capture(top(parted), "top")
    groups = {h: {r.g for r in rows.values() if r.h == h} for h in (None, 0, 1)}
    want = {(h, i) for h, gs in groups.items() for i in rows if rows[i].g in gs}
    assert _pairs(cap, "p", key="h") == want
    _traced_by_both_engines(cap, "p", want, key="h", rows=3)

    # a window over an aggregate's rows: the sets hold the aggregate's groups
    totals = parted.groupBy("g", "h").agg(F.sum("x").alias("sx"))
    shares = session.capture(
        totals.select("g", "h", (F.col("sx") / F.sum("sx").over(Window.partitionBy("g"))).alias("f")), "shares"
    )
    assert own in shares.explain()
    for row in shares.output.collect():
        got = sorted(r.k for r in shares.backward([row["_sp_rid"]], "p").collect())
        assert got == sorted(k for k, r in rows.items() if r.g == row["g"])

    # two partitions of 20,000 rows: flattened, 200M pairs (refused above 50M)
    big = session.source(spark.range(20_000).select(F.col("id").alias("k"), (F.col("id") % 97).alias("x")), "big")
    halves = big.select("k", (F.col("x") / F.sum("x").over(Window.partitionBy(F.col("k") % 2))).alias("share"))
    cap = session.capture(halves, "halves")
    (row,) = cap.output.where("k = 5").collect()
    # (the source is spark.range's rows: column id)
    assert sorted(r.id for r in cap.backward([row["_sp_rid"]], "big").collect()) == list(range(1, 20_000, 2))
    assert cap.forward("big", "id = 4", engine="embedded").count() == 10_000


def test_only_the_partitions_the_output_refers_to_keep_their_lineage(spark, session, parted):
    rows = {r.k: r for r in parted.collect()}
    by_g = Window.partitionBy("g")
    # a rank beside the average: the output's ranges are resolved at capture, and its
    # first two rows refer to two of the three partitions' sets
    top = parted.select("k", F.avg("x").over(by_g).alias("m"), F.rank().over(by_g.orderBy("k")).alias("r"))
    cap = session.capture(top.orderBy("k").limit(2), "top")
    cap.build_lineage()
    shared = spark.read.parquet(shared_path(cap._entry.lineage))
    assert shared.select("grp").distinct().count() == 2
    want = {(o, i) for o in (0, 1) for i in rows if rows[i].g == rows[o].g}
    assert _pairs(cap, "p") == want
    # as the ranges kept with witnesses give it (no shared side there)
    assert _pairs(session.capture(top.orderBy("k").limit(2), "ranges", witnesses=True), "p") == want
    _traced_by_both_engines(cap, "p", want, rows=2)
    for engine in ("spark", "embedded"):  # a row of the third partition is behind no output row
        assert cap.forward("p", "k = 2", engine=engine).count() == 0, engine


def test_float_keys_are_one_set_where_spark_makes_them_one_partition(spark, session):
    # Spark puts 0.0 and -0.0 in one partition, and every NaN in another, also inside a
    # struct or an array: a set id that told them apart would split the partition
    rows = [(0, 1.0), (1, -0.0), (2, 0.0), (3, float("nan")), (4, float("nan")), (5, None)]
    t = session.source(spark.createDataFrame(rows, "k int, x double"), "t")
    for i, key in enumerate((F.col("x"), F.struct("x"), F.array("x"))):
        cap = session.capture(t.select("k", F.count("*").over(Window.partitionBy(key)).alias("n")), f"floats{i}")
        got = {r["k"]: sorted(x.k for x in cap.backward([r["_sp_rid"]], "t").collect()) for r in cap.output.collect()}
        assert got == {0: [0], 1: [1, 2], 2: [1, 2], 3: [3, 4], 4: [3, 4], 5: [5]}, i


def test_partitions_whose_ids_collide_are_refused(session, parted, monkeypatch):
    # two keys hashing to one id would give each partition's rows the other's lineage
    from sparkprov.plan.catalyst import Bridge

    monkeypatch.setattr(Bridge, "hash64", lambda self, exprs: self.long_literal(7))
    by_g = parted.select("k", F.avg("x").over(Window.partitionBy("g")).alias("m"))
    with pytest.raises(UnsupportedOperation, match="hash to the same set id"):
        session.capture(by_g, "clash")
    # beside a ranked window: the sets resolved with its ranges by joins in this process
    ranked = parted.select(
        "k", F.avg("x").over(Window.partitionBy("g")).alias("m"), F.rank().over(Window.partitionBy("g").orderBy("k"))
    )
    with pytest.raises(UnsupportedOperation, match="hash to the same set id"):
        session.capture(ranked, "clash-ranked")
    one = session.capture(parted.where("g = 1").select("k", F.avg("x").over(Window.partitionBy("g")).alias("m")), "one")
    assert one.backward([one.output.first()["_sp_rid"]], "p").count() == 20  # one partition: no two keys


def test_shared_lineage_without_a_set_column_is_read_as_one_set(spark, session, parted):
    # as a sparkprov from before windows kept a set per partition wrote it: no grp
    # column (and, older still, no list of the files written, so the rewrite is allowed)
    whole = parted.select("k", F.avg("x").over(Window.partitionBy()).alias("m"))
    session.capture(whole, "old")
    path = session.store.root / "catalog" / "old" / "v000001.json"
    entry = json.loads(path.read_text())
    del entry["files"], entry["digest"]
    path.write_text(json.dumps(entry))
    cap = session.load("old")
    for f in parquet_files(cap._entry.lineage.shared):
        pq.write_table(pq.read_table(f).drop_columns(["grp"]), f)
    rid = cap.output.first()["_sp_rid"]
    for engine in ("spark", "embedded"):
        assert cap.backward([rid], "p", engine=engine).count() == 60, engine
        assert cap.forward("p", "k = 3", engine=engine).count() == 60, engine


def test_a_cte_read_twice_resolves_its_windows_once(spark, session, tmp_path):
    # TPC-DS q57's shape: a CTE of windows over an aggregate, read twice and joined with
    # itself (this month beside last month); both copies read the rows the query
    # computes once, so each window's side relation and shared lineage is made once
    rows = [(i, i % 3, 1 + i % 5, i % 7) for i in range(90)]  # k, g, m (month), v
    spark.createDataFrame(rows, "k int, g int, m int, v int").write.parquet(str(tmp_path / "t"))
    session.source(spark.read.parquet(str(tmp_path / "t")), "t").createOrReplaceTempView("tw")
    v = """SELECT g, m, sum(v) AS s, sum(sum(v)) OVER (PARTITION BY g ORDER BY m) AS running,
        avg(sum(v)) OVER (PARTITION BY g) AS mean, rank() OVER (PARTITION BY g ORDER BY m) AS rn
        FROM tw GROUP BY g, m"""
    both = spark.sql(
        f"WITH v AS ({v}) SELECT v.g, v.m, v.s, v.running, v.mean, p.s AS before, p.running AS rbefore "
        "FROM v JOIN v AS p ON v.g = p.g AND v.rn = p.rn + 1"
    )
    cap = session.capture(both, "twice")
    assert "a window before it" in cap.explain(), cap.explain()
    once = session.capture(spark.sql(f"SELECT * FROM ({v}) WHERE m > 1"), "once")
    # the partitions' lineage stored once: as much as for one copy of the CTE
    stored = [spark.read.parquet(c._entry.lineage.shared).count() for c in (cap, once)]
    assert stored[0] == stored[1], stored
    assert "a window before it" not in once.explain()
    got = {(r.g, r.m): r for r in cap.output.collect()}
    assert sorted(got) == [(g, m) for g in range(3) for m in range(2, 6)]
    for (g, _), row in got.items():
        # the mean reads every month of g: each row reaches every input row of its g
        want = sorted(k for k, gg, _, _ in rows if gg == g)
        for engine in ("spark", "embedded"):
            assert sorted(r.k for r in cap.backward([row["_sp_rid"]], "t", engine=engine).collect()) == want
    # without the mean, the running sums' ranges: months up to m (this copy's) and m - 1
    cap = session.capture(_runs(spark, "tw"), "runs")
    assert "a window before it" in cap.explain(), cap.explain()
    for row in cap.output.collect():
        want = sorted(k for k, g, m, _ in rows if g == row.g and m <= row.m)
        for engine in ("spark", "embedded"):
            assert sorted(r.k for r in cap.backward([row["_sp_rid"]], "t", engine=engine).collect()) == want
        assert check_row(cap, row["_sp_rid"], lambda r: _runs(spark, "tw_restricted", r["t"])) == []


def _runs(spark, view: str, rows=None):
    """Each month's running sum beside last month's, per g, over the rows of ``view``."""
    if rows is not None:
        rows.createOrReplaceTempView(view)
    v = f"""SELECT g, m, sum(sum(v)) OVER (PARTITION BY g ORDER BY m) AS running,
        rank() OVER (PARTITION BY g ORDER BY m) AS rn FROM {view} GROUP BY g, m"""
    return spark.sql(
        f"WITH v AS ({v}) SELECT v.g, v.m, v.running, p.running AS rbefore FROM v JOIN v AS p "
        "ON v.g = p.g AND v.rn = p.rn + 1"
    )
