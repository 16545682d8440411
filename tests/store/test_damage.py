"""A damaged store is said to be damaged, naming the file, never read as less lineage.

Each kind of file a capture keeps (its catalog entry, output, pair table, snapshot of a
CSV source, side relation, forward index) is removed, truncated or swapped for the same
kind of file of another capture, in a copy of one store; loading, both engines and the
command line must then refuse with ``StoreCorrupt`` naming that file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import sparkprov as sp

from ..cli.test_main import sparkprov_cli

KINDS = {  # kind: the glob of its files under data/<capture id>/
    "output": "output/part-*.parquet",
    "lineage": "lineage/src=1/part-*.parquet",
    "snapshot": "snapshots/*/part-*.parquet",
    "side": "sides/*/part-*.parquet",
    "index": "forward/src=1/part-*.parquet",
}
DAMAGES = ["missing", "truncated", "swapped"]


def _star(spark, tmp: Path, n: int):
    orders = [(i, i % 5, float(i * n)) for i in range(12 * n)]
    spark.createDataFrame(orders, "oid long, cust long, total double").write.parquet(str(tmp / f"orders{n}"))
    customers = [(c, ["EU", "US"][c % 2]) for c in range(5 + n)]
    spark.createDataFrame(customers, "cust long, region string").write.option("header", True).csv(str(tmp / f"c{n}"))
    return (
        spark.read.parquet(str(tmp / f"orders{n}")),
        spark.read.option("header", True).schema("cust long, region string").csv(str(tmp / f"c{n}")),
    )


@pytest.fixture(scope="module")
def pristine(spark, tmp_path_factory):
    """A store with captures b and c (the same kinds of files, of other sizes), each
    traced forward once so their forward indexes exist."""
    tmp = tmp_path_factory.mktemp("damage")
    session = sp.LineageSession(spark, store=tmp / "store")
    for name, n in (("b", 1), ("c", 3)):
        orders, customers = _star(spark, tmp, n)
        orders, customers = session.source(orders, "orders"), session.source(customers, "customers")
        joined = orders.join(customers, "cust").groupBy("region").agg(F.sum("total").alias("total"))
        cap = session.capture(joined, name=name, witnesses=True)
        assert cap.forward("customers", [0], engine="embedded").count() == 1
    return tmp / "store"


def _data(store: Path, name: str) -> Path:
    entry = json.loads((store / "catalog" / name / "v000001.json").read_text())
    return store / "data" / entry["id"]


def _one(store: Path, name: str, kind: str) -> Path:
    found = sorted(_data(store, name).glob(KINDS[kind]))
    assert found, f"capture {name} has no {kind} file"
    return max(found, key=lambda p: p.stat().st_size)


def _damage(path: Path, other: Path, damage: str) -> None:
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        os.truncate(path, path.stat().st_size // 2)
    else:
        shutil.copyfile(other, path)


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_damaged_file_is_named_by_every_reader(spark, pristine, tmp_path, kind, damage):
    store = tmp_path / "copy"
    shutil.copytree(pristine, store)
    session = sp.LineageSession(spark, store=store)
    opened = session.load("b")  # loaded while whole: answers check again
    damaged = _one(store, "b", kind)
    _damage(damaged, _one(store, "c", kind), damage)
    with pytest.raises(sp.StoreCorrupt, match=f"capture 'b' version 1: file {damaged}"):
        session.load("b")
    for engine in ("embedded", "spark"):
        with pytest.raises(sp.StoreCorrupt, match=str(damaged)):
            opened.backward("region = 'EU'", engine=engine)
        with pytest.raises(sp.StoreCorrupt, match=str(damaged)):
            opened.forward("customers", "cust = 0", engine=engine)
        args = ["trace", "backward", "b", "--where", "region = 'EU'", "--store", str(store), "--engine", engine]
        done = sparkprov_cli(*args)
        assert done.returncode == 1 and str(damaged) in done.stderr and "rows" not in done.stdout
    assert session.load("c").backward("region = 'EU'", "customers").count() == 3  # the other capture is whole


def test_a_stray_file_in_the_pair_table_is_refused(spark, pristine, tmp_path):
    store = tmp_path / "copy"
    shutil.copytree(pristine, store)
    stray = _data(store, "b") / "lineage" / "src=1" / "part-99999.parquet"
    shutil.copyfile(_one(store, "c", "lineage"), stray)
    with pytest.raises(sp.StoreCorrupt, match=f"file {stray} is not one the capture wrote"):
        sp.LineageSession(spark, store=store).load("b")


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_catalog_entry_is_named_and_the_rest_still_listed(spark, pristine, tmp_path, damage):
    store = tmp_path / "copy"
    shutil.copytree(pristine, store)
    entry = store / "catalog" / "b" / "v000001.json"
    if damage == "missing":
        entry.unlink()
    elif damage == "truncated":
        os.truncate(entry, 100)
    else:
        shutil.copyfile(store / "catalog" / "c" / "v000001.json", entry)
    session = sp.LineageSession(spark, store=store)
    expected = sp.CaptureNotFound if damage == "missing" else sp.StoreCorrupt
    with pytest.raises(expected, match="no capture named 'b'" if damage == "missing" else str(entry)):
        session.load("b")
    listed = sparkprov_cli("captures", "--store", str(store))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1].startswith("c ") or any(
        line.startswith("c ") for line in listed.stdout.splitlines()
    )
    if damage != "missing":
        assert f"b v1 damaged: catalog entry {entry}" in listed.stdout
        done = sparkprov_cli("trace", "backward", "b", "--where", "region = 'EU'", "--store", str(store))
        assert done.returncode == 1 and str(entry) in done.stderr
    assert session.load("c").backward("region = 'EU'", "customers").count() == 3


def test_a_pair_table_built_by_the_first_trace_is_checked_too(spark, session, tmp_path):
    """The issue's report: a join and group-by of three sources, its lineage kept in the
    output and built into a pair table by the first trace; a file of it moved away."""
    orders, customers = _star(spark, tmp_path, 2)
    products = spark.createDataFrame([(c, f"p{c}") for c in range(5)], "cust long, product string")
    orders, customers = session.source(orders, "orders"), session.source(customers, "customers")
    products = session.source(products, "products")
    q = orders.join(customers, "cust").join(products, "cust").groupBy("region").agg(F.count("*").alias("n"))
    cap = session.capture(q, name="three")
    assert cap._entry.lineage.in_output
    assert cap.backward("region = 'EU'", "customers", engine="embedded").count() == 3
    moved = next((Path(cap._entry.lineage.path) / "src=1").glob("part-*.parquet"))
    moved.rename(tmp_path / "elsewhere.parquet")
    store = str(session.store.root)
    for engine in ("embedded", "spark"):
        with pytest.raises(sp.StoreCorrupt, match=f"file {moved} is missing"):
            cap.backward("region = 'EU'", "customers", engine=engine)
        for direction, source in (("backward", []), ("forward", ["--source", "customers"])):
            where = "region = 'EU'" if direction == "backward" else "cust = 0"
            args = ["trace", direction, "three", "--where", where, *source, "--store", store, "--engine", engine]
            done = sparkprov_cli(*args)
            assert done.returncode == 1 and f"file {moved} is missing" in done.stderr, done.stderr
            assert "0 rows" not in done.stdout
