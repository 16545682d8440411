"""The trace benchmark runs end to end and reports what the issue asks for."""

from __future__ import annotations

from sparkprov.bench import trace


def test_bench_trace_reports_latencies(spark, tpch_dir, tmp_path):
    report = trace.run(0.01, [6, 22], 4, str(tpch_dir.parent), str(tmp_path / "store"), spark_samples=1)
    fields = {"backward_p50_ms", "backward_p95_ms", "forward_p50_ms", "forward_p95_ms", "fetch1000_p50_ms"}
    assert fields <= set(report)
    q6, q22 = report["queries"]
    assert q6["engine"] == q22["engine"] == "embedded"
    # Q6 is one global sum: its one output row's lineage is every qualifying lineitem row
    assert q6["output_rows"] == 1 and q6["max_lineage_rows"] > 1000
    assert report["answers"]["fetch1000"] >= 1 and report["fetch1000_p50_ms"] > 0
    assert report["answers"]["backward"] == 1 + min(4, q22["output_rows"]) and report["answers"]["forward"] == 8
    assert report["largest_lineage_rows"] == q6["max_lineage_rows"]
    assert report["spark_backward_p50_ms"] > 0
    # captures are kept in the store and reused
    again = trace.run(0.01, [6], 1, str(tpch_dir.parent), str(tmp_path / "store"), spark_samples=0)
    assert again["queries"][0]["max_lineage_rows"] == q6["max_lineage_rows"]


def test_bench_trace_times_why_and_how(spark, tpch_dir, tmp_path):
    report = trace.run(0.01, [4, 6], 3, str(tpch_dir.parent), str(tmp_path / "store"), spark_samples=0, witnesses=True)
    q4, q6 = report["queries"]
    assert report["how_p50_ms"] > 0 and report["how_refused"] == 0
    # Q6's one sum needs all its rows: one witness. Q4 counts orders that have some
    # late lineitem: one witness per choice of a lineitem for every order, too many
    assert q6["why_p50_ms"] > 0 and q6["why_refused"] == 0
    assert q4["why_refused"] == 3 and q4["why_p50_ms"] is None
    assert report["why_refused"] == 3


def test_bench_trace_chain_compares_answers_here_with_spark(spark, tpch_dir):
    from sparkprov.bench import trace_chain

    report = trace_chain.run(0.01, 2, str(tpch_dir.parent))
    assert report["report_rows"] > 0 and report["orders_kept"] > 1000 and report["answers_differ"] == 0
    for kind in ("backward", "forward", "output"):
        assert report[f"{kind}_p50_ms"] > 0 and report[f"spark_{kind}_p50_ms"] > 0
        assert report[f"{kind}_ratio"] == trace_chain.ratio(report[f"spark_{kind}_p50_ms"], report[f"{kind}_p50_ms"])
