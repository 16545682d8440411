"""The capture benchmark runs end to end and reports what the issue asks for."""

from __future__ import annotations

from sparkprov.bench import capture


def test_bench_reports_ratios_and_storage(spark, tpch_dir):
    report = capture.run(spark, 0.01, [6], 2, str(tpch_dir.parent))
    (q6,) = report["queries"]
    assert q6["query"] == 6 and len(q6["plain_s"]) == len(q6["capture_s"]) == 2
    assert q6["median_ratio"] > 0 and q6["lineage_bytes"] > 0 and q6["input_bytes"] > 0
    # one global sum: one output row, one pair per qualifying lineitem, nothing shared
    assert q6["output_rows"] == 1 and q6["pairs"] > 0 and q6["shared_pairs"] == 0
    assert set(report) >= {"median_ratio", "max_ratio", "storage_ratio", "queries"}


def test_bench_compares_witnesses_in_the_same_run(spark, tpch_dir):
    report = capture.run(spark, 0.01, [6], 1, str(tpch_dir.parent), witnesses=True)
    (q6,) = report["queries"]
    assert report["witnesses"] and len(q6["without_witnesses_s"]) == len(q6["capture_s"]) == 1
    # the stored groups count as lineage: Q6's one group holds every qualifying lineitem
    assert 0 < q6["witness_bytes"] < q6["lineage_bytes"]
    assert q6["witness_cost_median_ratio"] > 0 and q6["without_witnesses_median_ratio"] > 0
