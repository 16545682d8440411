"""A store in an S3-compatible object store: listed, traced in place and committed to
with a conditional write, against an S3 server started here (moto's, from PyPI).

What is not tested here: Spark writing into ``s3a://`` (Hadoop's S3 connector needs
jars that are not on PyPI); captures are made in a local store and pushed.
"""

from __future__ import annotations

import json
import os
import threading

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench.s3_server import s3_server
from sparkprov.cli.answers import derivations, trace
from sparkprov.errors import StoreUnsupported
from sparkprov.store import fs
from sparkprov.store.object_store import ObjectStore, open_store
from sparkprov.store.publish import push

from ..cli.test_main import sparkprov_cli

BUCKET = "lineage"


@pytest.fixture(scope="module")
def s3():
    """An S3 server of this process's own, reached as the AWS tools reach one."""
    with s3_server(BUCKET) as url:
        yield url


@pytest.fixture(scope="module")
def captured(spark, tmp_path_factory):
    """A local store with captures whose lineage is kept in every way the embedded
    engine reads: pairs, rids kept in the output, a CSV source's snapshot, witnesses."""
    base = tmp_path_factory.mktemp("objects")
    orders = [(i, i % 4, float(i)) for i in range(40)]
    spark.createDataFrame(orders, "oid long, cust long, total double").write.parquet(str(base / "orders"))
    spark.createDataFrame([(c, ["EU", "US"][c % 2]) for c in range(4)], "cust long, region string").write.option(
        "header", True
    ).csv(str(base / "customers"))
    session = sp.LineageSession(spark, store=base / "store")
    o = session.source(spark.read.parquet(str(base / "orders")), "orders")
    c = session.source(
        spark.read.option("header", True).schema("cust long, region string").csv(str(base / "customers")),
        "customers",
    )
    joined = o.where("total > 3").join(c, "cust")
    session.capture(joined.groupBy("region").agg(F.sum("total").alias("total")), name="by_region")
    session.capture(joined.select("oid", "region", "total"), name="rows", strategy="logical")
    session.capture(joined.groupBy("region").count(), name="counts", witnesses=True)
    cleaned = session.checkpoint(o.where("total > 10"), "cleaned")  # its rows kept in the store
    session.capture(cleaned.groupBy("cust").agg(F.max("total").alias("top")), name="tops")
    return session.store


def _answer(store_root, entry, *args, **kwargs) -> dict:
    """An embedded trace's answer, the store's location in it (a source kept there is
    named by its path) spelled as a token."""
    found = trace(store_root, entry, *args, engine="embedded", **kwargs).to_json()
    found = {k: v for k, v in found.items() if k not in ("seconds", "ms")}
    return json.loads(json.dumps(found).replace(store_root, "{store}"))


CASES = [
    ("by_region", "backward", "region = 'EU'", None),
    ("by_region", "forward", "oid = 5", "orders"),
    ("rows", "backward", "oid < 12", None),
    ("rows", "forward", "region = 'US'", "customers"),
    ("counts", "backward", "region = 'US'", None),
    ("tops", "backward", "cust = 1", None),
]


