"""The drill-down benchmark times capture with and without group_by and partition_by, and answers both ways."""

from __future__ import annotations

import pytest

from sparkprov.bench import drill_down


def test_capture_and_answers_are_timed_and_the_answers_agree(spark, tpch_dir):
    report = drill_down.run(spark, 0.01, 1, str(tpch_dir.parent), names=["q5"])
    (q5,) = report["workloads"]
    assert q5["workload"] == "q5" and q5["output_rows"] == 5 and report["repeat"] == 1
    assert all(len(ts) == 1 and ts[0] > 0 for ts in q5["seconds"].values())
    assert q5["capture_ratio"] > 0 and q5["group_by_ratio"] > 0 and q5["partition_by_ratio"] > 0
    assert q5["drill_down_ms"] > 0 and q5["backward_group_by_ms"] > 0
    assert q5["where_partitioned_ms"] > 0 and q5["where_filtered_ms"] > 0 and q5["where_embedded_ms"] > 0
    assert q5["answers_agree"] is True and q5["counts_agree"] is True


def test_unknown_workloads_are_named(spark, tpch_dir):
    with pytest.raises(ValueError, match=r"unknown drill-down workloads \['q99'\]; choose from q1, q5"):
        drill_down.run(spark, 0.01, 1, str(tpch_dir.parent), names=["q99"])
