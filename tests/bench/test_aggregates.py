"""The aggregate benchmark times every variant and says where a range is exact."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from sparkprov.bench import aggregates


def test_every_variant_is_timed_against_the_plain_aggregate(spark, tpch_dir):
    report = aggregates.run(spark, 0.01, 2, str(tpch_dir.parent), names=["q18", "q1"])
    by = {r["workload"]: r for r in report["workloads"]}
    assert list(by) == ["q1", "q18"] and report["repeat"] == 2
    for r in by.values():
        assert set(r["seconds"]) == set(aggregates.VARIANTS)
        assert all(len(ts) == 2 and min(ts) > 0 for ts in r["seconds"].values())
        assert r["ratio"]["plain"] == 1.0 and all(x > 0 for x in r["ratio"].values())
    # lineitem is stored in order key order: every order's lines are consecutive rows;
    # Q1's four groups interleave over the whole table
    assert by["q18"]["dense_share"] == 1.0
    assert by["q1"]["dense_share"] == 0.0


def test_variants_keep_the_query_values_and_collect_what_they_say(spark, tpch_dir):
    rows = aggregates.lineitem_with_rids(spark, tpch_dir)
    plain = aggregates.aggregate(rows, "q6", "plain").first()
    kept = rows.where(aggregates.WORKLOADS["q6"][0]).select("__rid")
    rids = sorted(r[0] for r in kept.collect())
    array = aggregates.aggregate(rows, "q6", "rid_array").first()
    assert array[0] == plain[0] and sorted(array[1]) == rids
    longs = aggregates.aggregate(rows, "q6", "rid_longs").first()
    assert longs[0] == plain[0] and sorted(longs[1]) == rids
    assert aggregates.aggregate(rows, "q6", "no_rids").first()[1] == []
    ranged = aggregates.aggregate(rows, "q6", "rid_range").first()
    assert ranged[0] == plain[0] and tuple(ranged[1:]) == (rids[0], rids[-1], len(rids))
    # the rids are the row numbers capture gives lineitem's single file
    assert rows.agg(F.min("__rid"), F.max("__rid")).first() == (0, rows.count() - 1)


def test_unknown_workloads_are_named(spark, tpch_dir):
    with pytest.raises(ValueError, match=r"unknown aggregate workloads \['q2'\]"):
        aggregates.run(spark, 0.01, 1, str(tpch_dir.parent), names=["q2"])
