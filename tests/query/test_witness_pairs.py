"""Pair tables made from kept witnesses by joins in this process (query/witness_pairs.py)
are those Spark resolves at capture without witnesses."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch
from sparkprov.sources.identity import RID
from sparkprov.store.format import resolvable_by_joins


def _pairs(cap: sp.Capture) -> dict[str, list[tuple]]:
    # (output row's position in the query's order, input rid) per source: rids name
    # output rows only within one capture
    position = {r[RID]: i for i, r in enumerate(cap.output.select(RID).collect())}
    return {
        s: sorted((position[out], *rest) for out, *rest in cap.pairs(s).collect()) for s in cap._entry.lineage.sources
    }


# Q3: an aggregate over joins; Q13: an aggregate over an aggregate over an outer join;
# Q18: nested aggregates under a semi join; Q22: a scalar subquery (a shared side)
@pytest.mark.parametrize("n", [3, 13, 18, 22])
def test_witnesses_give_the_pairs_spark_resolves(spark, tpch_dir, tmp_path, n):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    plain = session.capture(spark.sql(tpch.query(n)), "plain")
    witnessed = session.capture(spark.sql(tpch.query(n)), "witnessed", witnesses=True)
    assert resolvable_by_joins(witnessed._entry.witnesses)
    if n == 22:  # a shared side's lineage is kept once, at capture, not in every row's pairs
        assert witnessed._entry.lineage.later is None and witnessed._entry.lineage.shared
    else:  # left to the witnesses: nothing made until an answer needs it
        assert witnessed._entry.lineage.later == "witnesses"
        assert not Path(witnessed._entry.lineage.path).exists()
    expected = _pairs(plain)
    assert sum(len(p) for p in expected.values()) > 0
    assert _pairs(witnessed) == expected
    assert Path(witnessed._entry.lineage.path).is_dir()


def test_witnesses_left_to_make_pairs_are_made_in_a_process_without_spark(spark, tpch_dir, tmp_path):
    from sparkprov.query import provenance
    from sparkprov.store.catalog import Store

    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    plain = session.capture(spark.sql(tpch.query(22)), "plain")
    deferred = session.capture(spark.sql(tpch.query(22)), "deferred", witnesses=True, strategy="defer")
    entry = Store(tmp_path / "store").load("deferred")
    provenance.write_pairs(entry)  # by joins; the shared side's rows in every row's pairs
    assert _pairs(deferred) == _pairs(plain)


def test_a_windows_ranges_are_read_as_polynomials(spark, session):
    # a window's slots name ranges of positions: no join on a handle resolves them
    nums = session.source(spark.createDataFrame([(1, 5), (1, 7), (2, 1)], ["g", "v"]), "nums")
    w = Window.partitionBy("g").orderBy("v").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    q = nums.withColumn("run", F.sum("v").over(w))
    cap = session.capture(q, "running", witnesses=True)
    assert not resolvable_by_joins(cap._entry.witnesses)
    assert sorted(r.v for r in cap.backward("run = 12", "nums").collect()) == [5, 7]
    assert _pairs(cap) == _pairs(session.capture(q, "running-plain"))
