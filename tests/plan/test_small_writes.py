"""Small rows written through Arrow read back as Spark wrote them; anything the rules
do not cover is left to Spark."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from sparkprov.plan import small_writes
from sparkprov.plan.small_writes import small_rows, write_parquet
from sparkprov.plan.written import read_written
from sparkprov.store.files import parquet_files

_SCHEMA = (
    "b boolean, y byte, h short, i int, l long, f float, d double, s string, bin binary, day date, "
    "ts timestamp, ntz timestamp_ntz, dec decimal(20,4), small decimal(9,2), arr array<int>, "
    "m map<string, double>, st struct<a: string, n: array<struct<x: long>>>"
)
_ROWS = [
    (True, 1, 2, 3, 4, 1.5, 2.25, "é", b"\x00\x01", dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 6),
     dt.datetime(2024, 1, 2, 3, 4, 5), Decimal("12345678901234.5678"), Decimal("1234567.89"), [1, None, 3],
     {"k": 1.0}, ("a", [(1,), (2,)])),
    (None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
]  # fmt: skip


def test_every_type_reads_back_as_spark_wrote_it(spark, tmp_path):
    # read from files: rows made in Python have no size estimate, and go to Spark
    spark.createDataFrame(_ROWS, _SCHEMA).write.parquet(str(tmp_path / "in"))
    df = spark.read.parquet(str(tmp_path / "in"))
    assert write_parquet(df, tmp_path / "arrow") == "arrow"
    df.write.parquet(str(tmp_path / "spark"))
    ours, theirs = read_written(spark, tmp_path / "arrow"), read_written(spark, tmp_path / "spark")
    assert ours.schema == theirs.schema  # from the footer, as Spark's files keep it
    assert sorted(ours.collect(), key=str) == sorted(theirs.collect(), key=str) == sorted(df.collect(), key=str)
    assert len(parquet_files(tmp_path / "arrow")) == 1


def test_a_null_struct_with_fields_that_cannot_be_null(spark, tmp_path):
    # an outer join's missing side: the struct is null, its non-nullable field too
    left = spark.range(2).select((F.col("id") + 1).alias("k"))
    right = spark.range(1).select(F.col("id").alias("k"), F.struct(F.lit("x"), F.col("id")).alias("slot"))
    df = left.join(right, "k", "left")
    assert write_parquet(df, tmp_path / "t") == "arrow"
    assert sorted(read_written(spark, tmp_path / "t").collect()) == sorted(df.collect())


def test_rows_made_in_python_are_collected_while_few(spark, monkeypatch):
    # Catalyst cannot size them: a prefix is collected, and kept if it holds them all
    made = spark.createDataFrame([(i, f"r{i}") for i in range(5)], "x long, s string")
    assert small_rows(made).to_pylist() == [{"x": i, "s": f"r{i}"} for i in range(5)]
    monkeypatch.setattr(small_writes, "SMALL_ROWS", 4)
    assert small_rows(made) is None  # five rows: more than a prefix of four and one
    assert small_rows(made, limit=10) is None  # few, but more bytes than the limit
    monkeypatch.setattr(small_writes, "SMALL_ROWS", 5)
    assert small_rows(made).num_rows == 5


def test_rows_of_a_shuffled_rdd_are_left_to_spark(spark):
    pairs = spark.sparkContext.parallelize([(i % 2, i) for i in range(6)], 2)
    assert small_rows(pairs.toDF(["k", "v"])).num_rows == 6  # no shuffle: a collection the driver sent
    # a prefix of a shuffled RDD's rows costs its whole map stage: not tried
    assert small_rows(pairs.reduceByKey(lambda a, b: a + b).toDF(["k", "v"])) is None


def test_a_join_of_small_inputs_is_tried_when_asked(spark, tmp_path, monkeypatch):
    # a join's estimate multiplies its inputs' sizes; lineage's own joins over small
    # files are collected up to a prefix all the same, when asked
    for name, n in (("a", 50), ("b", 5)):
        spark.range(n).selectExpr("id % 5 AS k", "id AS v").write.parquet(str(tmp_path / name))
    a, b = (spark.read.parquet(str(tmp_path / name)) for name in ("a", "b"))
    joined = a.join(b.withColumnRenamed("v", "w"), "k")
    monkeypatch.setattr(small_writes, "SMALL_BYTES", 20_000)  # more than the files, less than their product
    assert small_rows(joined) is None
    assert small_rows(joined, small_inputs=True).num_rows == 50
    monkeypatch.setattr(small_writes, "SMALL_ROWS", 49)  # more rows than a prefix holds
    assert small_rows(joined, small_inputs=True) is None
    monkeypatch.setattr(small_writes, "SMALL_ROWS", 100)
    monkeypatch.setattr(small_writes, "SMALL_BYTES", 1_000)  # inputs larger than small: not tried
    ran = []
    monkeypatch.setattr(small_writes, "_collected", lambda *args: ran.append(args))
    assert small_rows(joined, small_inputs=True) is None and ran == []


def test_what_is_left_to_spark(spark, tmp_path):
    small = spark.range(5)
    assert small_rows(small, limit=0) is None  # estimated larger than the limit
    assert small_rows(small.select(F.explode(F.array("id", "id")))) is None  # a generator's rows are no bound
    assert small_rows(small.select(F.make_dt_interval(F.lit(1)).alias("iv"))) is None  # a type Arrow changes
    wide = small.select(F.explode(F.array("id", "id")).alias("id"))
    assert write_parquet(wide, tmp_path / "w") == "spark"
    assert sorted(r.id for r in read_written(spark, tmp_path / "w").collect()) == sorted([0, 1, 2, 3, 4] * 2)


def test_the_file_appears_whole(spark, tmp_path):
    write_parquet(spark.range(3), tmp_path / "t")
    names = [p.name for p in (tmp_path / "t").iterdir()]
    assert len(names) == 1 and names[0].startswith("part-00000-") and names[0].endswith(".parquet")
    assert pq.read_table(tmp_path / "t" / names[0]).num_rows == 3


@pytest.mark.parametrize("limit", [0, None], ids=["spark", "arrow"])
def test_rows_of_large_arrays_make_bounded_row_groups(spark, tmp_path, limit, monkeypatch):
    # Parquet's defaults made a hundred rows of a million rids one 400 MB row group,
    # which its reader holds whole; here 40 rows of 50,000 rids (16 MB) and 1 MB groups
    if limit is not None:
        monkeypatch.setattr(small_writes, "SMALL_BYTES", limit)
    monkeypatch.setattr(small_writes, "ROW_GROUP_BYTES", 1 << 20)
    arrays = spark.range(40).selectExpr("id", "transform(sequence(1, 50000), x -> x * 7919 % 100003) AS rids")
    assert write_parquet(arrays.coalesce(1), tmp_path / "a") == ("spark" if limit == 0 else "arrow")
    (file,) = parquet_files(tmp_path / "a")
    meta = pq.ParquetFile(file).metadata
    held = [
        sum(g.column(c).total_compressed_size for c in range(g.num_columns))
        for g in map(meta.row_group, range(meta.num_row_groups))
    ]
    assert len(held) >= 8 and max(held) < 3 << 20, held
    assert read_written(spark, tmp_path / "a").selectExpr("sum(size(rids))").first()[0] == 2_000_000


def test_rid_arrays_are_written_without_a_dictionary(spark, tmp_path):
    # rids rarely repeat: a dictionary only costs its building; the keys beside keep theirs
    rows = spark.range(30).selectExpr(
        "named_struct('g', CAST(id % 3 AS STRING), 'n', id) AS h", "sequence(id * 100, id * 100 + 99) AS rids"
    )
    assert write_parquet(rows.coalesce(1), tmp_path / "r") == "arrow"
    (file,) = parquet_files(tmp_path / "r")
    group = pq.ParquetFile(file).metadata.row_group(0)
    encodings = {group.column(c).path_in_schema: group.column(c).encodings for c in range(group.num_columns)}
    assert "RLE_DICTIONARY" not in encodings["rids.list.element"], encodings
    assert "RLE_DICTIONARY" in encodings["h.g"], encodings
    back = read_written(spark, tmp_path / "r").orderBy(F.col("h.n"))
    assert [(r.h.g, r.rids[-1]) for r in back.collect()] == [(str(i % 3), i * 100 + 99) for i in range(30)]


def test_partitions_read_back_as_the_partitions_written(spark, tmp_path):
    # a function over batches or an order-sensitive aggregate above a snapshot sees its
    # rows as the query over the original did: the same partitions, in the same order,
    # though Spark reads a folder's files largest first
    # Spark packs small files into as many partitions as it has cores: as many here
    slices = spark.sparkContext.defaultParallelism
    rows = [(i, "x" * 20 * i) for i in range(6 * slices)]  # later partitions' files would be larger
    made = spark.sparkContext.parallelize(rows, slices).toDF("k long, s string")
    where = [(r.k, r.p) for r in made.select("k", F.spark_partition_id().alias("p")).collect()]
    table = small_rows(made, partitions=True)
    assert table.column(small_writes.PARTITION).to_pylist() == [p for _, p in where]
    small_writes.write_table(table, made.schema, tmp_path / "t")
    files = sorted(parquet_files(tmp_path / "t"))
    assert len(files) == len({p for _, p in where})  # a file for each partition that holds rows
    sizes = [os.path.getsize(f) for f in files]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
    back = read_written(spark, tmp_path / "t")
    assert back.columns == ["k", "s"]
    got = [(r.k, r.p) for r in back.select("k", F.spark_partition_id().alias("p")).collect()]
    assert [k for k, _ in got] == [k for k, _ in where]
    assert _renumbered(got) == _renumbered(where)  # the same rows together, in the same order


def _renumbered(where):
    seen = {}
    return [seen.setdefault(p, len(seen)) for _, p in where]


def test_no_partition_with_rows_writes_one_empty_file(spark, tmp_path):
    empty = spark.createDataFrame([], "k long")
    table = small_rows(empty, partitions=True)
    small_writes.write_table(table, empty.schema, tmp_path / "t")
    assert len(parquet_files(tmp_path / "t")) == 1
    assert read_written(spark, tmp_path / "t").count() == 0


def test_a_joins_rows_are_counted_through_it(spark, tmp_path):
    # Catalyst multiplies a join's inputs' sizes in bytes; counted in rows, a join of
    # 480 observations with a one-row request is small, a join of them with themselves not
    spark.range(480).selectExpr("id", "CAST(id AS DOUBLE) AS a", "CAST(id * 2 AS DOUBLE) AS b").write.parquet(
        str(tmp_path / "obs")
    )
    spark.range(1).selectExpr("id AS k", "'month' AS s").write.parquet(str(tmp_path / "request"))
    obs, request = (spark.read.parquet(str(tmp_path / n)) for n in ("obs", "request"))
    chosen = obs.crossJoin(request).where("a >= k")
    assert small_writes.estimated_bytes(chosen) > 1 << 20
    assert small_rows(chosen, limit=1 << 20).num_rows == 480
    itself = obs.crossJoin(obs.toDF("i", "a2", "b2"))  # 230,400 rows of 56 bytes
    assert small_rows(itself, limit=1 << 20) is None
    assert small_rows(obs.join(request, obs.id == request.k, "left_semi"), limit=1 << 20).num_rows == 1
    # a Python function's node (in the optimized plans capture runs) keeps its input's rows
    priced = chosen.select("id", F.udf(lambda a: int(a) * 2, "long")("a").alias("price"))
    optimized = priced._jdf.queryExecution().optimizedPlan()
    assert "EvalPython" in optimized.treeString()  # BatchEvalPython, or ArrowEvalPython as 4.x runs it
    assert small_writes.small_plan(optimized, priced.schema, 1 << 20, spark)
