"""Removing captures and collecting garbage: what goes, what stays and why."""

from __future__ import annotations

import json
import os
import time

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.store.check import check_store
from sparkprov.store.collect import MIN_AGE, collect_garbage, find_orphans, parse_age
from sparkprov.store.lease import claim, claim_file

from .worker import capture_numbers

HOUR = 3600


def _ids(store) -> set[str]:
    return {p.name for p in store.folders.data.iterdir() if not p.name.startswith(".")}


def _old(path, seconds=2 * HOUR) -> None:
    """Make ``path`` and what it holds look ``seconds`` old."""
    then = time.time() - seconds
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(p, (then, then), follow_symlinks=False)


def test_a_removed_version_is_gone_and_its_number_never_given_again(session, spark):
    caps = [capture_numbers(session, "sums", v) for v in (1, 2, 3)]
    store = session.store
    first, last = caps[0]._entry, caps[-1]._entry
    removed = session.remove("sums", 3)
    assert [r["version"] for r in removed.removed] == ["sums@3"] and removed.removed[0]["bytes"] > 0
    assert store.versions("sums") == [1, 2]
    assert session.load("sums").version == 2  # the newest left
    with pytest.raises(sp.CaptureNotFound, match="version 3 was removed"):
        session.load("sums", 3)
    assert last.id not in _ids(store)
    assert capture_numbers(session, "sums", 4).version == 4  # 3 is not given again
    session.remove("sums", 1)
    assert first.id not in _ids(store)
    assert not list(store.links.folder.glob("*/sums.v000001.json"))  # its index records too
    # what is left still traces
    back = session.load("sums", 2).backward("g = 0", source="numbers").collect()
    assert {r["v"] for r in back} == {2}
    report = check_store(store)
    assert report.ok and report.orphans == [], report.to_text()
    session.remove("sums")  # every version
    assert session.captures() == []
    with pytest.raises(sp.CaptureNotFound, match="every version was removed"):
        session.load("sums")


def test_a_capture_others_read_is_kept_unless_forced(session, spark, tmp_path):
    df = spark.createDataFrame([(i % 2, i) for i in range(6)], "g int, v int")
    session.source(df, "numbers")
    stage = session.checkpoint(df.where("v > 0"), "stage")  # its rows kept in the store
    cap = session.capture(stage.groupBy("g").agg(F.sum("v").alias("s")), "totals")
    written = session.load("stage")._entry.written["path"]
    dry = session.remove("stage", dry_run=True)
    assert dry.removed == [] and "capture totals@1 reads it" in dry.kept[0]["why"]
    kept = session.remove("stage")
    assert kept.removed == [] and session.load("stage").version == 1 and os.path.isdir(written)
    assert session.collect_garbage().removed == []  # no policy: orphans only, and there are none
    assert cap.backward([0], end_to_end=True)  # the link still holds
    forced = session.remove("stage", force=True)
    assert [r["version"] for r in forced.removed] == ["stage@1"]
    assert not os.path.exists(written)  # its rows in the store went with it
    assert not session.store.versions("stage")


def test_a_chain_of_written_datasets_is_removed_from_its_end(session, spark, tmp_path):
    # each capture writes Parquet outside the store that the next reads in place: a
    # version is kept while a live capture reads it, and goes once its reader has
    # gone (each step reads the catalog again)
    data = spark.createDataFrame([(i % 3, i) for i in range(9)], "g int, v int")
    session.capture(data.where("v > 1"), "a", path=str(tmp_path / "a"))
    session.capture(spark.read.parquet(str(tmp_path / "a")).where("v > 2"), "b", path=str(tmp_path / "b"))
    session.capture(spark.read.parquet(str(tmp_path / "b")).groupBy("g").count(), "c")
    kept = session.remove("a", dry_run=True).kept
    assert "capture b@1 reads it" in kept[0]["why"] and "c@1" not in kept[0]["why"]
    assert session.remove("b").removed == []
    assert [r["version"] for r in session.remove("c").removed] == ["c@1"]
    assert [r["version"] for r in session.remove("b").removed] == ["b@1"]  # its reader has gone
    assert [r["version"] for r in session.remove("a").removed] == ["a@1"]


