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
    args = ["bench", "functions", "--suite", "astronomy", "--height", "64", "--width", "240", "--repeat", "1"]
    assert main([*args, "--max-run-ratio", "100", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [s["strategy"] for s in report["strategies"]]
    assert names == ["BlackBoxOpt", "FullOne", "FullMany", "CellLevel", "SubZero", "Optimizer"]
    for s in report["strategies"]:
        assert s["answers_agree"], s["strategy"]
        assert sorted(s["query_ms"]) == ["BQ0", "BQ1", "BQ2", "BQ3", "BQ4", "FQ0"]
    opt = report["optimizer"]
    assert opt["predicted_bytes"] <= opt["max_disk_bytes"]
    assert set(opt["chosen"]) >= {"crd_a", "crd_b", "clean", "stars"}
