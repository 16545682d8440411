"""sparkprov bench graph on a small generated workflow: it builds the graph, traces
rows of every query class by the three methods (which must agree, or it raises) and
times an update."""

from __future__ import annotations

import argparse
import json

import pytest

from sparkprov.bench import graph as graph_bench
from sparkprov.bench.graph import main
from sparkprov.errors import InvalidArgument


def test_the_benchmark_builds_traces_every_class_and_updates(spark, tmp_path, capsys):
    # spark: the suite's session exists first, so the benchmark's getOrCreate reuses it
    out = tmp_path / "g.json"
    args = argparse.Namespace(edges="20K", threshold=300, queries=2, seed=0, update_pairs=2000, local_edges=None,
                              local_triples=None, driver_memory="2g", json_out=str(out), cold=False)  # fmt: skip
    assert main(args) == 0
    (run,) = json.loads(out.read_text())["runs"]
    build = run["build"]
    assert build["edges"] == run["edges"] > 10_000
    assert build["components_1000_nodes_or_more"] + build["components_smaller"] == build["components"]
    assert build["sets"] > build["components"]  # the large components were split into sets
    for klass in ("SC-SL", "LC-SL", "LC-LL"):
        measured = run["classes"][klass]
        assert measured["rows"] == 2, klass
        assert all(measured[m]["mean_ms"] > 0 for m in ("rq", "ccprov", "csprov")), klass
        assert measured["csprov"]["triples_read_mean"] > 0, klass  # its start's set at least
        # the component-based methods read at least the lineage, which RQ reads alone
        assert measured["ccprov"]["triples_read_mean"] >= measured["rq"]["triples_read_mean"], klass
    assert run["classes"]["LC-LL"]["lineage_triples_mean"] > run["classes"]["LC-SL"]["lineage_triples_mean"]
    assert run["update"]["added"]["triples"] == 2000
    assert run["update"]["edges_after"] == run["edges"] + 2000
    assert "update: 2,000 pairs" in capsys.readouterr().out


def test_cold_runs_say_what_emptying_the_page_cache_needs(tmp_path, monkeypatch):
    monkeypatch.setattr(graph_bench, "_DROP_CACHES", tmp_path / "no-such-folder" / "drop_caches")
    with pytest.raises(InvalidArgument, match="needs root"):
        graph_bench.drop_page_cache()
