"""The store: atomic commits, concurrent writers, readers in other processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import sparkprov as sp
from sparkprov.store.catalog import Store
from sparkprov.store.check import check_store
from sparkprov.store.collect import MIN_AGE, collect_garbage, find_orphans

from ..conftest import ROOT


def run_worker(store, name, value, mode=""):
    cmd = [sys.executable, "-m", "tests.store.worker", str(store), name, str(value)] + ([mode] if mode else [])
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_names_are_checked(tmp_path):
    store = Store(tmp_path)
    for bad in ["", "../x", "a/b", ".hidden", "x" * 200, "sp ace"]:
        with pytest.raises(ValueError):
            store.commit(bad, {})
    with pytest.raises(sp.CaptureNotFound):
        store.load("missing")


def _attempt(x: int) -> dict:
    # the smallest entry a store takes: an attempt without data (see store/entry.py)
    return {"id": None, "created": "2026-11-26T00:00:00Z", "failed": {"reason": "a test"}, "sources": {}, "x": x}


def test_the_store_holds_the_paths_inside_it(tmp_path):
    store = Store(tmp_path / "s")
    assert store.holds(tmp_path / "s" / "workflows" / "w")
    assert store.holds(f"file:{tmp_path}/s/checkpoints/c")
    assert not store.holds(tmp_path / "elsewhere")
    assert not store.holds(tmp_path / "s" / ".." / "elsewhere")
    assert not store.holds("hdfs://nn/s")


def test_versions_never_overwrite(tmp_path):
    store = Store(tmp_path)
    assert store.commit("a", _attempt(1)).version == 1
    assert store.commit("a", _attempt(2)).version == 2
    assert store.load("a", failed_ok=True).extra["x"] == 2 and store.load("a", 1, failed_ok=True).extra["x"] == 1
    assert store.names() == ["a"]


def test_an_entry_that_would_not_load_is_not_committed(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(sp.StoreCorrupt, match="output is missing"):
        store.commit("a", {"id": "abc", "created": "2026-11-26T00:00:00Z", "sources": {}})
    assert store.names() == []


def test_unknown_format_is_refused(tmp_path):
    Store(tmp_path)
    (tmp_path / "FORMAT").write_text(json.dumps({"format_version": 99}))
    with pytest.raises(sp.StoreCorrupt):
        Store(tmp_path)


def test_failed_capture_leaves_nothing(spark, tmp_path, monkeypatch):
    session = sp.LineageSession(spark, store=tmp_path / "store")
    df = spark.createDataFrame([(1, 2)], "a int, b int")

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("sparkprov.capture.run.source_pairs", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):  # logical: pairs are resolved at capture
        session.capture(df.groupBy("a").count(), name="doomed", strategy="logical")
    assert session.captures() == []
    assert list((tmp_path / "store" / "data").iterdir()) == []  # its files were removed too


@pytest.mark.parametrize("mode", ["kill-before-commit", "kill-at-link"])
def test_killed_capture_is_invisible(spark, tmp_path, mode):
    store = tmp_path / "store"
    proc = run_worker(store, "killed", 1, mode)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == -9, err[-2000:]
    assert "committed" not in out
    session = sp.LineageSession(spark, store=store)
    assert session.captures() == []
    with pytest.raises(sp.CaptureNotFound):
        session.load("killed")
    assert not any(p.name.endswith(".json") for p in (store / "catalog").rglob("*"))
    # what it left is an orphan whose writer is gone, not damage; gc removes it
    opened = Store(store)
    (orphan,) = [o for o in find_orphans(opened) if o.path.parent == opened.folders.data]
    assert orphan.writer == "gone" and orphan.bytes > 0
    assert check_store(opened).ok
    assert str(orphan.path) in {r["path"] for r in collect_garbage(opened, grace=0).removed}
    assert list(opened.folders.data.iterdir()) == []
    # left: at most the temporary files of the commit it died in (an entry before its
    # link, an index record), which gc leaves a minute at least, whatever the grace
    left = check_store(opened).orphans
    assert all(o.writer == "unknown" and o.age < MIN_AGE for o in left), left
    then = time.time() - 2 * MIN_AGE
    for o in left:
        os.utime(o.path, (then, then))
    collect_garbage(opened, grace=0)
    assert check_store(opened).orphans == []


def test_gc_never_removes_what_a_live_capture_will_commit(spark, tmp_path):
    store = tmp_path / "store"
    proc = run_worker(store, "slow", 5, "wait-before-commit")
    ready, go = tmp_path / "store.ready", tmp_path / "store.go"
    collections = 0
    while proc.poll() is None:  # collect garbage all the while the other process captures
        if collections and ready.exists() and not go.exists():
            # made and not committed: its data directory is what no entry names yet
            opened = Store(store)
            (pending,) = [o for o in find_orphans(opened) if o.path.parent == opened.folders.data]
            assert pending.writer == "alive"
            assert pending.path.exists() and check_store(opened).ok
            go.touch()
        collect_garbage(Store(store), grace=0)
        collections += 1
    out, err = proc.communicate()
    assert proc.returncode == 0 and "committed" in out, err[-2000:]
    assert go.exists() and collections > 2
    session = sp.LineageSession(spark, store=store)
    back = session.load("slow").backward("g = 1", source="numbers").collect()
    assert {r["v"] for r in back} == {5} and len(back) == 3
    assert check_store(session.store).orphans == []
