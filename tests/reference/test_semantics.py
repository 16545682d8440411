"""Acceptance 1: captured lineage equals the reference semantics, as sets, on random pipelines."""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import sparkprov as sp

from .pipelines import SOURCES, Aggregate, DropDuplicates, Exists, Scan, SetOp, pipelines, tables

SCHEMA = "k int, a int, b int, c string"


def captured_lineage(cap: sp.Capture) -> dict[int, frozenset]:
    """{output rid: {(source, key)}} read from the stored lineage in one pass per source."""
    out: dict[int, set] = {r["_sp_rid"]: set() for r in cap.output.select("_sp_rid").collect()}
    for name, source in cap.sources.items():
        keyed = cap.pairs(name).join(source.rows().select(F.col("_sp_rid").alias("in_rid"), "k"), "in_rid")
        for r in keyed.select("out_rid", "k").collect():
            out[r["out_rid"]].add((name, r["k"]))
    return {rid: frozenset(lin) for rid, lin in out.items()}


def _scan(source: str, prefix: str) -> Scan:
    return Scan([f"{prefix}{c}" for c in "kabc"], {f"{prefix}{c}" for c in "kab"}, source, prefix)


# Examples random runs have failed on, kept so every run checks them again.
# EXCEPT ALL inside a correlated EXISTS (it was refused).
_EXCEPT_ALL_IN_EXISTS = Aggregate(
    ["n4", "m5"],
    {"n4", "m5"},
    Exists(
        ["s0_b"],
        {"s0_b"},
        DropDuplicates(["s0_b"], {"s0_b"}, _scan("t1", "s0_")),
        "s0_b",
        SetOp(["x3"], {"x3"}, _scan("t2", "s1_"), _scan("t1", "s2_"), ["s1_k"], ["s2_k"], "except", True),
        "x3",
        False,
    ),
    [],
    [("n4", "count", None), ("m5", "sum", "s0_b")],
    True,
)


@settings(
    max_examples=int(os.environ.get("SPARKPROV_EXAMPLES", "25")),
    # the same pipelines every run, so CI is reproducible; SPARKPROV_RANDOM=1 explores
    # new ones (a failure found that way becomes an @example below)
    derandomize=not os.environ.get("SPARKPROV_RANDOM"),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    # shrinking re-runs Spark jobs for minutes; the failing example is printed unshrunk
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(pipeline=pipelines(), data=tables(), on_disk=st.booleans())
@example(
    pipeline=_EXCEPT_ALL_IN_EXISTS,
    data={
        "t2": [(0, None, 2, None), (1, None, None, None), (2, 0, 1, "y")],
        "t1": [(0, None, None, "y"), (1, 3, None, "x")],
    },
    on_disk=False,
)
def test_lineage_equals_reference(spark, session, tmp_path_factory, pipeline, data, on_disk):
    dfs = {}
    for name in SOURCES:
        df = spark.createDataFrame(data[name], SCHEMA)
        if on_disk:  # Parquet read in place (row-index rids) instead of an in-memory snapshot
            path = str(tmp_path_factory.mktemp(name) / "t.parquet")
            df.coalesce(1).write.parquet(path)
            df = spark.read.parquet(path)
        dfs[name] = session.source(df, name)
    query = pipeline.spark(dfs)
    expected_rel = pipeline.ref(data)
    cap = session.capture(query, name="prop")

    rows = {r["_sp_rid"]: tuple(r[c] for c in expected_rel.columns) for r in cap.output.collect()}
    lineage = captured_lineage(cap)
    got = Counter((rows[rid], lineage[rid]) for rid in rows)
    expected = Counter(expected_rel.rows)
    assert got == expected, f"pipeline {pipeline}"

    # the public trace API agrees, backward for one output row and forward for one input row
    if rows:
        rid = next(iter(rows))
        back = cap.backward([rid])
        traced = {(n, r["k"]) for n, df in back.items() for r in df.select("k").collect()}
        assert traced == lineage[rid]
    for name in cap.sources:
        if data[name]:
            key = data[name][0][0]
            fwd = cap.forward(name, f"k = {key}")
            got_fwd = Counter(tuple(r[c] for c in expected_rel.columns) for r in fwd.collect())
            want_fwd = Counter(v for v, lin in expected_rel.rows if (name, key) in lin)
            assert got_fwd == want_fwd
