"""``sparkprov bench functions``: every strategy measured, answering as the black box does."""

from __future__ import annotations

import json

from sparkprov.cli import main


def test_micro_suite_reports_every_strategy(tmp_path, capsys):
    out = tmp_path / "fn.json"
    args = ["bench", "functions", "--size", "60", "--fanin", "2,5", "--fanout", "3", "--repeat", "1"]
    assert main([*args, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [(c["fanin"], c["fanout"]) for c in report["configs"]] == [(2, 3), (5, 3)]
    for config in report["configs"]:
        assert config["pairs"] == 60 * 60 // 10 // 3
        names = [s["strategy"] for s in config["strategies"]]
        assert names[-1] == "BlackBox" and "FullMany←" in names and "CellPairs" in names
        for s in config["strategies"]:
            assert s["answers_agree"], s
            assert (s["lineage_bytes"] > 0) == (s["strategy"] != "BlackBox")
    assert "PayMany←" in capsys.readouterr().out


def test_unknown_strategies_are_named(capsys):
    assert main(["bench", "functions", "--size", "20", "--strategies", "FullOne←,Nope"]) == 1
    assert "unknown strategies ['Nope']" in capsys.readouterr().err


def test_astronomy_suite_compares_strategies_and_the_optimizers_choice(tmp_path):
    out = tmp_path / "astro.json"
    args = ["bench", "functions", "--suite", "astronomy", "--height", "32", "--width", "120", "--repeat", "1"]
    assert main([*args, "--max-run-ratio", "100", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [s["strategy"] for s in report["strategies"]]
    assert names[:6] == ["BlackBoxOpt", "FullOne", "FullMany", "CellLevel", "SubZero", "Optimizer"]
    assert names[6:] == ["Optimizer (disk budget only)"]
    for s in report["strategies"]:
        assert s["answers_agree"], s["strategy"]
        assert sorted(s["query_ms"]) == ["BQ0", "BQ1", "BQ2", "BQ3", "BQ4", "FQ0"]
    opt = report["optimizer"]
    assert opt["predicted_bytes"] <= opt["max_disk_bytes"]
    assert opt["predicted_runtime_seconds"] <= opt["max_runtime_seconds"]  # the budget it had, as reported
    assert set(opt["chosen"]) >= {"crd_a", "crd_b", "clean", "stars"}


def test_genomics_suite_runs_every_strategy_and_budget(tmp_path):
    out = tmp_path / "genomics.json"
    args = ["bench", "functions", "--suite", "genomics", "--replicas", "3", "--repeat", "1"]
    assert main([*args, "--max-disk-mb", "0.01,1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [s["strategy"] for s in report["strategies"]][:2] == ["BlackBox", "FullOne"]
    assert all(s["answers_agree"] for s in report["strategies"])
    for plan in report["optimizer"]:
        assert plan["answers_agree"] and plan["predicted_bytes"] <= plan["max_disk_mb"] * 1e6
        assert plan["measured_bytes"] == plan["predicted_bytes"]
