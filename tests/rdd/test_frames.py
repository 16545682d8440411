"""Traces that cross between DataFrames and RDDs (rdd/frames.py): an RDD read from a
DataFrame, and a DataFrame made from an RDD, each traced end to end into the other
API's sources, with the rows a plain-Python reading of the program gives."""

from __future__ import annotations

from pyspark.sql import Row
from pyspark.sql import functions as F

import sparkprov as sp

PEOPLE = ["Michael, 29", "Andy, 30", "Justin, 19", "Ann, 16"]


def _rids(df) -> set[int]:
    return {r["_sp_rid"] for r in df.select("_sp_rid").collect()}


def test_rdd_from_dataframe_traces_into_the_dataframes_source(spark, session, tmp_path):
    src = tmp_path / "orders.json"
    src.write_text("\n".join(f'{{"id": {i}, "item": "{w}"}}' for i, w in enumerate(["a", "b", "a", "c", "b", "a"])))
    orders = session.source(spark.read.json(str(src)), "orders")
    df = orders.where("item != 'c'")
    plain = df.rdd.map(lambda r: (r.item, 1)).reduceByKey(lambda a, b: a + b).collect()

    rdd = session.rdd.from_dataframe(df, name="orders_kept")
    assert sorted(rdd.map(lambda r: r.id).collect(name="ids")) == [0, 1, 2, 4, 5]
    assert isinstance(rdd.take(1)[0], Row)
    counts = rdd.map(lambda r: (r.item, 1)).reduceByKey(lambda a, b: a + b)
    assert sorted(counts.collect(name="counts")) == sorted(plain)

    traced = counts.capture.backward("_1 = 'a'", end_to_end=True)
    assert list(traced) == ["orders_kept/orders"]
    assert sorted(r["id"] for r in traced["orders_kept/orders"].collect()) == [0, 2, 5]
    # without end_to_end the trace stops at the DataFrame's rows, read in place
    assert sorted(r["id"] for r in counts.capture.backward("_1 = 'a'", source="orders_kept").collect()) == [0, 2, 5]

    first = session.load("orders_kept").backward("id = 1", source="orders").select("_sp_rid")
    found = session.load("orders_kept").forward("orders", first, end_to_end=True)
    assert set(found) == {"orders_kept", "ids", "rdd-take", "counts"}  # every RDD action read it
    assert [r["value"] for r in found["ids"].collect()] == [1]
    assert [r["_1"] for r in found["counts"].collect()] == ["b"]


def test_dataframe_from_rdd_is_traced_into_the_text_lines(spark, session, tmp_path):
    path = tmp_path / "people.txt"
    path.write_text("\n".join(PEOPLE) + "\n")
    lc = session.rdd
    people = lc.textFile(str(path)).map(lambda s: s.split(",")).map(lambda p: Row(name=p[0], age=int(p[1])))
    df = people.toDF(name="people")
    expected = spark.createDataFrame(
        spark.sparkContext.textFile(str(path)).map(lambda s: s.split(",")).map(lambda p: Row(name=p[0], age=int(p[1])))
    )
    assert df.schema == expected.schema
    assert sorted(df.collect()) == sorted(expected.collect())

    teens = session.capture(df.where("age >= 13 AND age <= 19").select("name"), "teens")
    assert sorted(r.name for r in teens.output.collect()) == ["Ann", "Justin"]
    traced = teens.backward("name = 'Justin'", end_to_end=True)
    assert list(traced) == ["people/people.txt"]
    assert [r["value"] for r in traced["people/people.txt"].collect()] == ["Justin, 19"]

    line = people.capture.sources["people.txt"].rows().where("value = 'Andy, 30'").select("_sp_rid")
    after = people.capture.forward("people.txt", line, end_to_end=True)
    assert set(after) == {"people", "teens"}
    assert after["teens"].count() == 0 and [r["name"] for r in after["people"].collect()] == ["Andy"]


def test_create_dataframe_with_a_schema_and_atomic_values(spark, session):
    lc = session.rdd
    pairs = lc.parallelize([("x", "1"), ("y", "2")])
    df = lc.createDataFrame(pairs, "name string, n string", name="pairs")
    assert df.columns == ["name", "n"] and sorted(df.collect()) == [Row(name="x", n="1"), Row(name="y", n="2")]
    numbers = lc.createDataFrame(lc.parallelize([3, 1, 2]), "int", name="numbers")
    assert sorted(r.value for r in numbers.collect()) == [1, 2, 3]
    cap = session.capture(numbers.agg(F.sum("value").alias("s")), "total")
    traced = cap.backward([0], end_to_end=True)
    assert sorted(r["value"] for r in traced["numbers/parallelize_1"].collect()) == [1, 2, 3]


def test_bad_arguments_are_refused(spark, session):
    lc = session.rdd
    import pytest

    with pytest.raises(ValueError, match="DataFrame"):
        lc.from_dataframe([1, 2])
    with pytest.raises(ValueError, match="LineageRDD"):
        lc.createDataFrame(spark.sparkContext.parallelize([1]))
    assert isinstance(sp.LineageContext(spark.sparkContext, store=session.store.root), sp.LineageContext)


def test_a_dataframe_from_an_rdd_keeps_the_rdds_order(spark, session):
    # later partitions hold larger records, so their files are larger: Spark reads those first
    data = [(i, "x" * (i * 40)) for i in range(9)]
    plain = spark.createDataFrame(spark.sparkContext.parallelize(data, 3), ["n", "s"])
    traced = session.rdd.createDataFrame(session.rdd.parallelize(data, 3), ["n", "s"], name="ordered")
    assert traced.columns == ["n", "s"]
    assert [tuple(r) for r in traced.collect()] == [tuple(r) for r in plain.collect()] == data
    cap = session.capture(traced.where("n > 6"), name="late")
    back = cap.backward(cap.output, end_to_end=True)
    assert sorted(r["_1"] for r in back["ordered/parallelize_0"].collect()) == [7, 8]
