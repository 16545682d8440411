"""A store copied or moved reads its own files: paths inside it are kept relative to it."""

from __future__ import annotations

import json
import shutil

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.store.catalog import Store

from ..cli.test_main import sparkprov_cli


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def pipeline(spark, tmp_path):
    """A store (its path has a space, which Hadoop's URIs spell %20) with a Parquet and a
    CSV source, a mark and a checkpoint, both kept inside the store."""
    spark.createDataFrame([(i, i % 4, float(i)) for i in range(20)], "oid long, cust long, total double").write.parquet(
        str(tmp_path / "orders")
    )
    spark.createDataFrame([(c, ["EU", "US"][c % 2]) for c in range(4)], "cust long, region string").write.option(
        "header", True
    ).csv(str(tmp_path / "customers"))
    session = sp.LineageSession(spark, store=tmp_path / "my store")
    orders = session.source(spark.read.parquet(str(tmp_path / "orders")), "orders")
    customers = session.source(
        spark.read.option("header", True).schema("cust long, region string").csv(str(tmp_path / "customers")),
        "customers",
    )
    cleaned = session.checkpoint(orders.where("total > 2"), "cleaned")
    joined = sp.mark(cleaned.join(customers, "cust"), "joined")
    session.capture(joined.groupBy("region").agg(F.sum("total").alias("total")), name="by_region")
    return session


def test_a_copied_store_reads_its_own_files_after_the_original_is_gone(spark, pipeline, tmp_path):
    cap = pipeline.load("by_region")
    before = {
        "backward": {n: _rows(df) for n, df in cap.backward("region = 'EU'", engine="spark").items()},
        "end_to_end": _rows(cap.backward("region = 'EU'", "by_region.joined/cleaned/orders", end_to_end=True)),
        "mark": _rows(cap.lineage("region = 'EU'").go_back().to_df()),
    }
    original = pipeline.store.root
    entry = (original / "catalog" / "by_region" / "v000001.json").read_text()
    assert str(original) not in entry and "%20" not in entry  # kept relative to the store
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(original, copy)
    shutil.rmtree(original)

    moved = sp.LineageSession(spark, store=copy).load("by_region")
    spelled = json.dumps(moved._entry.to_json())
    assert spelled.count(str(copy)) > 0 and str(original) not in spelled
    for engine in ("embedded", "spark"):
        traced = {n: _rows(df) for n, df in moved.backward("region = 'EU'", engine=engine).items()}
        assert traced == before["backward"]
    traced = moved.backward("region = 'EU'", "by_region.joined/cleaned/orders", end_to_end=True)
    assert _rows(traced) == before["end_to_end"]
    assert _rows(moved.lineage("region = 'EU'").go_back().to_df()) == before["mark"]
    done = sparkprov_cli("trace", "backward", "by_region", "--where", "region = 'EU'", "--store", str(copy), "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["relations"]
    assert {n: sorted(r["_sp_rid"] for r in a["rows"]) for n, a in answer.items()} == {
        n: sorted(r[-1] for r in rows) for n, rows in before["backward"].items()
    }


def test_a_store_written_before_paths_were_relative_is_read_where_it_is(spark, session, tmp_path):
    df = session.source(spark.createDataFrame([("a", 1), ("b", 2)], "k string, v int"), "numbers")
    session.capture(df.groupBy("k").sum("v"), name="sums")
    root = session.store.root
    path = root / "catalog" / "sums" / "v000001.json"
    # as an older sparkprov wrote it: absolute paths, no list of files
    entry = json.loads(path.read_text().replace("{store}", str(root)))
    del entry["files"], entry["digest"]
    path.write_text(json.dumps(entry))
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    shutil.rmtree(root)
    loaded = Store(copy, create=False).load("sums")
    assert loaded.output.path.startswith(str(copy))
    assert sp.LineageSession(spark, store=copy).load("sums").backward("k = 'a'", "numbers").count() == 1
