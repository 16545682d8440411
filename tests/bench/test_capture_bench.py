"""The capture benchmark runs end to end and reports what the issue asks for."""

from __future__ import annotations

import pytest

from sparkprov.bench import capture


def test_bench_reports_ratios_and_storage(spark, tpch_dir):
    report = capture.run(spark, 0.01, [6], 2, str(tpch_dir.parent))
    (q6,) = report["queries"]
    assert q6["query"] == 6 and len(q6["plain_s"]) == len(q6["capture_s"]) == 2
    assert q6["median_ratio"] > 0 and q6["lineage_bytes"] > 0 and q6["input_bytes"] > 0
    # one global sum: one output row, one pair per qualifying lineitem, nothing shared
    assert q6["output_rows"] == 1 and q6["pairs"] > 0 and q6["shared_pairs"] == 0
    assert set(report) >= {"median_ratio", "max_ratio", "storage_ratio", "queries"}
    # the executors' side of each pair: run, CPU and GC seconds of the tasks it ran
    assert len(q6["plain_task_s"]) == len(q6["capture_task_s"]) == 2
    # GC time is not bounded by run time: it is the JVM's, counted in every task running
    # through a pause and from before deserialization, which run time leaves out
    assert all(run > 0 and cpu > 0 and gc >= 0 for run, cpu, gc in q6["plain_task_s"] + q6["capture_task_s"])
    assert q6["task_median_ratio"] > 0 and q6["cpu_median_ratio"] > 0
    # each kind ran once before the timed pairs, outside them
    assert q6["warm_up"]["plain_s"] > 0 and q6["warm_up"]["capture_s"] > 0
    assert report["task_median_ratio"] == q6["task_median_ratio"]
    assert "check_s" not in q6 and "check_median_ratio" not in report  # lazy's alone


def test_bench_reports_the_lazy_check_beside_the_query(spark, tpch_dir):
    report = capture.run(spark, 0.01, [6], 2, str(tpch_dir.parent), strategy="lazy")
    (q6,) = report["queries"]
    # each pair's check (the plan optimized and walked, beside the query), within its capture
    assert len(q6["check_s"]) == 2 and all(0 < c < t for c, t in zip(q6["check_s"], q6["capture_s"]))
    assert q6["check_median_ratio"] > 0 and report["check_median_ratio"] == q6["check_median_ratio"]


def test_bench_compares_witnesses_in_the_same_run(spark, tpch_dir):
    report = capture.run(spark, 0.01, [6], 1, str(tpch_dir.parent), witnesses=True)
    (q6,) = report["queries"]
    assert report["witnesses"] and len(q6["without_witnesses_s"]) == len(q6["capture_s"]) == 1
    # the stored groups count as lineage: Q6's one group holds every qualifying lineitem
    assert 0 < q6["witness_bytes"] < q6["lineage_bytes"]
    assert q6["witness_cost_median_ratio"] > 0 and q6["without_witnesses_median_ratio"] > 0


def test_bench_writes_each_captures_output_for_the_user_when_asked(spark, tpch_dir, monkeypatch, capsys):
    import sparkprov as sp
    from sparkprov.cli import main

    paths, original = [], sp.LineageSession.capture

    def kept(self, df, name, **kw):
        paths.append(kw.get("path"))
        cap = original(self, df, name, **kw)
        if kw.get("path"):  # written where asked, as the plain run writes it
            assert spark.read.parquet(kw["path"]).count() == cap.output.count() == 1
        return cap

    monkeypatch.setattr(sp.LineageSession, "capture", kept)
    report = capture.run(spark, 0.01, [6], 2, str(tpch_dir.parent), write=True)
    assert report["write"] and report["queries"][0]["status"] == "pass"
    assert len(paths) == 3 and None not in paths and len(set(paths)) == 3  # the warm-up and two pairs
    paths.clear()
    capture.run(spark, 0.01, [6], 1, str(tpch_dir.parent))
    assert paths == [None, None]
    for suite in ("micro", "titian"):  # said before anything runs
        assert main(["bench", "capture", "--suite", suite, "--write"]) == 1
        assert "--write applies to the tpch, tpcds and pipelines suites, not " + suite in capsys.readouterr().err


def test_bench_reports_each_operators_strategy_and_the_output_alone(spark, tpch_dir):
    report = capture.run(spark, 0.01, [3], 1, str(tpch_dir.parent), strategy="logical")
    (q3,) = report["queries"]
    assert report["strategy"] == "logical"
    strategies = dict(q3["strategies"])
    assert [s for op, s in strategies.items() if op.startswith("Aggregate")] == ["group"]
    # the output was written before lineage was resolved: the capture's own timings
    assert 0 < q3["output_median_ratio"] < q3["median_ratio"]
    assert q3["timings"]["lineage_s"] > 0 and q3["slot_bytes"] > 0


