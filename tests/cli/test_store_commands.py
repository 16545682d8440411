"""``sparkprov captures --sizes``, ``check``, ``gc`` and ``rm`` on a real store."""

from __future__ import annotations

import json

from pyspark.sql import functions as F

from .test_main import sparkprov_cli


def _numbers(session, spark, name, n=6000, witnesses=False):
    df = spark.range(n).select((F.col("id") % 7).alias("g"), F.sha2(F.col("id").cast("string"), 256).alias("h"))
    session.source(df, "numbers")
    return session.capture(df.groupBy("g").agg(F.max("h").alias("h")), name=name, witnesses=witnesses)


def test_check_finds_damage_deep_inside_a_file_only_with_deep(session, spark):
    store = str(session.store.root)
    cap = _numbers(session, spark, "rows", witnesses=True)
    plain = sparkprov_cli("check", "--store", store)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "whole" in plain.stdout and "0 orphan(s)" in plain.stdout
    deep = json.loads(sparkprov_cli("check", "--store", store, "--deep", "--json").stdout)
    assert deep["ok"] and deep["entries"] == 1 and deep["row_groups"] >= deep["parquet_files"] > 0
    # a file damaged at its start: the sizes and footers the entry recorded still hold
    pairs = max(session.store.folders.capture(cap._entry.id).root.rglob("*.parquet"), key=lambda p: p.stat().st_size)
    data = bytearray(pairs.read_bytes())
    assert len(data) > 8192  # its footer's last 4 KiB, which loading checks, left as they were
    data[4:2004] = bytes(2000)
    pairs.write_bytes(bytes(data))
    assert sparkprov_cli("check", "--store", store).returncode == 0
    damaged = sparkprov_cli("check", "--store", store, "--deep")
    assert damaged.returncode == 1
    assert f"error: capture rows@1: file {pairs} cannot be read" in damaged.stdout
    assert "DAMAGED (1 error(s))" in damaged.stdout


def test_sizes_rm_and_gc_from_the_command_line(session, spark):
    store = str(session.store.root)
    for _ in range(3):
        _numbers(session, spark, "rows", n=60, witnesses=True)
    listed = sparkprov_cli("captures", "--store", store, "--sizes")
    assert listed.returncode == 0, listed.stderr
    header = listed.stdout.splitlines()[0].split()
    assert header[6:13] == ["size", "output", "lineage", "witnesses", "snapshots", "indexes", "written"]
    assert "in captures' data, 0 B in 0 orphan(s)" in listed.stdout
    (row,) = json.loads(sparkprov_cli("captures", "--store", store, "--sizes", "--json").stdout)["captures"]
    assert row["parts"]["output"] > 0 and row["parts"]["witnesses"] > 0
    assert row["bytes"] == sum(row["parts"].values())
    dry = sparkprov_cli("gc", "--store", store, "--keep-versions", "1", "--dry-run")
    assert dry.returncode == 0 and "would remove rows@1" in dry.stdout and "would remove 2 item(s)" in dry.stdout
    assert session.store.versions("rows") == [1, 2, 3]
    rm = sparkprov_cli("rm", "rows@2", "--store", store, "--json")
    assert rm.returncode == 0 and [r["version"] for r in json.loads(rm.stdout)["removed"]] == ["rows@2"]
    gc = sparkprov_cli("gc", "--store", store, "--older-than", "0s")
    assert gc.returncode == 0 and "removed rows@1" in gc.stdout
    assert session.store.versions("rows") == [3]
    for args, message in [
        (["rm", "rows@2"], "capture 'rows' version 2 was removed"),
        (["rm", "nothing"], "no capture named 'nothing'"),
        (["rm", "../rows"], "invalid capture name '../rows'"),
        (["rm", "rows@two"], "a capture version is a whole number from 1, not 'two'"),
        (["gc", "--older-than", "soon"], "an age is a number with s, m, h, d or w"),
        (["gc", "--keep-versions", "0"], "keep_versions is a whole number from 1"),
    ]:
        bad = sparkprov_cli(*args, "--store", store)
        assert bad.returncode == 1 and message in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1
    assert sparkprov_cli("check", "--store", store).returncode == 0
