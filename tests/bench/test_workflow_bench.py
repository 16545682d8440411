"""sparkprov bench workflow: the Arctic stations workflow computes what its stations'
histories say, and the benchmark reports overhead, graph size and query times."""

from __future__ import annotations

import argparse
import json

import pytest

import sparkprov as sp
from sparkprov.bench import arctic
from sparkprov.bench.workflows import main


@pytest.mark.parametrize("topology", ["dense"])
def test_the_lowest_temperature_is_the_histories_minimum(spark, tmp_path, topology):
    wf = arctic.workflow(sp.LineageSession(spark, store=tmp_path), 3, topology, fanout=2, seed=1)
    wf.run(request=arctic.request(spark, 1, "month"))  # January 2001
    januaries = [row[2] for s in (1, 2, 3) for row in arctic.history(s, seed=1) if row[1] == 1]
    measured = [r.air_temp for s in (1, 2, 3) for r in wf.dataset(f"obs{s}", 1).where("year = 2001").collect()]
    (lowest,) = wf.dataset("lowest", 1).collect()
    # the last station (serial) or layer (dense) has every station's minimum before it
    assert lowest.air_temp == pytest.approx(min(januaries + measured))
    g = wf.graph()
    (node,) = [g.tuple("lowest", r._sp_rid, 1) for r in wf.dataset("lowest", 1).collect()]
    coldest = min(januaries)
    station = next(s for s in (1, 2, 3) for row in arctic.history(s, seed=1) if row[1] == 1 and row[2] == coldest)
    obs = wf.dataset(f"obs{station}", 0).where(f"month = 1 and air_temp = {coldest}").first()._sp_rid
    assert g.tuple(f"obs{station}", obs, 0) in set(g.ancestors(node).tolist())


def test_the_benchmark_reports_overhead_size_and_query_times(spark, tmp_path, capsys):
    # spark: the suite's session exists first, so the benchmark's getOrCreate reuses it
    out = tmp_path / "w.json"
    args = argparse.Namespace(suite="arctic", executions=2, topologies="parallel", stations="2", fanout=2,
                              selectivity="season", queries=5, seed=0, json_out=str(out))  # fmt: skip
    assert main(args) == 0
    (run,) = json.loads(out.read_text())["runs"]
    assert run["overhead"] > 0 and len(run["tracked_s"]) == len(run["untracked_s"]) == len(run["later_s"]) == 2
    assert run["overhead_later"] > 0 and run["tracked_later_s"] > 0  # (and its graph is the tracked one's size)
    assert run["graph"]["nodes"] > 0 and run["graph"]["kinds"]["invocation"] == 2 * 4  # input, 2 stations, output
    assert run["zoom_out"]["n"] == run["zoom_in"]["n"] == run["subgraph"]["n"] == 5
    assert "overhead" in capsys.readouterr().out
