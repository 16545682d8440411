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