def test_gc_policies_keep_each_names_newest(session, spark):
    for v in range(1, 5):
        capture_numbers(session, "a", v)
    capture_numbers(session, "b", 1)
    with pytest.raises(sp.InvalidArgument, match="keep_versions"):
        session.collect_garbage(keep_versions=0)
    dry = session.collect_garbage(keep_versions=2, dry_run=True)
    assert [r["version"] for r in dry.removed] == ["a@1", "a@2"] and dry.dry_run
    assert session.store.versions("a") == [1, 2, 3, 4]  # a dry run removes nothing
    both = session.collect_garbage(keep_versions=2, older_than=HOUR)  # made seconds ago: none is that old
    assert both.removed == []
    gone = session.collect_garbage(keep_versions=3, older_than=0)
    assert [r["version"] for r in gone.removed] == ["a@1"]
    gone = session.collect_garbage(older_than=0)
    assert [r["version"] for r in gone.removed] == ["a@2", "a@3"]
    assert session.store.versions("a") == [4] and session.store.versions("b") == [1]
    assert parse_age("30d") == 30 * 86400
    with pytest.raises(sp.InvalidArgument, match="an age"):
        parse_age("thirty days")


def test_orphans_go_when_their_writer_is_gone_or_they_are_old(session, spark):
    capture_numbers(session, "kept", 1)
    store = session.store
    root = store.root
    dead = store.folders.capture("d" * 32).root  # claimed by a process that is gone
    dead.mkdir()
    (dead / "part-0.parquet").write_bytes(b"x" * 100)
    claim_file(dead).write_text("1-" + "0" * 32)
    live = store.folders.capture("e" * 32).root  # claimed by this process: being written
    claim(root, live)
    live.mkdir()
    unclaimed_old, unclaimed_new = root / "checkpoints" / "old-1", root / "checkpoints" / "new-1"
    for d in (unclaimed_old, unclaimed_new):
        d.mkdir(parents=True)
        (d / "part-0.parquet").write_bytes(b"y" * 10)
    _old(unclaimed_old)
    temp = store.folders.versions("kept") / ".tmp-0123"
    temp.write_text("{}")
    _old(temp)
    never = store.links.folder / ("0" * 32) / "ghost.v000001.json"  # an index record of a commit that did not happen
    never.parent.mkdir(parents=True)
    never.write_text(json.dumps({"name": "ghost", "version": 1, "wrote": True, "read_as": []}))
    _old(never)
    found = {o.path: o for o in find_orphans(store)}
    assert found[dead].writer == "gone" and found[live].writer == "alive" and found[unclaimed_new].writer == "unknown"
    assert {temp, never, unclaimed_old} <= set(found)
    report = check_store(store)
    assert report.ok and "being written" in report.to_text()  # orphans are not damage
    garbage = collect_garbage(store)
    removed = {r["path"] for r in garbage.removed}
    assert removed == {str(p) for p in (dead, unclaimed_old, temp, never)}
    assert not dead.exists() and not claim_file(dead).exists()
    assert live.exists() and unclaimed_new.exists()
    # whatever the grace asked, nothing unclaimed younger than a minute: a live writer's
    # temporary file (a commit's entry before its link) must not vanish under it
    assert collect_garbage(store, grace=0).removed == []
    _old(unclaimed_new, 2 * MIN_AGE)
    assert collect_garbage(store, grace=0).removed[0]["path"] == str(unclaimed_new)
    assert live.exists()  # its writer lives, whatever the grace
    assert session.load("kept").output.count() == 3


def test_gc_reads_every_entry_before_removing_anything(session, spark):
    capture_numbers(session, "a", 1)
    capture_numbers(session, "b", 1)
    session.store.folders.entry("b", 1).write_text("{not json")
    with pytest.raises(sp.StoreCorrupt, match="nothing is collected"):
        session.collect_garbage(keep_versions=1)
    report = check_store(session.store)
    assert not report.ok and "v000001.json cannot be read" in report.errors[0]


def test_a_store_this_process_cannot_write_is_not_collected(session, spark, monkeypatch):
    capture_numbers(session, "a", 1)
    monkeypatch.setattr(type(session.store), "writable", property(lambda self: False))
    with pytest.raises(sp.InvalidArgument, match="cannot be written by this process"):
        session.remove("a")
    with pytest.raises(sp.InvalidArgument, match="cannot be written by this process"):
        session.collect_garbage()
    assert [r["version"] for r in session.remove("a", dry_run=True).removed] == ["a@1"]
    assert session.store.versions("a") == [1]
