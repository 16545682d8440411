"""The store's index of which capture wrote and which read each dataset (store/links.py).

A trace across jobs asks it for the capture behind a source and the captures that read
an output; the answers must be those of reading every entry, on a new store, an older
store without the index, a read-only one, and with index files that lie or are damaged.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.store.catalog import Store


@pytest.fixture
def pipeline(spark, tmp_path):
    """orders -> clean (written to files) -> totals, beside captures that link to nothing."""
    session = sp.LineageSession(spark, store=tmp_path / "store")
    rows = [(1, "NL", 5), (2, "NL", -1), (3, "BE", 7), (4, "NL", 9)]
    spark.createDataFrame(rows, "id int, country string, amount int").coalesce(1).write.parquet(str(tmp_path / "in"))
    raw = session.source(spark.read.parquet(str(tmp_path / "in")), "orders")
    for i in range(3):
        session.capture(spark.range(3).where(f"id > {i}"), f"other{i}")
    session.capture(raw.where("amount > 0"), "clean", path=tmp_path / "clean")
    later = spark.read.parquet(str(tmp_path / "clean")).groupBy("country").agg(F.sum("amount").alias("total"))
    session.capture(later, "totals")
    return session, tmp_path


def _traced(session):
    totals = session.load("totals")
    through = totals.backward("country = 'NL'", end_to_end=True)
    forward = session.load("clean").forward("orders", "id = 4", end_to_end=True)
    return sorted(r.id for r in through["clean/orders"].collect()), sorted(forward)


def _loads(monkeypatch):
    loaded = []
    load = Store.load

    def counting(self, name, version=None, **kwargs):
        loaded.append(name)
        return load(self, name, version, **kwargs)

    monkeypatch.setattr(Store, "load", counting)
    return loaded


def test_a_trace_across_jobs_reads_the_linked_entries_alone(pipeline, monkeypatch):
    session, _ = pipeline
    totals = session.load("totals")
    loaded = _loads(monkeypatch)
    (source,) = totals._infos
    assert totals._plan.writer_of(source).name == "clean"
    assert loaded == ["clean"]  # not the three captures that link to nothing
    loaded.clear()
    assert [(c.name, s) for c, s in session.load("clean")._plan.readers()] == [("totals", source)]
    assert loaded == ["clean", "totals"]
    assert _traced(session) == ([1, 4], ["clean", "totals"])


def test_a_store_without_the_index_builds_it_on_first_use(pipeline, spark):
    session, tmp_path = pipeline
    store = tmp_path / "store"
    shutil.rmtree(store / "links")  # as a store written before the index
    again = sp.LineageSession(spark, store=store)
    assert _traced(again) == ([1, 4], ["clean", "totals"])
    assert (store / "links" / "COMPLETE").is_file()


def test_a_read_only_store_without_the_index_reads_every_entry(pipeline, spark, tmp_path, monkeypatch):
    session, _ = pipeline
    shutil.rmtree(tmp_path / "store" / "links")
    monkeypatch.setenv("SPARKPROV_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(Store, "writable", property(lambda self: False))
    again = sp.LineageSession(spark, store=tmp_path / "store")
    assert _traced(again) == ([1, 4], ["clean", "totals"])
    assert not (tmp_path / "store" / "links").exists()


def test_index_files_of_entries_that_never_committed_are_ignored(pipeline, spark):
    session, tmp_path = pipeline
    clean = session.load("clean")
    links = session.store.links
    folder = links.folder / links.key(clean._entry.written["files"])
    # a writer that died before its commit, and one whose version another writer took
    for name, version in (("ghost", 1), ("other0", 1)):
        record = {"name": name, "version": version, "wrote": True, "read_as": ["orders"]}
        (folder / f"{name}.v{version:06d}.json").write_text(json.dumps(record))
    assert _traced(sp.LineageSession(spark, store=tmp_path / "store")) == ([1, 4], ["clean", "totals"])


def test_a_damaged_index_file_is_refused_by_name(pipeline, spark):
    session, tmp_path = pipeline
    clean = session.load("clean")
    links = session.store.links
    damaged = links.folder / links.key(clean._entry.written["files"]) / "clean.v000001.json"
    os.truncate(damaged, 5)
    with pytest.raises(sp.StoreCorrupt, match=str(damaged)):
        sp.LineageSession(spark, store=tmp_path / "store").load("totals").backward("total > 0", end_to_end=True)


def test_a_moved_store_keeps_its_links(spark, tmp_path):
    # the written files inside the store: their paths move with it
    session = sp.LineageSession(spark, store=tmp_path / "a store")
    base = session.checkpoint(session.source(spark.range(5), "numbers"), "kept")
    session.capture(base.where("id > 2"), "big")
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "a store", moved)
    shutil.rmtree(tmp_path / "a store")
    big = sp.LineageSession(spark, store=moved).load("big")
    assert sorted(r.id for r in big.backward("id >= 0", end_to_end=True)["kept/numbers"].collect()) == [3, 4]
