"""A window's large position ranges kept as blocks of a tree over each partition, sets
of a shared side (capture/window_blocks.py), where flattened they would be many pairs."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from sparkprov.bench.checks import check_row
from sparkprov.capture import lineage, window_blocks
from sparkprov.errors import UnsupportedOperation
from sparkprov.store.format import ref_source

from .test_window_sets import _pairs, _traced_by_both_engines


def test_a_range_is_covered_by_its_blocks_in_spark_as_in_python(spark):
    rng = random.Random(7)
    ranges = []
    for out in range(400):
        n = rng.randint(1, 3000)
        lo = rng.randint(1, n)
        ranges.append((out, (rng.randint(0, 3), None if out % 7 else "x"), lo, rng.randint(lo, n)))
    df = spark.createDataFrame(ranges, "out_rid long, key struct<a:int,b:string>, lo long, hi long")
    got = {}
    for r in window_blocks.references(df, "key", "lo", "hi").collect():
        got.setdefault(r.out_rid, set()).add(r.in_rid)
    # the same blocks' ids, from Python's cover
    wanted = []
    for out, key, lo, hi in ranges:
        wanted += [(out, key, j, i) for j, i in window_blocks.cover(lo, hi)]
    blocks = spark.createDataFrame(wanted, "out_rid long, key struct<a:int,b:string>, j int, i long")
    partition = window_blocks.set_of(F.col("key"), blocks.schema["key"].dataType)
    ids = blocks.select("out_rid", window_blocks.block_id(partition, F.col("j"), F.col("i")).alias("id"))
    want = {}
    for r in ids.collect():
        want.setdefault(r.out_rid, set()).add(r.id)
    assert got == want
    assert all(len(v) <= 2 * 12 for v in got.values())  # at most two blocks a level


def test_a_partitions_tree_holds_each_block_once(spark):
    # 13 rows in one partition, 8 in another: a leaf per row, each complete block once
    rows = [((p,), pos) for p, n in ((0, 13), (1, 8)) for pos in range(1, n + 1)]
    side = spark.createDataFrame(rows, "__sp_h struct<g:int>, __sp_pos long")
    tree = window_blocks.tree(side, "__sp_h", 3).collect()
    assert {r.src for r in tree} == {ref_source(3)} and {r.ref for r in tree} == {3}
    parents = {r.grp for r in tree}
    assert len(tree) == 2 * len(parents)
    # levels 1-3 of 13 rows: 6 + 3 + 1 blocks; of 8 rows: 4 + 2 + 1
    assert len(parents) == 10 + 7
    window_blocks.check(side, "__sp_h")  # no two blocks share an id


def _positions(level: int, index: int) -> range:
    return range(index * 2**level + 1, (index + 1) * 2**level + 1)


def test_a_prefix_chain_holds_its_positions_once_at_rising_levels():
    for q in range(3, 300):
        if q & (q - 1) == 0:
            continue
        chain = window_blocks.prefix_chain(q)
        last = chain[-1][0] & (chain[-1][0] - 1)  # the power of two it ends in: a block
        held = [p for _, block in chain for p in _positions(*block)] + list(range(1, last + 1))
        assert sorted(held) == list(range(1, q + 1)), q
        # a prefix's level is above its own block's and the next set's
        for (a, (own, _)), nxt in zip(chain, [*chain[1:], None]):
            below = window_blocks.prefix_level(nxt[0]) if nxt else last.bit_length() - 1
            assert window_blocks.prefix_level(a) > max(own, below), q


def test_a_sides_prefix_sets_are_the_chains_python_computes(spark):
    # 13 rows in one partition, 40 in another
    sizes = {0: 13, 1: 40}
    side = spark.createDataFrame(
        [((g,), pos) for g, n in sizes.items() for pos in range(1, n + 1)], "__sp_h struct<g:int>, __sp_pos long"
    )
    got = {}
    for r in window_blocks.prefixes(side, "__sp_h", 2).collect():
        assert (r.ref, r.src) == (2, ref_source(2))
        got.setdefault(r.grp, set()).add(r.in_rid)
    # the sets' ids as block_id makes them from (partition, level, index)
    wanted = []
    for g, n in sizes.items():
        for q in range(1, n + 1):
            if q & (q - 1):
                (_, own), rest = window_blocks.prefix_chain(q)[0], q & (q - 1)
                nxt = (window_blocks.prefix_level(rest), -rest) if rest & (rest - 1) else (rest.bit_length() - 1, 0)
                wanted.append((g, (window_blocks.prefix_level(q), -q), [own, nxt]))
    items = [(g, j, i) for g, top, held in wanted for j, i in [top, *held]]
    blocks = spark.createDataFrame(items, "g int, j int, i long").withColumn("h", F.struct("g"))
    partition = window_blocks.set_of(F.col("h"), blocks.schema["h"].dataType)
    ids = {
        (r.g, r.j, r.i): r.id
        for r in blocks.select(
            "g", "j", "i", window_blocks.block_id(partition, F.col("j"), F.col("i")).alias("id")
        ).collect()
    }
    want = {ids[(g, *top)]: {ids[(g, *b)] for b in held} for g, top, held in wanted}
    assert got == want
    window_blocks.check(side, "__sp_h")  # the two partitions' ids far apart


@pytest.fixture
def blocks(monkeypatch, request):
    """Every range of more than one position kept as blocks, however few pairs; ranges
    from position 1 as their covers' blocks, or as prefix sets (the test's parameter)."""
    monkeypatch.setattr(window_blocks, "MIN_PAIRS", 0)
    monkeypatch.setattr(window_blocks, "worth_it", lambda *sizes: True)
    monkeypatch.setattr(window_blocks, "prefixes_worth_it", lambda *sizes: request.param)
    return request.param


@pytest.fixture
def events(spark, session, tmp_path):
    """90 rows: k, g = k % 3 (30 rows each), a time t with ties, a value x."""
    spark.range(90).select(
        F.col("id").alias("k"),
        (F.col("id") % 3).alias("g"),
        (F.col("id") * 11 % 17).alias("t"),
        (F.col("id") * 7 % 13).alias("x"),
    ).write.parquet(str(tmp_path / "e"))
    return session.source(spark.read.parquet(str(tmp_path / "e")), "e")


def _running(src):
    by_t = Window.partitionBy("g").orderBy("t", "k")
    return src.select(
        "k",
        F.sum("x").over(by_t.rowsBetween(Window.unboundedPreceding, 0)).alias("run"),
        F.avg("x").over(by_t.rowsBetween(-4, 0)).alias("moving"),
        F.rank().over(Window.partitionBy("g").orderBy("t")).alias("r"),
        F.lag("x").over(by_t).alias("prev"),
        F.count("k").over(Window.partitionBy("g").orderBy("t").rangeBetween(-3, 0)).alias("near"),
    )


def _sessions(src):  # a window over a window's rows, then an aggregate over both
    by_t = Window.partitionBy("g").orderBy("t", "k")
    starts = F.when(F.col("t") - F.lag("t").over(by_t) > 2, 1).otherwise(0)
    marked = src.withColumn("starts", starts)
    numbered = marked.withColumn("session", F.sum("starts").over(by_t.rowsBetween(Window.unboundedPreceding, 0)))
    per_session = numbered.groupBy("g", "session").agg(F.count("*").alias("n"), F.sum("x").alias("sx"))
    return per_session.select((F.col("g") * 1000 + F.col("session")).alias("k"), "n", "sx")


# each query once (a capture of 90 rows kept as blocks takes seconds): both have ranges
# from position 1, kept as prefix sets for the running totals, as covers for the sessions
@pytest.mark.parametrize(
    "query, blocks",
    [(_running, True), (_sessions, False)],
    ids=["running-prefixes", "sessions-cover"],
    indirect=["blocks"],
)
def test_ranges_kept_as_blocks_give_the_flattened_lineage(spark, session, events, blocks, query):
    flat = session.capture(query(events), "flat", witnesses=True)  # ranges flattened, as why and how read them
    expected = _pairs(flat, "e")
    for strategy in ("auto", "lazy"):
        cap = session.capture(query(events), f"blocks-{strategy}", strategy=strategy)
        assert _pairs(cap, "e") == expected, strategy
        assert "window-blocks" in cap._entry.features, strategy  # a reader from before blocks refuses it
    shared = spark.read.parquet(cap._entry.lineage.shared)
    assert shared.where("src < 0 and -src - 1 = ref").count() > 0  # a tree was stored
    # partitions of 30 rows: blocks up to level 4; the prefix set of 1..q, q >= 7, above
    prefix_sets = shared.where("src < 0 and -src - 1 = ref and shiftrightunsigned(grp, 58) > 4").count()
    assert (prefix_sets > 0) == blocks
    _traced_by_both_engines(cap, "e", expected, rows=2)
    for rid in [r["_sp_rid"] for r in cap.output.orderBy("k").collect()][-1:]:
        assert check_row(cap, rid, lambda restricted: query(restricted["e"])) == []


def test_a_running_total_over_a_large_partition_is_captured(spark, session):
    # one partition of 20,000 rows: flattened, 200M pairs (refused above 50M before)
    big = session.source(spark.range(20_000).select(F.col("id").alias("k"), (F.col("id") % 97).alias("x")), "big")
    running = big.select("k", F.sum("x").over(Window.orderBy("k").rowsBetween(Window.unboundedPreceding, 0)).alias("s"))
    cap = session.capture(running, "running")
    assert "kept as blocks" in cap.explain() and cap._entry.features == ["window-blocks"]
    rid = {r.k: r["_sp_rid"] for r in cap.output.where("k in (0, 4999, 19999)").collect()}
    for engine in ("spark", "embedded"):  # (the source is spark.range's rows: column id)
        assert sorted(r.id for r in cap.backward([rid[4999]], "big", engine=engine).collect()) == list(range(5000))
        assert cap.backward([rid[0]], "big", engine=engine).count() == 1
        assert cap.forward("big", "id = 19990", engine=engine).count() == 10
    assert cap.forward("big", "id = 0", engine="embedded").count() == 20_000
    stored = spark.read.parquet(cap._entry.lineage.path).count() + spark.read.parquet(cap._entry.lineage.shared).count()
    assert stored < 20_000 * 20  # linear in the rows (a tree and a few blocks a row), not their square


def _ids_apart_by(step: int):
    """A ``set_of`` giving partition g (the handle's one field) the id ``g * step``."""
    return lambda handle, handle_type: handle.getField(handle_type.fields[0].name).cast("long") * step


@pytest.mark.parametrize("blocks", [False, True], ids=["cover", "prefixes"], indirect=True)
@pytest.mark.parametrize("apart_by", [0, 29], ids=["alike", "adjacent"])
def test_blocks_whose_ids_could_meet_are_refused(session, events, blocks, monkeypatch, apart_by):
    # the partitions' ids (g = 0, 1, 2: 30 rows each) made alike, or 29 apart: the
    # blocks of one would take ids of the next's
    monkeypatch.setattr(window_blocks, "set_of", _ids_apart_by(apart_by))
    with pytest.raises(UnsupportedOperation, match="hash to within their sizes"):
        session.capture(_running(events), "clash")


def test_ids_of_partitions_apart_by_their_sizes_are_taken(spark, session, events, monkeypatch):
    # 30 rows a partition: ids 60 apart leave each its range of 60 (-30 .. 29 around it)
    monkeypatch.setattr(window_blocks, "MIN_PAIRS", 0)
    monkeypatch.setattr(window_blocks, "worth_it", lambda *sizes: True)
    monkeypatch.setattr(window_blocks, "set_of", _ids_apart_by(60))
    cap = session.capture(_running(events), "near")
    assert "kept as blocks" in cap.explain()
    for rid in [r["_sp_rid"] for r in cap.output.collect()][::7]:
        assert check_row(cap, rid, lambda restricted: _running(restricted["e"])) == []


def _ranked_groups(src):  # TPC-DS q67's shape: a rank over ROLLUP groups, each partition's top 40 kept
    groups = src.rollup("a", "b").agg(F.sum("v").alias("s"))
    return groups.select(
        (F.coalesce("a", F.lit(9)) * 1000 + F.coalesce("b", F.lit(999))).alias("k"),
        F.rank().over(Window.partitionBy("a").orderBy(F.desc("s"), "b")).alias("r"),
    ).where("r <= 40")


def test_a_rank_over_large_groups_keeps_them_as_blocks(spark, session, monkeypatch, tmp_path):
    # Few positions are read (each partition's top 40: 2,461), but each holds its
    # group's rows (the grand total all 3,000, a total of `a` 1,000, ranked first in its
    # partition): flattened, 123,000 pairs, kept as blocks once the positions are weighed
    # by the rows they hold
    monkeypatch.setattr(window_blocks, "MIN_PAIRS", 10_000)
    monkeypatch.setattr(lineage, "JOINED_MAX_PAIRS", 100_000)  # flattened in DuckDB below it
    k = F.col("id")
    spark.range(3000).select(k.alias("k"), (k % 3).alias("a"), (k % 150).alias("b"), (k % 11).alias("v")).write.parquet(
        str(tmp_path / "d")
    )
    data = session.source(spark.read.parquet(str(tmp_path / "d")), "data")
    flat = session.capture(_ranked_groups(data), "flat", witnesses=True)  # flattened, as why and how read them
    expected = _pairs(flat, "data")
    assert len(expected) == 3 * 40 * 1000 + 3000
    cap = session.capture(_ranked_groups(data), "blocks")
    assert "window-blocks" in cap._entry.features
    assert _pairs(cap, "data") == expected
    stored = spark.read.parquet(cap._entry.lineage.path).count() + spark.read.parquet(cap._entry.lineage.shared).count()
    assert stored < 20_000  # the groups' rows once, a tree and a few blocks a row
    _traced_by_both_engines(cap, "data", expected, rows=2)
    for rid in [r["_sp_rid"] for r in cap.output.orderBy("r").collect()][-1:]:
        assert check_row(cap, rid, lambda restricted: _ranked_groups(restricted["data"])) == []
