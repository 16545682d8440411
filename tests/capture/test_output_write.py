"""A capture that also writes its output for the user (capture/output_write.py): the stored rows'
rids must be those a later capture reading the written files gives them, however Spark
spreads the rows over files, and written files that do not match fail the capture.
Small rows are collected once and written from there: into a new local folder on the
driver, as Spark would have written them; elsewhere by Spark."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import sparkprov as sp
from sparkprov.capture import output_write

# six partitions, some of them without rows (Spark writes no file for those but the
# first); by range: the first two without rows
SPREAD = {
    "by hash": lambda src: src.where("id % 10 < 2").repartition(6, "v").where("id < 30"),
    "by range": lambda src: src.where("id % 10 < 2").repartitionByRange(6, "id").where("spark_partition_id() >= 2"),
}


@pytest.fixture
def large(monkeypatch):
    """Rows taken as too large to collect (as Catalyst's estimate says of large ones):
    computed once by a checkpoint and written by Spark from its partitions."""
    monkeypatch.setattr(output_write, "small_rows", lambda df, **kw: None)


def _traced_through(session, spark, tmp_path, spread=SPREAD["by hash"]):
    """Every row read again from the written files traces back, end to end, to the
    source row with its id."""
    rows = [(i, i * 10) for i in range(40)]
    spark.createDataFrame(rows, "id int, v int").coalesce(1).write.parquet(str(tmp_path / "in"))
    src = session.source(spark.read.parquet(str(tmp_path / "in")), "numbers")
    session.capture(spread(src), "kept", path=tmp_path / "kept")
    files = sorted((tmp_path / "kept").glob("part-*.parquet"))
    # a partition without rows that has no file, or (the first) that has an empty one
    assert len(files) < 6 or pq.read_metadata(files[0]).num_rows == 0
    again = session.capture(spark.read.parquet(str(tmp_path / "kept")), "again")
    found = {}
    for row in again.output.collect():
        behind = again.backward(f"id = {row.id}", end_to_end=True)["kept/numbers"]
        found[row.id] = sorted(r.id for r in behind.collect())
    return found


@pytest.mark.parametrize("spread", SPREAD)
def test_written_rows_keep_their_rids(session, spark, tmp_path, caplog, spread, large):
    with caplog.at_level("INFO", logger="sparkprov"):
        found = _traced_through(session, spark, tmp_path, SPREAD[spread])
    assert "Spark wrote" not in caplog.text  # the files are the ones expected: stored once
    # by range, the rows of the last four of six partitions: the larger ids
    expected = (0, 1, 10, 11, 20, 21) if spread == "by hash" else sorted(found)
    assert found == {i: [i] for i in expected}
    assert 0 < len(found) < 8 and (spread == "by hash" or min(found) > 1)


def test_files_numbered_otherwise_are_stored_again(session, spark, tmp_path, monkeypatch, caplog, large):
    # as if Spark wrote a file for every partition (it writes one for the first and for
    # those with rows): the rids guessed first are wrong,
    # and the stored output must be written again with the files' numbers
    checkpointed = output_write._checkpointed

    def every_partition(staged):
        kept, _ = checkpointed(staged)
        return kept, list(range(kept.rdd.getNumPartitions()))

    monkeypatch.setattr(output_write, "_checkpointed", every_partition)
    with caplog.at_level("INFO", logger="sparkprov"):
        found = _traced_through(session, spark, tmp_path)
    assert "files for 6 partitions with rows" in caplog.text
    assert found == {i: [i] for i in (0, 1, 10, 11, 20, 21)}


@pytest.mark.parametrize("rows", ["small", "large"])
def test_an_empty_output_is_written(session, spark, tmp_path, rows, request):
    if rows == "large":
        request.getfixturevalue("large")
    cap = session.capture(spark.range(5).where("id > 9"), "none", path=tmp_path / "none")
    assert cap.output.count() == 0
    assert spark.read.parquet(str(tmp_path / "none")).count() == 0
    assert isinstance(cap, sp.Capture)


_TYPED = (
    "id int, name string, price decimal(10,2), day date, at timestamp, at_local timestamp_ntz, "
    "tags array<string>, point struct<x: double, y: double>"
)


def _typed_rows(spark, tmp_path):
    import datetime as dt
    from decimal import Decimal

    rows = [
        (i, None if i == 3 else f"n{i}", Decimal(f"{i}.25"), dt.date(2024, 1, 1 + i),
         dt.datetime(2024, 3, 31, 1, 30 + i), dt.datetime(2024, 3, 31, 2, 30), [f"t{i}"] * (i % 3),
         None if i == 2 else (float(i), -1.5))
        for i in range(8)
    ]  # fmt: skip
    spark.createDataFrame(rows, _TYPED).coalesce(1).write.parquet(str(tmp_path / "in"))
    return spark.read.parquet(str(tmp_path / "in"))


def test_small_rows_are_written_for_the_user_as_spark_writes_them(session, spark, tmp_path):
    # a new local folder: written on the driver, one part file beside Spark's _SUCCESS,
    # read back by Spark as Spark's own write of the same rows reads back
    src = session.source(_typed_rows(spark, tmp_path), "typed")
    query = src.where("id % 2 = 0").withColumnRenamed("price", "cost")
    query.write.parquet(str(tmp_path / "plain"))
    session.capture(query, "kept", path=tmp_path / "kept")
    names = sorted(p.name for p in (tmp_path / "kept").iterdir())
    assert len(names) == 2 and names[0] == "_SUCCESS" and names[1].endswith(".snappy.parquet")
    ours, plain = spark.read.parquet(str(tmp_path / "kept")), spark.read.parquet(str(tmp_path / "plain"))
    assert ours.schema == plain.schema
    assert sorted(ours.collect()) == sorted(plain.collect())
    again = session.capture(spark.read.parquet(str(tmp_path / "kept")).where("id > 2"), "again")
    for row in again.output.collect():
        behind = again.backward(f"id = {row.id}", end_to_end=True)["kept/typed"]
        assert [(r.id, r.name, r.price) for r in behind.collect()] == [(row.id, row.name, row.cost)]


@pytest.mark.parametrize("codec", ["zstd", "uncompressed", "lz4"])
def test_small_rows_keep_the_sessions_parquet_codec(session, spark, tmp_path, codec):
    # Arrow writes the codecs it writes as Spark does; Spark's lz4 (Hadoop's framing) it
    # leaves to Spark
    src = session.source(spark.range(10).selectExpr("id", "id * 2 AS v"), "numbers")
    spark.conf.set("spark.sql.parquet.compression.codec", codec)
    try:
        src.write.parquet(str(tmp_path / "plain"))
        session.capture(src.where("id > 3"), "kept", path=tmp_path / "kept")
    finally:
        spark.conf.unset("spark.sql.parquet.compression.codec")
    (part,) = (tmp_path / "kept").glob("part-*.parquet")
    theirs = next((tmp_path / "plain").glob("part-*.parquet"))
    compression = {pq.read_metadata(f).row_group(0).column(0).compression for f in (part, theirs)}
    assert len(compression) == 1 and compression != {"SNAPPY"}
    assert part.name.split("-c000")[1] == theirs.name.split("-c000")[1]  # its name's codec too
    again = session.capture(spark.read.parquet(str(tmp_path / "kept")), "again")
    for row in again.output.collect():
        assert [r.id for r in again.backward(f"id = {row.id}", end_to_end=True)["kept/numbers"].collect()] == [row.id]


@pytest.mark.parametrize("where", ["a folder that exists", "a table"])
def test_small_rows_elsewhere_are_written_by_spark(session, spark, tmp_path, where):
    # overwritten, or a table: Spark writes the collected rows as one partition
    src = session.source(spark.range(40).selectExpr("id", "id % 3 AS k"), "numbers")
    query = src.where("k = 1").repartition(4, "id")
    if where == "a table":
        session.capture(query, "kept", table="sp_small_kept")
        written = spark.table("sp_small_kept")
    else:
        spark.range(3).write.parquet(str(tmp_path / "kept"))
        session.capture(query, "kept", path=tmp_path / "kept", mode="overwrite")
        assert len(list((tmp_path / "kept").glob("part-*.parquet"))) == 1
        written = spark.read.parquet(str(tmp_path / "kept"))
    again = session.capture(written.where("id > 20"), "again")
    ids = sorted(r.id for r in again.output.collect())
    assert ids == [i for i in range(21, 40) if i % 3 == 1]
    for i in ids:
        assert [r.id for r in again.backward(f"id = {i}", end_to_end=True)["kept/numbers"].collect()] == [i]


def test_small_rows_into_the_store_are_one_file_traced_by_position(session, spark, tmp_path):
    # a checkpoint's folder is the store's: its small rows are written once, through
    # Arrow, as one file; a row's rid is its position there, as a later read gives it
    rows = [(i, i * 10) for i in range(40)]
    spark.createDataFrame(rows, "id int, v int").coalesce(1).write.parquet(str(tmp_path / "in"))
    src = session.source(spark.read.parquet(str(tmp_path / "in")), "numbers")
    stage = session.checkpoint(SPREAD["by hash"](src), "stage")
    (folder,) = {p.parent for p in (tmp_path / "store" / "checkpoints").rglob("part-*.parquet")}
    assert len(list(folder.glob("part-*.parquet"))) == 1
    again = session.capture(stage.where("id > 10"), "again")
    for row in again.output.collect():
        behind = again.backward(f"id = {row.id}", end_to_end=True)["stage/numbers"]
        assert [r.id for r in behind.collect()] == [row.id]
    assert sorted(r.id for r in again.output.collect()) == [11, 20, 21]


def test_a_window_over_one_source_stores_each_pair_once(session, spark):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    events = session.source(
        spark.createDataFrame([(1, 10, "a"), (1, 20, "b"), (2, 5, "c"), (2, 6, "d")], ["id", "at", "v"]), "events"
    )
    latest = Window.partitionBy("id").orderBy(F.desc("at"))
    running = latest.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    df = events.withColumn("n", F.row_number().over(latest)).withColumn("seen", F.count("v").over(running))
    cap = session.capture(df, "windowed")
    # each row reaches itself by its own slot and by both frames, and "a" and "c" also
    # reach the row before them in their partition ("b", "d"): one pair each all the same
    pairs = [tuple(r) for r in spark.read.parquet(cap._entry.lineage.path).select("out_rid", "in_rid").collect()]
    assert len(pairs) == len(set(pairs)) == 4 + 2


def test_few_pairs_are_written_here_as_spark_lays_them_out(session, spark, tmp_path, monkeypatch):
    # a join under an aggregate, its groups resolved through side relations: few pairs
    # are collected and written by this process, a folder per source, sorted, distinct;
    # the same pairs as Spark's own write of them
    from pyspark.sql import functions as F

    from sparkprov.capture import writing

    rows = [(i, i % 7, float(i)) for i in range(300)]
    spark.createDataFrame(rows, "id long, k long, v double").write.parquet(str(tmp_path / "big"))
    spark.createDataFrame([(k, f"n{k % 3}") for k in range(7)], "k long, name string").write.parquet(
        str(tmp_path / "small")
    )

    def capture(name):
        big = session.source(spark.read.parquet(str(tmp_path / "big")), "big")
        small = session.source(spark.read.parquet(str(tmp_path / "small")), "small")
        query = big.join(small, "k").groupBy("name").agg(F.sum("v").alias("s"))
        return session.capture(query, name, strategy="logical")

    here = capture("here")
    folders = sorted(p.name for p in Path(here._entry.lineage.path).iterdir() if p.is_dir())
    assert folders == ["src=0", "src=1"]
    for folder in folders:
        (part,) = (Path(here._entry.lineage.path) / folder).glob("*.parquet")
        assert part.name == "part-0.parquet"  # this process's file, not Spark's
        table = pq.read_table(part).to_pylist()
        pairs = [(r["out_rid"], r["in_rid"]) for r in table]
        assert pairs == sorted(set(pairs))
    monkeypatch.setattr(writing, "small_rows", lambda df, **kw: None)
    spark_written = capture("spark")
    assert not list(Path(spark_written._entry.lineage.path).rglob("part-0.parquet"))
    by_name = {r.name: r._sp_rid for r in spark_written.output.collect()}
    for row in here.output.collect():
        for source in ("big", "small"):
            ours = sorted(r.id if source == "big" else r.k for r in here.backward([row._sp_rid])[source].collect())
            theirs = spark_written.backward([by_name[row.name]])[source].collect()
            assert ours == sorted(r.id if source == "big" else r.k for r in theirs)
    assert here.pairs("big").count() == spark_written.pairs("big").count() == 300
