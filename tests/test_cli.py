"""The command line: listing captures without Spark, and the demo's pipeline."""

from __future__ import annotations

import json
import subprocess
import sys

from sparkprov import demo

from .conftest import ROOT


def sparkprov_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparkprov.cli", *args], cwd=ROOT, capture_output=True, text=True)


def test_captures_lists_the_store_without_spark(session, spark, tmp_path):
    empty = sparkprov_cli("captures", "--store", str(tmp_path / "empty"))
    assert empty.returncode == 0 and "no captures" in empty.stdout
    session.capture(spark.range(3), name="three")
    listed = sparkprov_cli("captures", "--store", str(session.store.root), "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert entry["name"] == "three" and entry["version"] == 1 and entry["sources"] == ["range_0"]
    assert "SparkSession" not in listed.stderr


def test_bad_arguments_exit_nonzero(tmp_path):
    bad = sparkprov_cli("bench", "capture", "--repeat", "0", "--data", str(tmp_path))
    assert bad.returncode == 1 and "--repeat" in bad.stderr
    assert sparkprov_cli("nonsense").returncode == 2


def test_demo_pipeline_traces_the_top_error(spark, session, tmp_path):
    log = demo.write_log(tmp_path / "app.log", lines=300)
    lines, descriptions, report = demo.error_report(spark, log)
    session.source(lines, "log")
    session.source(descriptions, "descriptions")
    cap = session.capture(report, name="errors")
    assert set(cap.sources) == {"log", "descriptions"}
    top = cap.output.orderBy("count", ascending=False).first()
    traced = cap.backward([top["_sp_rid"]])
    log_lines = [r["value"] for r in traced["log"].collect()]
    assert len(log_lines) == top["count"]
    assert all(f" ERROR {top['code']} " in line for line in log_lines)
    assert [r["description"] for r in traced["descriptions"].collect()] == [top["description"]]
    expected = sum(1 for line in log.read_text().splitlines() if f" ERROR {top['code']} " in line)
    assert expected == top["count"]
