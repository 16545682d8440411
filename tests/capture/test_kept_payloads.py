"""Payloads kept for the query (``sp.lineage(..., keep="payload")``), captured: every
payload and composite declaration, on every kind of function that keeps them, gives
the lineage the declaration defines, by both engines, backward and forward, also
under an aggregate and a window; what is stored is a row per output row, not its input
rows; the store passes its check and answers from a new session; elsewhere (cogroup,
witnesses) the pairs are kept and ``explain()`` says why."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench.capture import stored_lineage_bytes
from sparkprov.capture.strategy import STRATEGIES
from sparkprov.functions.declare import declaration_of
from sparkprov.store.catalog import Store
from sparkprov.store.check import check_store

from .test_declared_functions import declared, inputs, query  # noqa: F401 - inputs: a fixture

KEPT = ["payload", "payload-vectorized", "composite", "composite-vectorized"]


def _union(kind: str, t, o, keep: str = "payload"):
    branches = [query(kind, declared(kind, m, keep=keep), t, o).withColumn("mode", F.lit(m)) for m in KEPT]
    return functools.reduce(lambda a, b: a.unionByName(b), branches)


def _keys(frames: dict) -> set[tuple[str, int]]:
    return {(name, r.k) for name, df in frames.items() for r in df.collect()}


def _used(rows) -> set[tuple[str, int]]:
    return {("o" if k >= 100 else "t", k) for r in rows for k in r.used}


@pytest.mark.parametrize(
    ("kind", "aggregated"),
    [("mapInPandas", False), ("mapInArrow", True), ("applyInArrow", False), ("applyInPandasIter", True)],
)
def test_kept_payloads_give_the_lineage_declared(session, inputs, kind, aggregated):  # noqa: F811
    t, o = inputs
    if aggregated:  # rows that carry no rids: their lineage goes through the aggregate's groups
        t = t.groupBy("k", "g", "x").agg(F.count("*").alias("n")).drop("n")
    q = _union(kind, t, o)
    cap = session.capture(q, f"{kind}-kept")
    rows = cap.output.collect()
    plain = sorted((r.mode, r.k, tuple(r.used)) for r in q.collect())
    assert sorted((r.mode, r.k, tuple(r.used)) for r in rows) == plain
    lines = cap.explain().splitlines()
    declarations = [line for line in lines if "as declared:" in line]
    assert "all exact" in lines[0] and len(declarations) == len(KEPT), lines
    for mode, line in zip(KEPT, declarations):
        assert f"exact as declared: {mode.split('-')[0]} lineage" in line, (mode, line)
        assert "kept as payloads, run when a trace asks" in line and "payloads kept, a row per output row" in line
    for mode in KEPT:
        of_mode = sorted((r for r in rows if r.mode == mode), key=lambda r: (len(r.used), r.k))
        assert len(of_mode) > 5, mode
        for traced in (of_mode, of_mode[:1], of_mode[-1:]):
            got = _keys(cap.backward([r._sp_rid for r in traced]))
            assert got == _used(traced), (kind, mode, traced)
    # Spark makes the sets of the rows it traces in this process, except forward through
    # a kept input's sets (aggregated), where its tasks make every set
    engines = ("embedded", "spark") if kind == "mapInPandas" or aggregated else ("auto",)
    key = max(k for r in rows for k in r.used if k < 100)
    want = sorted((r.mode, tuple(r.used)) for r in rows if key in r.used)
    for engine in engines:
        last = [r for r in rows if r.mode == "payload"][-1:]
        assert _keys(cap.backward([r._sp_rid for r in last], engine=engine)) == _used(last), engine
        got = sorted((r.mode, tuple(r.used)) for r in cap.forward("t", f"k = {key}", engine=engine).collect())
        assert got == want, engine


def test_kept_payloads_under_an_aggregate_and_a_window(session, inputs):  # noqa: F811
    # the function's rows' sets collected by an aggregate, and referred to by a window's shared side
    t, o = inputs
    f = declared("applyInPandas", "payload", keep="payload")
    rows = query("applyInPandas", f, t, o)
    total = rows.groupBy().agg(F.sum(F.size("used")).alias("n"))
    windowed = rows.withColumn("n", F.count("*").over(Window.partitionBy()))
    for name, q in (("kept-total", total), ("kept-window", windowed)):
        cap = session.capture(q, name)
        out = cap.output.collect()
        every = _used(rows.collect())
        for engine in ("embedded", "spark"):
            assert _keys(cap.backward([r._sp_rid for r in out[:1]], engine=engine)) == every, (name, engine)


@sp.lineage("payload", column="lo", map_p=lambda i, lo, meta: range(lo, i + 1), keep="payload")
def running(pdf):  # a running total per group, in the order its rows came: row i from rows 0..i
    return pdf.assign(s=pdf.x.cumsum(), lo=0)[["k", "s", "lo"]]


def _sums_hold(cap, t, ks) -> dict[int, set[int]]:
    """Each output row of key ``ks``: its traced rows, whose x add up to its total."""
    x = {r.k: r.x for r in t.collect()}
    found = {}
    for row in cap.output.where(F.col("k").isin(ks)).collect():
        traced = {k for _, k in _keys(cap.backward([row._sp_rid]))}
        assert row.k in traced and sum(x[k] for k in traced) == row.s, (row, traced)
        found[row.k] = traced
    return found


def test_kept_payloads_store_a_row_per_output_row_and_answer_elsewhere(spark, session):
    rows = [(k, k % 2, k % 7) for k in range(2000)]
    t = session.source(spark.createDataFrame(rows, "k long, g long, x long"), "t")
    decl = running.__sparkprov_lineage__
    as_pairs = sp.lineage("payload", column="lo", map_p=decl.map_p)(decl.function)
    caps = {
        keep: session.capture(t.groupBy("g").applyInPandas(f, "k long, s long"), f"running-{keep}")
        for keep, f in (("payload", running), ("pairs", as_pairs))
    }
    # 1,000 rows a group: 1,001,000 pairs, or 2,000 payload rows and 2,000 input rows' sets
    sizes = {keep: stored_lineage_bytes(cap._entry) for keep, cap in caps.items()}
    # a sparkprov from before kept payloads would read the function's rows as having no lineage
    assert caps["payload"]._entry.features == ["kept-payloads"] and caps["pairs"]._entry.features is None
    assert sizes["payload"] * 3 < sizes["pairs"], sizes
    ks = [0, 1, 57, 1200, 1998, 1999]
    traced = {keep: _sums_hold(cap, t, ks) for keep, cap in caps.items()}
    assert traced["payload"] == traced["pairs"] and max(map(len, traced["payload"].values())) > 1
    assert check_store(Store(session.store.root)).ok
    again = sp.LineageSession(spark, store=session.store.root)  # as another process opens the store
    reopened = again.load("running-payload")
    row = reopened.output.where("k = 57").first()
    assert {k for _, k in _keys(reopened.backward([row._sp_rid], engine="spark"))} == traced["payload"][57]


def test_payloads_kept_only_where_they_can_be(session, inputs):  # noqa: F811
    t, o = inputs
    cap = session.capture(query("cogroupPandas", declared("cogroupPandas", "payload", keep="payload"), t, o), "co")
    assert "keep='payload' not taken: cogrouped functions keep pairs" in cap.explain()
    rows = cap.output.collect()
    assert _keys(cap.backward([r._sp_rid for r in rows])) == _used(rows)
    cap = session.capture(t.groupBy("g").applyInPandas(running, "k long, s long"), "running-why", witnesses=True)
    assert "keep='payload' not taken: not with witnesses" in cap.explain()
    _sums_hold(cap, t, [r.k for r in t.collect()][:4])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kept_payloads_under_every_strategy(session, inputs, strategy):  # noqa: F811
    # the function's rows grouped by an aggregate above it: each group's traced rows are
    # those the declaration names for the group's rows, whatever the strategy
    t, o = inputs
    f = declared("mapInPandas", "composite-vectorized", keep="payload")
    rows = query("mapInPandas", f, t, o)
    q = rows.groupBy(F.col("k") % 3).agg(F.collect_list("used").alias("useds"))
    cap = session.capture(q, f"kept-{strategy}", strategy=strategy)
    # a lazy capture runs the query again to build its lineage, reading payloads as the function runs
    said = "not taken: the query is run again" if strategy == "lazy" else "kept as payloads, run when a trace asks"
    assert "all exact" in cap.explain() and said in cap.explain(), cap.explain()
    for row in cap.output.collect():
        want = {("t", k) for used in row.useds for k in used}
        assert _keys(cap.backward([row._sp_rid])) == want, (strategy, row)


def _pair_sums(pdf):
    # per group, in order of k: each row's x plus its predecessor's; the payload names
    # both rows' positions (its own first), so the function needs no order of arrival
    pdf = pdf.sort_values("k")
    pos, x = pdf.index.to_numpy(), pdf.x.to_numpy()
    s = x + np.concatenate([[0], x[:-1]])
    payload = [[int(pos[0])]] + [[int(a), int(b)] for a, b in zip(pos[1:], pos[:-1])]
    return pd.DataFrame({"k": pdf.k.to_numpy(), "s": s, "p": payload})


def test_verify_flags_kept_payloads_that_miss_rows(spark, session):
    # the re-execution check over kept payloads: a declaration naming only a row's own
    # position (not its predecessor's) is flagged, row by row; the right one passes
    t = session.source(spark.createDataFrame([(k, k % 2, k % 7 + 1) for k in range(40)], "k long, g long, x long"), "v")
    caps = {}
    for name, map_p in (("right", lambda i, p, meta: p), ("wrong", lambda i, p, meta: p[:1])):
        f = sp.lineage("payload", column="p", map_p=map_p, keep="payload")(_pair_sums)
        caps[name] = session.capture(t.groupBy("g").applyInPandas(f, "k long, s long"), f"pair-sums-{name}")
    for name, cap in caps.items():
        assert "kept as payloads" in cap.explain(), name
        rids = [r._sp_rid for r in cap.output.where("k in (0, 1, 9, 30, 39)").orderBy("k").collect()]
        report = cap.verify(rows=rids)
        if name == "right":
            assert report.ok, report
        else:  # rows 0 and 1 have no predecessor: their lineage is right either way
            assert sorted(report.failed) == sorted(rids[2:]), report


def test_calls_are_told_apart_whatever_ids_their_rows_carry(spark, session):
    # two calls whose first rows carry the same ids: each row of t beside j = 0 and 1,
    # grouped by j (both groups start with a row of t's, the same one in either order
    # of the join's sides); and groups of t whose first rows a workload's predicate
    # leaves without a rid. Each call's rows get its own lineage all the same
    t = session.source(spark.createDataFrame([(k, k % 3, k % 5) for k in range(30)], "k long, g long, x long"), "calls")
    two = session.source(spark.range(2).select(F.col("id").alias("j")), "two")
    f = sp.lineage("payload", column="p", map_p=lambda i, p, meta: p, keep="payload")(_pair_sums)
    where = {"sources": ["calls"], "where": {"calls": "x > 1"}}
    cases = [
        (t.crossJoin(two).groupBy("j"), None, 1),
        (two.crossJoin(t).groupBy("j"), None, 1),
        (t.groupBy("g"), where, 3),  # x > 1 leaves out k = 0 and 1, each its group's first
    ]
    for grouped, workload, step in cases:
        cap = session.capture(grouped.applyInPandas(f, "k long, s long"), "calls-apart", workload=workload)
        kept = {r.k for r in t.collect() if workload is None or r.x > 1}
        # each group's first rows (whose calls were taken for one another) and a later one
        rows = cap.output.where("k in (0, 1, 2, 3, 4, 29)").orderBy("k").collect()
        for n, row in enumerate(rows):
            want = {k for k in (row.k, row.k - step) if k >= 0 and k in kept}
            for engine in ("embedded", "spark") if n % 3 == 0 else ("embedded",):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", sp.RestrictedLineageWarning)
                    traced = cap.backward([row._sp_rid], "calls", engine=engine)
                assert {r.k for r in traced.collect()} == want, (workload, engine, row)


def test_a_capture_chooses_how_each_function_keeps_its_payloads(session, inputs):  # noqa: F811
    # keep= over the declarations: payloads kept for a function declared keep="pairs",
    # pairs for one declared keep="payload"; the same lineage either way
    t, o = inputs
    by_pairs, by_payload = declared("applyInPandas", "payload"), declared("mapInPandas", "composite", keep="payload")
    for f, name in ((by_pairs, "by_pairs"), (by_payload, "by_payload")):
        declaration_of(f).function.__qualname__ = name  # keep= names functions as explain() does
    names = [declaration_of(f).name for f in (by_pairs, by_payload)]
    q = query("applyInPandas", by_pairs, t, o).unionByName(query("mapInPandas", by_payload, t, o))
    chosen = {names[0]: "payload", names[1]: "pairs"}
    for keep, kept in ((None, {names[1]}), (chosen, {names[0]})):
        cap = session.capture(q, "keep-chosen", keep=keep)
        lines = [line for line in cap.explain().splitlines() if "as declared:" in line]
        assert len(lines) == 2, lines
        for name, line in zip(sorted(names), sorted(lines, key=lambda s: s.split(" lineage of ")[1])):
            assert ("kept as payloads" in line) == (name in kept), (keep, line)
        rows = cap.output.collect()
        for row in rows[:3] + rows[-3:]:
            assert _keys(cap.backward([row._sp_rid])) == _used([row]), (keep, row)


def test_keep_names_only_functions_whose_payloads_it_can_keep(session, inputs):  # noqa: F811
    t, o = inputs
    mapped = declared("applyInPandas", "map")
    q = query("applyInPandas", mapped, t, o)
    with pytest.raises(sp.InvalidArgument, match="'nowhere': no function of this query declares"):
        session.capture(q, "keep-wrong", keep={"nowhere": "payload"})
    with pytest.raises(sp.InvalidArgument, match="declares map lineage; keep chooses how payload and composite"):
        session.capture(q, "keep-wrong", keep={declaration_of(mapped).name: "payload"})
    with pytest.raises(sp.InvalidArgument, match="'pairs' or 'payload', not {'x': 'ids'}"):
        session.capture(q, "keep-wrong", keep={"x": "ids"})
    with pytest.raises(sp.InvalidArgument, match="strategy='lazy' stores nothing"):
        session.capture(q, "keep-wrong", keep={"x": "pairs"}, strategy="lazy")
    assert "keep-wrong" not in {c.name for c in session.captures()}