def test_micro_suite_generates_its_tables_and_compares_each_workload(spark, tmp_path):
    from sparkprov.bench import micro

    report = capture.run_micro(spark, 2000, 1, str(tmp_path), names=["groupby_t1_g100", "mn", "select_10"])
    by = {r["query"]: r for r in report["queries"]}
    assert set(by) == {"groupby_t1_g100", "mn", "select_10"} and report["suite"] == "micro"
    # one pair per input row of the group-by; the selection keeps about a tenth
    assert by["groupby_t1_g100"]["pairs"] == 2000
    assert 100 < by["select_10"]["output_rows"] < 300
    # an m:n join row has one rid from each side
    assert by["mn"]["pairs"] == 2 * by["mn"]["output_rows"] > 0
    # Zipf skew 1: the first value is the most frequent
    counts = micro.bounded_zipf(10_000, 1.0, 100, seed=3).tolist()
    assert max(range(100), key=counts.count) == 0
    with pytest.raises(ValueError, match="unknown micro workloads"):
        capture.run_micro(spark, 2000, 1, str(tmp_path), names=["nope"])


def test_workload_arguments_keep_the_sources_a_query_reads_with_their_predicates():
    where = capture._where_args(["lineitem: l_tax < 0.02"], ["lineitem", "orders"])
    assert where == {"lineitem": "l_tax < 0.02"}
    keep = (["lineitem", "orders"], where)
    assert capture._workload("select * from lineitem", keep) == {
        "sources": ["lineitem"],
        "where": {"lineitem": "l_tax < 0.02"},
    }
    assert capture._workload("select * from orders", keep) == {"sources": ["orders"], "where": {}}
    assert capture._workload("select * from part", keep) is None
    for bad, message in [(["l_tax < 0.02"], "takes source:predicate"), (["part:p_size > 1"], "does not list")]:
        with pytest.raises(SystemExit, match=message):
            capture._where_args(bad, ["lineitem"])


def test_tpcds_suite_measures_its_files_with_the_suites_settings(spark, tpcds_dir):
    before = spark.conf.get("spark.sql.ansi.enabled")
    report = capture.run_tpcds(spark, 0.01, ["q3"], 1, str(tpcds_dir.parent))
    (q3,) = report["queries"]
    assert report["suite"] == "tpcds" and q3["query"] == "q3" and q3["status"] == "pass"
    assert q3["median_ratio"] > 0 and q3["pairs"] > 0 and q3["input_bytes"] > 0
    assert report["pass"] == 1 and report["fail"] == report["timeout"] == report["unsupported"] == 0
    assert report["median_ratio"] == q3["median_ratio"]
    assert spark.conf.get("spark.sql.ansi.enabled") == before  # the suite's setting, for its queries only
    with pytest.raises(ValueError, match="TPC-DS has no files q100"):
        capture.run_tpcds(spark, 0.01, ["q3", "q100"], 1, str(tpcds_dir.parent))


def test_a_file_whose_answer_repeats_a_column_name_is_measured(spark, tpcds_dir):
    # q39a's answer has two "cov" columns, which Parquet refuses: the plain run writes
    # them under the names the capture stores them with
    report = capture.run_tpcds(spark, 0.01, ["q39a"], 1, str(tpcds_dir.parent))
    (q39a,) = report["queries"]
    assert q39a["status"] == "pass", q39a.get("reason")
    assert q39a["median_ratio"] > 0 and q39a["pairs"] > 0


def test_a_query_that_fails_or_outlasts_its_time_is_reported_and_the_suite_goes_on(spark):
    from pyspark.sql import functions as F

    @F.udf("long")
    def slow(x):
        import time

        time.sleep(30)
        return x

    spark.udf.register("sp_bench_slow", slow)
    spark.range(4).repartition(4).createOrReplaceTempView("sp_bench_four")
    workloads = [
        ("missing", "SELECT nope FROM no_such_table"),
        ("slow", "SELECT sp_bench_slow(id) AS v FROM sp_bench_four"),
        ("quick", "SELECT id FROM sp_bench_four WHERE id > 1"),
    ]
    results = {r["query"]: r for r in capture.compare(spark, workloads, 1, False, "auto", timeout=8.0)}
    assert results["missing"]["status"] == "fail" and "no_such_table" in results["missing"]["reason"]
    slow_one = results["slow"]
    assert slow_one["status"] == "timeout" and "longer than 8 s" in slow_one["reason"]
    assert slow_one["seconds"] < 30  # cancelled, not waited for (a minute: four rows of 30 s on two cores)
    assert results["quick"]["status"] == "pass" and results["quick"]["pairs"] == 2
    summary = capture.summarize(list(results.values()))
    assert (summary["pass"], summary["fail"], summary["timeout"]) == (1, 1, 1)
    assert summary["median_ratio"] == results["quick"]["median_ratio"]


def test_pipelines_suite_measures_the_pipelines_asked_for(spark, tmp_path):
    report = capture.run_pipelines(spark, 500, 1, str(tmp_path), names=["dedup_events"])
    (dedup,) = report["queries"]
    assert report["suite"] == "pipelines" and dedup["query"] == "dedup_events" and dedup["status"] == "pass"
    # the latest delivery of each event is kept; row_number 1 reads that row alone
    delivered = spark.read.parquet(str(tmp_path / "rows500" / "events.parquet")).count()
    assert dedup["pairs"] == dedup["output_rows"] < delivered and report["median_ratio"] == dedup["median_ratio"]
    with pytest.raises(ValueError, match="unknown pipelines"):
        capture.run_pipelines(spark, 500, 1, str(tmp_path), names=["nope"])
