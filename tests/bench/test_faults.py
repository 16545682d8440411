"""A capturing driver killed with SIGKILL at random moments (issue 44, item 3), at the
size the suite affords: a clean worker and a killed one (``sparkprov bench faults``
kills twenty and more)."""

from __future__ import annotations

import sparkprov as sp
from sparkprov.bench.faults import CAPTURES, run, write_text


def test_a_killed_driver_leaves_a_whole_store(spark, tpch_dir, tmp_path):
    store = tmp_path / "store"
    text = write_text(tmp_path / "lines.txt", lines=200)
    result = run(sp.LineageSession(spark, store=store), store, tpch_dir, text, kills=1, seed=1, progress=lambda s: None)
    assert result["damaged"] == [] and result["differences"] == []
    assert result["kills"] == 1  # with this seed the kill falls while the worker captures
    # the clean run committed every capture; the kill added at most one version of each
    assert all(1 <= len(result["versions"][name]) <= 2 for name in CAPTURES)
    assert sum(r["traced"] for r in result["runs"]) >= 1
    assert result["final_check"]["ok"] and result["final_check"]["orphans"] == 0


def test_writers_and_readers_at_once(spark, tmp_path):
    from sparkprov.bench.concurrency import expected_sums
    from sparkprov.bench.concurrency import run as concurrently

    result = concurrently(tmp_path / "store", writers=2, readers=1, seconds=0, least=3)
    assert result["problems"] == [] and result["orphans"] == 0
    assert result["captures"] == 6 and result["versions"] == {"shared": 4, "own0": 1, "own1": 1}
    assert result["reads"][0] > result["captures"]  # it read while they wrote, again and again
    # the lineage the other processes wrote, traced by this one's Spark to their own rows
    session = sp.LineageSession(spark, store=tmp_path / "store")
    values = set()
    for version in range(1, 5):
        cap = session.load("shared", version)
        sums = {r["g"]: r["sum(v)"] for r in cap.output.collect()}
        value = sums[0] // 3
        assert sums == expected_sums(value)
        back = cap.backward("g = 0", source="numbers", engine="spark").collect()
        assert len(back) == 3 and {r["v"] for r in back} == {value}
        values.add(value)
    assert len(values) == 4  # each version its writer's and round's