def test_a_store_pushed_to_an_object_store_is_traced_there_as_where_it_was_made(s3, captured, tmp_path):
    remote = f"{s3}/copied"
    fs.copy_tree(captured.root, remote)  # copied before any answer built its indexes
    copied = fs.files_under(remote)
    listed_here = sparkprov_cli("captures", "--store", str(captured.root), "--json").stdout
    store = open_store(remote, create=False)
    assert isinstance(store, ObjectStore) and store.names() == ["by_region", "cleaned", "counts", "rows", "tops"]
    os.environ["SPARKPROV_CACHE"] = str(tmp_path / "cache")
    try:
        there = {case: _answer(remote, store.load(case[0]), *case[1:3], source=case[3]) for case in CASES}
        why = derivations(store.load("counts"), "why", "region = 'US'").to_json()
    finally:
        del os.environ["SPARKPROV_CACHE"]
    here = {case: _answer(str(captured.root), captured.load(case[0]), *case[1:3], source=case[3]) for case in CASES}
    for case, answer in here.items():
        assert there[case] == answer, case
    assert all(a["matched"] and all(r["rows"] for r in a["relations"].values()) for a in here.values())
    assert why == derivations(captured.load("counts"), "why", "region = 'US'").to_json()
    assert fs.files_under(remote) == copied  # what answers built went to the cache, not into the object store
    assert any("forward" in rel for rel, _ in fs.files_under(tmp_path / "cache"))
    listed = sparkprov_cli("captures", "--store", remote, "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == json.loads(listed_here.replace(str(captured.root), remote))


def test_the_command_line_traces_in_an_object_store_and_says_what_it_does_not_do(s3, captured, spark):
    remote = f"{s3}/cli"
    fs.copy_tree(captured.root, remote)
    done = sparkprov_cli("trace", "backward", "by_region", "--where", "region = 'EU'", "--store", remote, "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["relations"]["orders"]["rows"]
    assert sorted(r["oid"] for r in rows) == sorted(i for i in range(40) if i % 4 in (0, 2) and i > 3)
    refused = sparkprov_cli("gc", "--store", remote)
    assert refused.returncode != 0 and "object store" in refused.stderr
    on_spark = sparkprov_cli(
        "trace", "backward", "by_region", "--where", "region = 'EU'", "--store", remote, "--engine", "spark"
    )
    assert on_spark.returncode != 0 and "embedded engine" in on_spark.stderr
    with pytest.raises(StoreUnsupported, match="sparkprov push"):
        sp.LineageSession(spark, store=remote)


def test_concurrent_commits_to_an_object_store_take_consecutive_versions(s3):
    store = open_store(f"{s3}/commits")
    reasons: list[str] = []

    def writer(i: int) -> None:
        for j in range(3):
            reasons.append(store.commit_failed("attempts", f"writer {i} attempt {j}").failed["reason"])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.versions("attempts") == list(range(1, 19))
    stored = [store.load("attempts", v, failed_ok=True).failed["reason"] for v in range(1, 19)]
    assert sorted(stored) == sorted(reasons) and len(set(stored)) == 18  # none overwritten, none lost
    assert not fs.put_if_absent(f"{s3}/commits/catalog/attempts/v000001.json", b"{}")


def test_captures_pushed_to_an_object_store_are_committed_there_whole_and_once(s3, captured, tmp_path):
    remote = f"{s3}/pushed"
    for spec in ("tops", "by_region", "rows"):
        done = sparkprov_cli("push", spec, "--to", remote, "--store", str(captured.root), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["version"] == 1
    again = sparkprov_cli("push", "rows", "--to", remote, "--as", "by_region", "--store", str(captured.root))
    assert again.returncode != 0 and "already, as rows@1: a capture is pushed once" in again.stderr
    unfinished = f"{remote}/data/{captured.load('counts').id}"  # a push that died after copying a file
    fs.put(f"{unfinished}/output/part-0.parquet", b"partial")
    left = sparkprov_cli("push", "counts", "--to", remote, "--store", str(captured.root))
    assert left.returncode != 0 and "left from a push that did not end" in left.stderr
    fs.remove_tree(unfinished)
    store = open_store(remote, create=False)
    assert store.names() == ["by_region", "rows", "tops"]
    checkpoint = [rel for rel, _ in fs.files_under(remote) if rel.startswith("checkpoints/")]
    assert checkpoint  # the rows tops read, copied beside it
    os.environ["SPARKPROV_CACHE"] = str(tmp_path / "cache")
    try:
        for name, direction, where, source in CASES:
            if name in store.names():
                there = _answer(remote, store.load(name), direction, where, source=source)
                here = _answer(str(captured.root), captured.load(name), direction, where, source=source)
                assert there == here
    finally:
        del os.environ["SPARKPROV_CACHE"]
    back = open_store(tmp_path / "back")  # and from there to a local store again
    assert push(store, "tops", back).version == 1
    assert _answer(str(back.root), back.load("tops"), *CASES[-1][1:3]) == _answer(
        str(captured.root), captured.load("tops"), *CASES[-1][1:3]
    )


def test_a_server_that_ignores_conditional_writes_is_refused_before_the_first_commit(s3, monkeypatch):
    import boto3

    made = boto3.client

    def ignoring(*args, **kwargs):  # requests reach the server without their condition
        client = made(*args, **kwargs)
        client.meta.events.register(
            "before-parameter-build.s3.PutObject", lambda params, **_: params.pop("IfNoneMatch", None)
        )
        return client

    monkeypatch.setattr(boto3, "client", ignoring)
    store = open_store(f"{s3}/ignoring")
    with pytest.raises(StoreUnsupported, match="ignores If-None-Match"):
        store.commit_failed("attempts", "never committed")
    assert store.versions("attempts") == []
    assert [rel for rel, _ in fs.files_under(f"{s3}/ignoring")] == ["FORMAT"]  # the probe removed


def test_a_missing_store_or_bucket_is_said_so(s3):
    from sparkprov.errors import StoreNotFound

    with pytest.raises(StoreNotFound, match="no sparkprov store at s3://lineage/none"):
        open_store(f"{s3}/none", create=False)
    with pytest.raises(StoreNotFound, match="bucket 'no-such-bucket' does not exist"):
        open_store("s3://no-such-bucket/lineage")
    failed = sparkprov_cli("captures", "--store", "s3://no-such-bucket/lineage")
    assert failed.returncode == 1 and "no sparkprov store at s3://no-such-bucket/lineage" in failed.stderr
