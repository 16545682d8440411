"""Workload-aware capture: lineage kept only for the sources a declared workload names."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch

from .test_rewrite import lineage_by_output


@pytest.fixture
def joined(spark, session):
    left = session.source(spark.createDataFrame([(0, "a"), (1, "a"), (2, "b")], "k int, g string"), "l")
    right = session.source(spark.createDataFrame([(10, "a"), (11, "b"), (12, "b")], "k int, g string"), "r")
    right = right.select(F.col("k").alias("rk"), F.col("g").alias("rg"))
    return left.join(right, left["g"] == right["rg"]).groupBy("g").agg(F.count("*").alias("n"))


@pytest.mark.parametrize("strategy", ["auto", "logical", "lazy"])
def test_only_the_workload_sources_keep_lineage(session, joined, strategy):
    full = lineage_by_output(session.capture(joined, f"full_{strategy}", strategy=strategy))
    cap = session.capture(joined, f"left_{strategy}", strategy=strategy, workload={"sources": ["l"]})
    assert list(cap.sources) == ["l"]
    # each output row's lineage is the full lineage's rows of l, no more and no fewer
    assert lineage_by_output(cap) == {row: {(s, k) for s, k in found if s == "l"} for row, found in full.items()}
    assert "source r: no lineage kept (not among the workload's sources)" in cap.explain()
    for trace in (lambda: cap.backward([0], source="r"), lambda: cap.forward("r", [0])):
        with pytest.raises(ValueError, match="kept no lineage for source 'r': its workload named only l"):
            trace()


def test_a_bad_workload_is_refused(session, joined):
    with pytest.raises(ValueError, match=r"names source\(s\) \['orders'\] the query does not read; it reads"):
        session.capture(joined, "unknown", workload=sp.Workload(sources=["orders"]))
    for bad, message in [
        ({"source": ["l"]}, "unknown workload field"),
        ({"sources": "l"}, "must be a list of source names"),
        ({"sources": []}, "non-empty list"),
        (["l"], "workload must be a Workload or a dict"),
    ]:
        with pytest.raises(ValueError, match=message):
            session.capture(joined, "bad", workload=bad)


def test_a_tpch_join_keeps_the_lineitem_pairs_alone(spark, tpch_dir, tmp_path):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    full = session.capture(spark.sql(tpch.query(9)), "q9")
    kept = session.capture(spark.sql(tpch.query(9)), "q9_lineitem", workload={"sources": ["lineitem"]})
    assert list(kept.sources) == ["lineitem"] and len(full.sources) == 6
    pairs = sorted(tuple(r) for r in kept.pairs("lineitem").collect())
    assert pairs and pairs == sorted(tuple(r) for r in full.pairs("lineitem").collect())
