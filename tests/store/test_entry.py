"""The typed catalog entry (store/entry.py): every kind of entry sparkprov writes reads
back field for field, and an entry with a field missing or of another type is refused
by name when it is loaded."""

from __future__ import annotations

import json
import re

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.store.check import check_store
from sparkprov.store.collect import collect_garbage, remove
from sparkprov.store.entry import CaptureEntry
from sparkprov.store.listing import describe, table


def _without_nones(entry: dict) -> dict:
    """``entry`` without the fields of no value the typed entry leaves out (its own, its
    output's and its lineage's; values inside them are kept as they are)."""
    out = {k: v for k, v in entry.items() if v is not None}
    for part in ("output", "lineage"):
        if isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if v is not None}
    return out


def _raw(store, name: str) -> dict:
    """The newest entry of ``name`` as its catalog file holds it, without the digest
    the catalog checks it by."""
    raw = json.loads(store.folders.entry(name, store.latest_version(name)).read_text())
    assert len(raw.pop("digest")) == 64
    return raw


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    """One store holding every kind of entry: default, logical with witnesses, lazy,
    defer, a workload, a write for the user, a checkpoint, an RDD action, a failed
    attempt, and windows' lineage kept per partition (now and lazily)."""
    tmp = tmp_path_factory.mktemp("entries")
    session = sp.LineageSession(spark, store=tmp / "store")
    nums = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 3)], ["k", "v"]), "nums")
    summed = nums.groupBy("k").agg(F.sum("v").alias("total"))
    session.capture(summed, "auto")
    session.capture(summed, "witnessed", witnesses=True)
    session.capture(summed, "lazy", strategy="lazy")
    session.capture(summed, "defer", strategy="defer").build_lineage()
    session.capture(summed, "workload", workload={"sources": ["nums"], "where": {"nums": "v > 1"}})
    session.capture(nums.orderBy("v"), "written", path=tmp / "written")
    session.checkpoint(nums, "kept")
    session.rdd.parallelize(["a b", "b"]).flatMap(str.split).collect()
    session.store.commit_failed("broken", "ValueError: boom")
    windowed = nums.select("k", F.sum("v").over(Window.partitionBy("k")).alias("total"))
    session.capture(windowed, "windowed")
    session.capture(windowed, "windowed-lazy", strategy="lazy")
    return session.store


def test_every_kind_of_entry_reads_back_field_for_field(store):
    names = store.names()
    assert {"auto", "witnessed", "lazy", "defer", "workload", "written", "kept", "broken"} <= set(names)
    for name in names:
        raw = _raw(store, name)
        typed = CaptureEntry.from_json(raw, name)
        assert typed.to_json() == _without_nones(raw), name
        assert CaptureEntry.from_json(typed.to_json(), name) == typed
        assert (typed.failed is None) == (name != "broken")
        loaded = store.load(name, failed_ok=True)
        assert isinstance(loaded, CaptureEntry) and loaded.sources.keys() == typed.sources.keys()
        assert loaded.output is None or loaded.output.path.startswith(str(store.root))  # made absolute
    assert store.load("lazy").lineage.later == "lazy"


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda e: e["lineage"].pop("path"), "lineage.path is missing"),
        (lambda e: e.update(created=5), "created is int, not str"),
        (lambda e: e["lineage"].update(later="soon"), "lineage.later is 'soon', not one of 'defer', 'lazy'"),
        (lambda e: e["lineage"]["sources"].update(nums="0"), "lineage.sources holds a source number"),
        (lambda e: e.update(output=[]), "output is list, not dict"),
        (lambda e: e["output"].update(columns="k"), "output.columns is str, not list"),
        (lambda e: e.pop("sources"), "sources is missing"),
        (lambda e: e["sources"]["nums"].pop("kind"), "sources.nums.kind is missing"),
    ],
)
def test_an_entry_with_a_field_missing_or_mistyped_is_refused_by_name(store, damage, says):
    path = store.root / "catalog" / "auto" / "v000001.json"
    kept = path.read_text()
    try:
        entry = json.loads(kept)
        del entry["digest"]  # as an earlier sparkprov wrote it: each field is checked by itself
        damage(entry)
        path.write_text(json.dumps(entry))
        with pytest.raises(sp.StoreCorrupt, match=f"catalog entry {path}: {says}"):
            store.load("auto")
    finally:
        path.write_text(kept)


def test_lineage_an_older_sparkprov_would_misread_is_named_in_a_newer_format(store):
    # readers from before features refuse any format version but 1: only entries whose
    # lineage they would misread leave it
    for name in store.names():
        raw = _raw(store, name)
        assert raw["format_version"] == (2 if raw.get("features") else 1), name
    assert _raw(store, "windowed")["features"] == ["window-sets"]  # read as one set, it would be coarser
    assert _raw(store, "windowed-lazy")["features"] == ["window-blocks", "window-sets"]  # built later: may hold either
    assert "features" not in _raw(store, "auto") and "features" not in _raw(store, "defer")
    assert store.load("windowed").features == ["window-sets"]
    with pytest.raises(sp.InvalidArgument, match="features"):
        store.commit("cubes", {**_raw(store, "auto"), "features": ["cubes"]})
    assert "cubes" not in store.names()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda e: e.update(features=["window-sets", "cubes"]), r"in forms this sparkprov does not read \(cubes\)"),
        (lambda e: e.update(format_version=3), "has format version 3: it was written by a newer sparkprov"),
    ],
)
def test_an_entry_a_newer_sparkprov_wrote_is_refused_not_misread(store, change, says):
    path = store.root / "catalog" / "windowed" / "v000001.json"
    kept = path.read_text()
    try:
        entry = json.loads(kept)
        del entry["digest"]
        change(entry)
        path.write_text(json.dumps(entry))
        with pytest.raises(sp.CaptureTooNew, match=says):
            store.load("windowed")
        # the store is not damaged, and the capture's data is not an orphan; what this
        # sparkprov cannot read it neither collects nor removes
        report = check_store(store)
        assert not [e for e in report.errors if "windowed/" in e], report.errors
        assert [n for n in report.notes if n.startswith("not checked:") and "newer sparkprov" in n], report.notes
        data = store.folders.capture(json.loads(kept)["id"]).root
        assert data.is_dir() and data not in [o.path for o in report.orphans]
        with pytest.raises(sp.CaptureTooNew, match="collect with that sparkprov"):
            collect_garbage(store, dry_run=True)
        with pytest.raises(sp.CaptureTooNew, match="remove it with the sparkprov that wrote it"):
            remove(store, "windowed", dry_run=True)
        # listed as newer, not as damaged
        row = describe(store, "windowed", 1)
        assert row["newer"] and re.search(says, row["damaged"])
        assert re.search(r"^windowed +v1 +NEWER$", table([row]), re.M) and "\nwindowed v1 newer: " in table([row])
    finally:
        path.write_text(kept)


def test_keys_a_later_sparkprov_adds_are_kept(store):
    raw = {**_raw(store, "auto"), "new_field": {"a": 1}}
    raw["lineage"] = {**raw["lineage"], "new_lineage_field": 2}
    typed = CaptureEntry.from_json(raw, "auto")
    assert typed.extra == {"new_field": {"a": 1}} and typed.lineage.extra == {"new_lineage_field": 2}
    assert typed.to_json()["lineage"]["new_lineage_field"] == 2
