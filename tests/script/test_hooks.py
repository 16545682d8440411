"""``sparkprov run`` on a script that mixes traced and untraced work: the script's
output is unchanged, every action is a capture or a failed capture with its reason,
and the captures trace to the lines a plain-Python reading gives."""

from __future__ import annotations

import pytest

import sparkprov as sp
from sparkprov.cli import main

from .running import run_plain, run_traced

SCRIPT = """
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext
lines = sc.textFile(sys.argv[1])
pairs = lines.map(lambda s: (s.split()[0], 1))
print(sorted(pairs.reduceByKey(lambda a, b: a + b).collect()))
print(lines.zipWithIndex().map(lambda p: p[1]).count())
print(sc.range(3).sum())
df = spark.createDataFrame(pairs, ["level", "n"])
print(df.groupBy("level").count().orderBy("level").collect())
df.where("level = 'ERROR'").write.parquet(sys.argv[2])
print(lines.first())
spark.stop()
"""
LOG = ["ERROR disk", "INFO start", "ERROR net", "WARN slow"]


def test_every_action_is_a_capture_or_a_failure_with_its_reason(kept_session, tmp_path, capsys, monkeypatch):
    script = tmp_path / "mixed.py"
    script.write_text(SCRIPT)
    (tmp_path / "log.txt").write_text("\n".join(LOG) + "\n")
    plain = run_plain(script, [str(tmp_path / "log.txt"), str(tmp_path / "plain.parquet")])
    monkeypatch.chdir(tmp_path)  # the script named by a relative path, as users type it: lines still named
    traced = run_traced("mixed.py", [str(tmp_path / "log.txt"), str(tmp_path / "traced.parquet")], tmp_path / "store")
    assert traced == plain
    assert "[('ERROR', 2), ('INFO', 1), ('WARN', 1)]" in plain
    report = capsys.readouterr().err
    assert "5 captures made, 2 failed" in report

    store = sp.LineageSession(kept_session, store=tmp_path / "store")
    assert store.captures() == [
        "mixed.collect.L13",
        "mixed.collect.L9",
        "mixed.count.L10",
        "mixed.createDataFrame.L12",
        "mixed.first.L15",
        "mixed.sum.L11",
        "mixed.write.L14",
    ]
    assert main(["captures", "--store", str(tmp_path / "store")]) == 0
    listed = capsys.readouterr().out
    assert "mixed.count.L10 v1 failed: RDD.zipWithIndex is not traced by sparkprov" in listed
    assert any(line.split()[:2] == ["mixed.count.L10", "v1"] and "FAILED" in line for line in listed.splitlines())
    with pytest.raises(sp.CaptureFailed, match="RDD.zipWithIndex is not traced"):
        store.load("mixed.count.L10")
    with pytest.raises(sp.CaptureFailed, match="sc.range is not traced"):
        store.load("mixed.sum.L11")

    counts = store.load("mixed.collect.L9")
    assert sorted(r.value for r in counts.backward("_1 = 'ERROR'", source="log.txt").collect()) == [
        "ERROR disk",
        "ERROR net",
    ]
    grouped = store.load("mixed.collect.L13").backward("level = 'ERROR'", end_to_end=True)
    assert list(grouped) == ["mixed.createDataFrame.L12/log.txt"]
    assert sorted(r.value for r in grouped["mixed.createDataFrame.L12/log.txt"].collect()) == [
        "ERROR disk",
        "ERROR net",
    ]
    written = store.load("mixed.write.L14")
    assert written.output.count() == 2
    assert [r.value for r in store.load("mixed.first.L15").backward([0], source="log.txt").collect()] == [LOG[0]]


def test_the_command_line_runs_a_script_and_keeps_its_exit_status(kept_session, tmp_path, capsys):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\nsys.exit(3)\n")
    assert main(["run", "--store", str(tmp_path / "s"), str(script), "a", "--b"]) == 3
    captured = capsys.readouterr()
    assert captured.out == "args ['a', '--b']\n"
    assert "the script ran no action" in captured.err
    broken = tmp_path / "broken.py"
    broken.write_text("print('before')\nraise ValueError('boom')\n")
    assert main(["run", "--store", str(tmp_path / "s"), str(broken)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "before\n"
    assert "Traceback" in captured.err and "ValueError: boom" in captured.err
    assert main(["run", str(tmp_path / "missing.py")]) == 1
    assert "no such script" in capsys.readouterr().err
    assert main(["captures", "--store", str(tmp_path / "s")]) == 0
