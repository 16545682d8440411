"""Python functions that declare their lineage (sp.lineage), captured: every mode on
every kind of function, against the lineage the declaration defines; the three checks
of lineage-semantics.md; wrong declarations caught with the function and row named."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench.checks import check_row
from sparkprov.capture.strategy import STRATEGIES

KINDS = [
    "mapInPandas",
    "mapInArrow",
    "applyInPandas",
    "applyInPandasIter",
    "applyInArrow",
    "applyInArrowIter",
    "cogroupPandas",
    "cogroupArrow",
]
MODES = [
    "full",
    "map",
    "map-vectorized",
    "rowwise",
    "payload",
    "payload-vectorized",
    "composite",
    "composite-vectorized",
]
SCHEMA = "k long, used array<long>"


def declared(kind: str, mode: str, keep: str = "pairs"):
    """A function of ``kind`` declaring ``mode`` lineage. Each output row holds the
    keys (``k`` of the input rows) its declaration names, in ``used``: the reference
    lineage, computed by the function itself from the same positions. ``keep``: of
    payload and composite lineage."""

    # everything nested: cloudpickle ships nested functions by value to the workers
    def back(i):  # map mode: odd outputs also read the input before them
        return [i, i - 1] if i % 2 else [i]

    def positions(ks, mode):
        n = len(ks)
        mode = mode.removesuffix("-vectorized") if mode != "map-vectorized" else mode
        if mode in ("full", "payload", "blackbox"):  # a filter, a neighbour, and a row from nothing
            rows = [[p, p - 1] if p and ks[p] % 2 == 0 else [p] for p in range(n) if ks[p] % 3]
            return rows + ([[]] if n >= 3 else [])
        if mode == "composite":  # the mapping, but every third row also reads the first
            return [[i, 0] if i % 3 == 0 and i else back(i) for i in range(n)]
        if mode == "map-vectorized":  # one input each, the row before
            return [[max(i - 1, 0)] for i in range(n)]
        return [back(i) if mode == "map" else [i] for i in range(n)]

    def rows_of(ks, rks=None):
        out = []
        for j, pos in enumerate(positions(ks, mode)):
            rpos = [j % len(rks)] if rks else []
            used = sorted([ks[p] for p in pos] + [rks[p] for p in rpos] if rks else [ks[p] for p in pos])
            # a payload spells the positions (composite: only where the mapping is overridden)
            payload = ",".join(map(str, pos)) + ("|" + ",".join(map(str, rpos)) if rks is not None else "")
            if mode.startswith("composite") and not (j % 3 == 0 and j):
                payload = None
            out.append({"k": used[0] if used else -1, "used": used, "l": pos, "r": rpos, "p": payload})
        return out

    def frame(rows, arrow, cogroup=False):
        data = {"k": [r["k"] for r in rows], "used": [r["used"] for r in rows]}
        if mode in ("full", "blackbox"):
            data["inputs"] = [r["l"] for r in rows]
            if cogroup:
                data["rights"] = [r["r"] for r in rows]
        if mode.startswith(("payload", "composite")):
            data["payload"] = [r["p"] for r in rows]
        if arrow:
            types = {"k": pa.int64(), "used": pa.list_(pa.int64()), "inputs": pa.list_(pa.int64())}
            types |= {"rights": types["inputs"], "payload": pa.string()}
            return pa.table({c: pa.array(v, types[c]) for c, v in data.items()})
        return pd.DataFrame({c: pd.Series(v, dtype=object if c != "k" else "int64") for c, v in data.items()})

    def keys(data):
        return [int(v) for v in (data.column("k").to_pylist() if hasattr(data, "num_rows") else data["k"])]

    if kind == "mapInPandas" and mode == "rowwise":

        def f(batches):  # streaming, batch by batch
            for pdf in batches:
                yield frame(rows_of(keys(pdf)), False).iloc[: len(pdf)]

    elif kind in ("mapInPandas", "mapInArrow"):
        arrow = kind == "mapInArrow"

        def f(batches):
            got = list(batches)
            ks = [k for b in got for k in keys(b)]
            out = frame(rows_of(ks), arrow)
            yield from (out.to_batches() if arrow else [out])

    elif kind in ("applyInPandas", "applyInArrow"):

        def f(data):
            return frame(rows_of(keys(data)), kind == "applyInArrow")

    elif kind == "applyInPandasIter":

        def f(key: tuple[Any, ...], batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            yield frame(rows_of([k for b in batches for k in keys(b)]), False)

    elif kind == "applyInArrowIter":

        def f(key: tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield from frame(rows_of([k for b in batches for k in keys(b)]), True).to_batches()

    else:

        def f(left, right):
            return frame(rows_of(keys(left), keys(right)), kind == "cogroupArrow", cogroup=True)

    cogroup = kind.startswith("cogroup")

    def decoded(i, payload, meta):  # "positions" or, for cogroup, "left|right"
        sides = [[int(p) for p in side.split(",") if p] for side in payload.split("|")]
        return tuple(sides) if cogroup else sides[0]

    def mapped(i, meta):
        return (back(i), [i % meta["input_rows"][1]] if meta["input_rows"][1] else []) if cogroup else back(i)

    def at_once(function):  # called once per batch: per side, a row's positions each
        def each(rows, *more):
            got = [function(int(i), *(m[k] for m in more[:-1]), more[-1]) for k, i in enumerate(rows)]
            return tuple(zip(*got)) if cogroup else got

        return each

    if mode == "payload":
        return sp.lineage("payload", column="payload", map_p=decoded, keep=keep)(f)
    if mode == "payload-vectorized":
        return sp.lineage("payload", column="payload", map_p=at_once(decoded), vectorized=True, keep=keep)(f)
    if mode == "composite":
        return sp.lineage("composite", column="payload", backward=mapped, map_p=decoded, keep=keep)(f)
    if mode == "composite-vectorized":
        return sp.lineage(
            "composite",
            column="payload",
            backward=at_once(mapped),
            map_p=at_once(decoded),
            vectorized=True,
            keep=keep,
        )(f)
    if mode in ("full", "blackbox"):
        return sp.lineage(mode, column=("inputs", "rights") if cogroup else "inputs")(f)
    if mode == "map-vectorized" and cogroup:  # the right input: row i modulo its size, or none

        def both_at_once(rows, meta):
            right = meta["input_rows"][1]
            return np.maximum(rows - 1, 0), (rows % right if right else [[]] * len(rows))

        return sp.lineage("map", backward=both_at_once, vectorized=True)(f)
    if mode == "map-vectorized":

        def forward_at_once(js, meta):
            n = meta["output_rows"]
            return [[i for i in (j, j + 1) if i < n and max(i - 1, 0) == j] for j in js.tolist()]

        return sp.lineage(
            "map", backward=lambda rows, meta: np.maximum(rows - 1, 0), forward=forward_at_once, vectorized=True
        )(f)
    if mode == "map" and cogroup:  # the right input: row i modulo its size

        def both(i, meta):
            right = meta["input_rows"][1]
            return back(i), [i % right] if right else []

        return sp.lineage("map", backward=both)(f)
    if mode == "map":

        def forward(j, meta):  # checked by the tracer: backward's inverse
            return [j, j + 1] if j % 2 == 0 and j + 1 < meta["output_rows"] else [j]

        return sp.lineage("map", backward=lambda i, meta: back(i), forward=forward)(f)
    return sp.lineage("rowwise")(f)


def query(kind: str, func, t, o):
    if kind.startswith("map"):
        frame = t.repartition(2, "g")
        return frame.mapInPandas(func, SCHEMA) if kind == "mapInPandas" else frame.mapInArrow(func, SCHEMA)
    by_g = t.groupBy("g")
    if kind.startswith("cogroup"):
        both = by_g.cogroup(o.groupBy("g"))
        return both.applyInPandas(func, SCHEMA) if kind == "cogroupPandas" else both.applyInArrow(func, SCHEMA)
    return by_g.applyInArrow(func, SCHEMA) if "Arrow" in kind else by_g.applyInPandas(func, SCHEMA)


@pytest.fixture
def inputs(spark, session):
    rng = random.Random(7)
    left = [(k, rng.choice("abc"), rng.randint(-5, 5)) for k in range(14)]
    right = [(100 + k, rng.choice("abd"), rng.randint(-5, 5)) for k in range(6)]
    t = session.source(spark.createDataFrame(left, "k long, g string, x long"), "t")
    o = session.source(spark.createDataFrame(right, "k long, g string, x long"), "o")
    return t, o


@pytest.mark.parametrize("kind", KINDS)
def test_every_mode_gives_the_lineage_declared(session, inputs, kind):
    _every_mode(session, *inputs, kind, "carried through the function")


@pytest.mark.parametrize("kind", ["mapInArrow", "applyInPandasIter", "cogroupPandas"])
def test_every_mode_over_rows_that_carry_no_rids(session, inputs, kind):
    # an aggregate's rows (the same rows: one per key) name their groups, not source
    # rows: the function's input is kept and numbered, then related to its lineage
    t, o = (df.groupBy("k", "g", "x").agg(F.count("*").alias("n")).drop("n") for df in inputs)
    _every_mode(session, t, o, kind, "kept, numbered")


@pytest.mark.parametrize("kind", KINDS)
def test_blackbox_answers_are_the_lineage_the_function_reports(session, inputs, kind):
    # stored per group or partition; backward and forward run the function again over
    # the traced rows' stored lineage, and answer as its full declaration does
    # (``used``: the keys of the input rows the function reports, the reference)
    t, o = inputs
    q = query(kind, declared(kind, "blackbox"), t, o)
    cap = session.capture(q, f"{kind}-blackbox")
    lines = cap.explain().splitlines()
    assert "1 coarse" in lines[0] and "coarse as stored: blackbox lineage of declared.<locals>.f" in lines[1], lines
    rows = cap.output.collect()
    assert sorted((r.k, r.used) for r in rows) == sorted((r.k, r.used) for r in q.collect())
    with pytest.warns(sp.CoarseLineageWarning, match="declared blackbox"):
        stored = cap.pairs("t").count()
    assert stored > sum(1 for r in rows for k in r.used if k < 100)  # the run again is what makes them exact
    traced = [r for r in rows if r.used]
    for row in traced[:1]:
        want = {("o" if k >= 100 else "t", k) for k in row.used}
        got = {(name, r.k) for name, df in cap.backward([row._sp_rid]).items() for r in df.collect()}
        assert got == want, (kind, row)
    key = next(k for r in traced[::-1] for k in r.used if k < 100)
    assert sorted(tuple(r.used) for r in cap.forward("t", f"k = {key}").collect()) == sorted(
        tuple(r.used) for r in rows if key in r.used
    )


def test_blackbox_functions_under_a_union(session, inputs):
    # the second input of a union runs in tasks numbered after the first's: its rows
    # still come out again from their own partition when run again
    t, o = inputs
    kinds = ["mapInArrow", "mapInPandas"]
    branches = [query(kind, declared(kind, "blackbox"), t, o).withColumn("kind", F.lit(kind)) for kind in kinds]
    cap = session.capture(branches[0].unionByName(branches[1]), "blackbox-union")
    rows = cap.output.collect()
    for kind in kinds:
        row = next(r for r in rows if r.kind == kind and r.used)
        got = {(name, r.k) for name, df in cap.backward([row._sp_rid]).items() for r in df.collect()}
        assert got == {("o" if k >= 100 else "t", k) for k in row.used}, (kind, row)


def test_blackbox_elsewhere_lazy_and_not_reproduced(session, inputs, monkeypatch):
    import uuid
    import warnings

    from sparkprov.capture import blackbox

    t, _ = inputs

    @sp.lineage("blackbox", column="inputs")
    def top(pdf):  # the largest x of the group, from the rows holding it
        best = pdf[pdf.x == pdf.x.max()]
        return best.head(1)[["g", "x"]].assign(inputs=[list(best.index)])

    want = {r.g: sorted(x.k for x in t.where(F.col("g") == r.g).where(F.col("x") == r.x).collect())
            for r in t.groupBy("g").agg(F.max("x").alias("x")).collect()}  # fmt: skip
    q = t.groupBy("g").applyInPandas(top, "g string, x long")
    lazy = session.capture(q, "top-lazy", strategy="lazy")  # built by running the query again: exact there
    assert "exact as declared: full lineage reported by" in lazy.explain() and "all exact" in lazy.explain()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sp.CoarseLineageWarning)
        assert {r.g: _traced_keys(lazy, r)["t"] for r in lazy.output.collect()} == want
    cap = session.capture(q, "top")
    row = cap.output.collect()[0]
    assert _traced_keys(cap, row)["t"] == want[row.g]
    assert all(df.count() == 0 for df in cap.backward([10**9]).values())  # no such output row: nothing
    monkeypatch.delitem(blackbox._HELD, cap._entry.id)  # as another process sees it: the stored lineage
    with pytest.warns(sp.CoarseLineageWarning, match="this process did not capture it"):
        assert _traced_keys(cap, row)["t"] == sorted(x.k for x in t.where(F.col("g") == row.g).collect())

    @sp.lineage("blackbox", column="inputs")
    def tagged(pdf):  # other values every run: its rows cannot be found again
        return pdf[["k"]].assign(tag=[uuid.uuid4().hex for _ in range(len(pdf))], inputs=list(pdf.index))

    cap = session.capture(t.groupBy("g").applyInPandas(tagged, "k long, tag string"), "tagged")
    with pytest.raises(sp.LineageDeclarationWrong, match=r"did not come out again .*tagged \(declared blackbox\)"):
        cap.backward([cap.output.first()._sp_rid])


def _every_mode(session, t, o, kind: str, strategy: str) -> None:
    if kind.startswith("cogroup"):
        with pytest.raises(sp.InvalidArgument, match="rowwise lineage, which needs one input"):
            session.capture(query(kind, declared(kind, "rowwise"), t, o), f"{kind}-rowwise")
    modes = [m for m in MODES if not (kind.startswith("cogroup") and m == "rowwise")]
    # every mode's function in one capture, a union whose rows say their mode (a capture
    # of a Python function is a second or more: its source copied, its output written by Spark)
    branches = [query(kind, declared(kind, mode), t, o).withColumn("mode", F.lit(mode)) for mode in modes]
    q = functools.reduce(lambda a, b: a.unionByName(b), branches)
    cap = session.capture(q, kind)
    rows = cap.output.collect()
    plain = sorted((r.mode, r.k, tuple(r.used)) for r in q.collect())
    assert sorted((r.mode, r.k, tuple(r.used)) for r in rows) == plain  # capture on and off agree
    lines = cap.explain().splitlines()
    assert "all exact" in lines[0], lines[0]
    declarations = [line for line in lines if "as declared:" in line]
    assert len(declarations) == len(modes), declarations
    for mode, line in zip(modes, declarations):  # the union's branches in order
        assert f"exact as declared: {mode.split('-')[0]} lineage" in line and strategy in line, (mode, line)
        assert ("vectorized" in line) == mode.endswith("vectorized"), (mode, line)
    for mode in modes:
        of_mode = [r for r in rows if r.mode == mode]
        assert len(of_mode) > 5, (kind, mode)
        # every row at once, then rows one by one: those with the fewest and the most
        # inputs and one between (a trace per row and source is a Spark job each)
        by_size = sorted(of_mode, key=lambda r: (len(r.used), r.k))
        for traced in (of_mode, *([r] for r in (by_size[0], by_size[len(of_mode) // 2], by_size[-1]))):
            want = {("o" if k >= 100 else "t", k) for r in traced for k in r.used}
            back = cap.backward([r._sp_rid for r in traced])
            got = {(name, r.k) for name, df in back.items() for r in df.collect()}
            assert got == want, (kind, mode, traced)


def test_declared_functions_over_an_outer_join(session, inputs):
    # each row carries a rid per source; the right one is missing where nothing matched
    t, o = inputs

    @sp.lineage("rowwise")
    def pairs(batches):
        yield from batches

    @sp.lineage("full", column="inputs")
    def largest(pdf):  # a row per group, from all its rows
        return pdf.head(1)[["g"]].assign(k=pdf.k.max(), inputs=[list(pdf.index)])

    joined = t.join(o.select("g", F.col("k").alias("ok")), "g", "left").select("k", "g", "ok")
    rows = joined.collect()
    assert any(r.ok is None for r in rows) and any(r.ok is not None for r in rows)
    cap = session.capture(joined.mapInArrow(pairs, "k long, g string, ok long"), "pairs")
    for row in cap.output.collect():
        back = _traced_keys(cap, row)
        assert back == {"t": [row.k]} | ({} if row.ok is None else {"o": [row.ok]}), row
    cap = session.capture(joined.groupBy("g").applyInPandas(largest, "g string, k long"), "largest")
    for row in cap.output.collect():
        back = _traced_keys(cap, row)
        want = {n: sorted(r.k for r in df.where(F.col("g") == row.g).collect()) for n, df in (("t", t), ("o", o))}
        assert back == {n: ks for n, ks in want.items() if ks}, row


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_declared_functions_under_every_strategy(session, inputs, strategy):
    # the rids carried through the function, then grouped by an aggregate above it
    t, _ = inputs

    @sp.lineage("full", column="inputs")
    def pairs(pdf):  # each row with the next one of its group
        return pdf.assign(inputs=[[i, i + 1] if i + 1 < len(pdf) else [i] for i in range(len(pdf))])

    q = t.groupBy("g").applyInPandas(pairs, "k long, g string, x long").groupBy("g").agg(F.max("x").alias("m"))
    cap = session.capture(q, f"pairs-{strategy}", strategy=strategy)
    for row in cap.output.collect():
        want = sorted(r.k for r in t.where(F.col("g") == row.g).collect())
        assert _traced_keys(cap, row) == {"t": want}, (strategy, row)


def _traced_keys(cap, row) -> dict[str, list[int]]:
    # the keys of the rows traced back from ``row``, per source that has any
    found = {n: sorted(r.k for r in df.collect()) for n, df in cap.backward([row._sp_rid]).items()}
    return {n: ks for n, ks in found.items() if ks}


def test_declared_functions_pass_the_three_checks(session, spark):
    rng = random.Random(3)
    rows = [(k, rng.choice("ab"), rng.randint(0, 50)) for k in range(12)]
    t = session.source(spark.createDataFrame(rows, "k long, g string, x long"), "t")

    @sp.lineage("full", column="inputs")
    def top2(pdf):  # the two largest x of the group and their sum
        best = pdf.nlargest(2, ["x", "k"])
        return best.head(1)[["g"]].assign(s=best.x.sum(), inputs=[list(best.index)])

    @sp.lineage("rowwise")
    def doubled(batches):
        for pdf in batches:
            yield pdf.assign(x=pdf.x * 2)

    queries = {
        "top2": lambda src: src.groupBy("g").applyInPandas(top2, "g string, s long"),
        "doubled": lambda src: src.mapInPandas(doubled, "k long, g string, x long").where("x > 20"),
        # an aggregate over the function's rows, each with the rids of its inputs
        "total": lambda src: src.groupBy("g").applyInPandas(top2, "g string, s long").groupBy().sum("s"),
    }
    for name, build in queries.items():
        cap = session.capture(build(t), name)
        for row in cap.output.collect():
            problems = check_row(cap, row._sp_rid, lambda restricted, build=build: build(restricted["t"]))
            assert problems == [], (name, row)
        traced = {r.k for r in cap.backward([r._sp_rid for r in cap.output.collect()], "t").collect()}
        if name in ("top2", "total"):  # reference: per group, the two rows of largest (x, k)
            ref = set()
            for g in "ab":
                ref |= {k for _, k in sorted(((x, k) for k, gg, x in rows if gg == g), reverse=True)[:2]}
        else:
            ref = {k for k, _, x in rows if x * 2 > 20}
        assert traced == ref, name


def test_wrong_declarations_fail_the_capture(session, spark):
    t = session.source(spark.createDataFrame([(k, "a") for k in range(4)], "k long, g string"), "t")

    @sp.lineage("map", backward=lambda i, meta: [i + 10])
    def shifted(pdf):
        return pdf

    @sp.lineage("full", column="inputs")
    def unreported(pdf):
        return pdf

    @sp.lineage("rowwise")
    def halved(batches):
        for pdf in batches:
            yield pdf.head(len(pdf) // 2)

    @sp.lineage("payload", column="span", map_p=lambda i, span, meta: range(*span))
    def unreadable(pdf):  # a payload map_p cannot read: the capture fails, not a later query
        return pdf.assign(span="all")

    by_g = t.groupBy("g")
    cases = [
        (
            by_g.applyInPandas(unreadable, "k long, g string"),
            r"'.*unreadable' \(payload lineage\), output row 0 of the group of key \('a',\): "
            r"its map_p \(on payload 'all'\) raised TypeError",
        ),
        (
            by_g.applyInPandas(shifted, "k long, g string"),
            r"'.*shifted' \(map lineage\), output row 0 of the group of key \('a',\): "
            "it names input position 10, but the function had received 4 rows",
        ),
        (by_g.applyInPandas(unreported, "k long, g string"), "in the group of key .* without column 'inputs'"),
        (
            t.coalesce(1).mapInPandas(halved, "k long, g string"),
            r"'.*halved' \(rowwise lineage\) made 2 rows of 4 input rows in partition 0",
        ),
    ]
    for i, (q, message) in enumerate(cases):
        with pytest.raises(sp.LineageDeclarationWrong, match=message):
            session.capture(q, f"wrong{i}")
        assert session.captures() == []  # nothing half-made is kept
    # a run without capture is the user's own: the declaration is not checked there
    assert t.groupBy("g").applyInPandas(shifted, "k long, g string").count() == 4


def test_why_gives_a_declared_functions_inputs_together(spark, session):
    t = session.source(spark.createDataFrame([(1, "a", 5), (2, "a", 7), (3, "b", 1)], "k long, g string, x long"), "t")

    @sp.lineage("full", column="inputs")
    def total(pdf):
        return pdf.head(1)[["g"]].assign(s=pdf.x.sum(), inputs=[list(pdf.index)])

    cap = session.capture(t.groupBy("g").applyInPandas(total, "g string, s long"), "sums", witnesses=True)
    (a,) = [r._sp_rid for r in cap.output.where("g = 'a'").collect()]
    (why,) = cap.why([a]).collect()  # one witness: both rows of the group, used together
    rids = {r._sp_rid for r in cap.backward([a], "t").collect()}
    assert len(rids) == 2
    assert sorted((w.source, w.rid) for w in why.witness) == sorted(("t", r) for r in rids)


def test_undeclared_functions_stay_coarse(session, spark):
    t = session.source(spark.createDataFrame([(k,) for k in range(6)], "k long"), "t")
    cap = session.capture(t.coalesce(1).mapInPandas(lambda bs: (b[b.k > 3] for b in bs), "k long"), "plain")
    assert "1 coarse" in cap.explain().splitlines()[0]
    assert cap.backward("k = 5", "t").count() == 6


def test_verify_flags_a_declaration_its_rows_do_not_reproduce(session, spark):
    t = session.source(spark.createDataFrame([(k, float(k)) for k in range(8)], "k long, x double"), "t")

    @sp.lineage("rowwise")
    def centred(batches):  # wrong: each row reads its batch's mean too
        for pdf in batches:
            yield pdf.assign(x=pdf.x - pdf.x.mean())

    @sp.lineage("rowwise")
    def doubled(batches):
        for pdf in batches:
            yield pdf.assign(x=pdf.x * 2)

    wrong = session.capture(t.coalesce(1).mapInPandas(centred, "k long, x double"), "centred")
    report = wrong.verify(sample=3)
    assert not report.ok and len(report.checked) == 3
    assert "did not come out again from their lineage" in str(report)
    right = session.capture(t.coalesce(1).mapInPandas(doubled, "k long, x double"), "doubled")
    assert right.verify(rows=[0, 5]).ok
    with pytest.raises(sp.InvalidArgument, match="list of output rids"):
        right.verify(rows="k = 1")


def test_python_udfs_declare_only_the_lineage_they_have(session, spark):
    from pyspark.sql import functions as F

    t = session.source(spark.createDataFrame([(k, "ab"[k % 2]) for k in range(6)], "k long, g string"), "t")

    @sp.lineage("rowwise")  # what a scalar UDF's lineage is anyway: said, and kept exact
    def plus(k: pd.Series) -> pd.Series:
        return k + 1

    cap = session.capture(t.select(F.pandas_udf(plus, "long")("k").alias("k1")), "plus")
    assert [r.k for r in cap.backward("k1 = 3", "t").collect()] == [2]

    @sp.lineage("full", column="inputs")
    def shifted(k):
        return k

    @sp.lineage("map", backward=lambda i, meta: [0])
    def first(v: pd.Series) -> float:
        return float(v.iloc[0])

    refused = [
        (t.select(F.udf(shifted, "long")("k")), r"'.*shifted' declares full lineage, but it is a scalar Python UDF"),
        (t.groupBy("g").agg(F.pandas_udf(first, "double")("k")), "declares map lineage, but it is an aggregate"),
    ]
    for q, message in refused:  # a declaration capture would not follow is refused, not ignored
        with pytest.raises(sp.InvalidArgument, match=message):
            session.capture(q, "refused")


def test_declared_python_udtfs(spark, session, inputs):
    # a table argument partitioned by g (SQL and DataFrame forms) and a LATERAL call
    # with terminate(): coarse undeclared, exact as declared; positions count the
    # eval() calls of the partition
    from pyspark.sql import Row
    from pyspark.sql.functions import udtf

    t, _ = inputs
    rows = {r.k: r for r in t.collect()}
    t.createOrReplaceTempView("sp_udtf_t")

    def positive_sum(mode):
        @udtf(returnType="g string, total long")
        @sp.lineage(mode, column="inputs")
        class PositiveSum:  # per partition: the sum of the positive x, from those rows
            def __init__(self):
                self.g, self.total, self.used, self.calls = None, 0, [], 0

            def eval(self, row: Row):
                self.g = row["g"]
                if row["x"] > 0:
                    self.total, self.used = self.total + row["x"], [*self.used, self.calls]
                self.calls += 1

            def terminate(self):
                yield Row(g=self.g, total=self.total, inputs=self.used)

        return PositiveSum

    want = {g: {("t", k) for k, r in rows.items() if r.g == g and r.x > 0} for g in {r.g for r in rows.values()}}
    spark.udtf.register("sp_positive_sum", positive_sum("full"))
    cap = session.capture(spark.sql("SELECT * FROM sp_positive_sum(TABLE(sp_udtf_t) PARTITION BY g)"), "udtf-full")
    assert {r.g: {("t", k) for k in _traced_keys(cap, r).get("t", [])} for r in cap.output.collect()} == want
    assert "exact as declared: full lineage reported by" in cap.explain()
    blackbox = positive_sum("blackbox")(t.asTable().partitionBy("g"))
    cap = session.capture(blackbox, "udtf-blackbox")
    assert "coarse as stored: blackbox lineage" in cap.explain()
    assert {r.g: {("t", k) for k in _traced_keys(cap, r).get("t", [])} for r in cap.output.collect()} == want

    @udtf(returnType="k long, n long")
    @sp.lineage("map", backward=lambda i, meta: [i] if i < meta["input_rows"] else list(range(meta["input_rows"])))
    class Echo:  # each row back, then their count: from every row of the partition
        def __init__(self):
            self.n = 0

        def eval(self, k: int):
            self.n += 1
            yield k, 1

        def terminate(self):
            yield -1, self.n

    spark.udtf.register("sp_echo", Echo)
    cap = session.capture(spark.sql("SELECT u.* FROM sp_udtf_t t, LATERAL sp_echo(t.k) u"), "udtf-map")
    out = cap.output.collect()
    assert sorted(r.k for r in out if r.k >= 0) == sorted(rows) and sum(r.n for r in out if r.k < 0) == len(rows)
    for r in out:
        traced = _traced_keys(cap, r)["t"]
        assert traced == [r.k] if r.k >= 0 else len(traced) == r.n, r

    @udtf(returnType="g string")
    @sp.lineage("full", column="inputs")
    class TooFar:
        def eval(self, row: Row):
            yield row["g"], [5]

    with pytest.raises(sp.LineageDeclarationWrong, match="TooFar"):
        session.capture(TooFar(t.asTable()), "udtf-wrong")

    @udtf
    @sp.lineage("full", column="inputs")
    class Analyzed:  # its constructor gets analyze()'s result, under capture too
        def __init__(self, analyze_result):
            self.prefix, self.calls = analyze_result.schema.fieldNames()[0], 0

        @staticmethod
        def analyze(row):
            from pyspark.sql.functions import AnalyzeResult
            from pyspark.sql.types import StructType

            return AnalyzeResult(StructType().add("named", "string"))

        def eval(self, row: Row):
            self.calls += 1
            yield f"{self.prefix}-{row['k']}", [self.calls - 1]  # the row it was called on

    cap = session.capture(Analyzed(t.asTable()), "udtf-analyzed")
    for r in cap.output.collect():
        assert _traced_keys(cap, r) == {"t": [int(r.named.split("-")[1])]}, r
    over_constants = session.capture(spark.sql("SELECT * FROM sp_echo(5)"), "udtf-constants")
    assert sorted(tuple(r)[:-1] for r in over_constants.output.collect()) == [(-1, 1), (5, 1)]

    @udtf(returnType="g string, x long")
    @sp.lineage("full", column="inputs")
    class Positive:  # the groups whose sum is positive, each from the row eval() got
        def __init__(self):
            self.calls = 0

        def eval(self, row: Row):
            self.calls += 1
            if row["x"] > 0:
                yield row["g"], row["x"], [self.calls - 1]

    # over an aggregate's rows (they name groups, not source rows), and with witnesses:
    # the input kept and numbered, each output row traced through its group
    sums = t.groupBy("g").agg(F.sum("x").alias("x"))
    want = {r.g: sorted(k for k, v in rows.items() if v.g == r.g) for r in sums.collect() if r.x > 0}
    assert want
    for witnesses in (False, True):
        cap = session.capture(Positive(sums.asTable()), f"udtf-groups-{witnesses}", witnesses=witnesses)
        assert {r.g: _traced_keys(cap, r)["t"] for r in cap.output.collect()} == want
        assert "exact as declared: full lineage" in cap.explain() and "kept, numbered" in cap.explain()
    row = cap.output.first()
    (why,) = cap.why([row._sp_rid]).collect()  # one witness: the group's rows, summed together
    assert sorted(rows[r.k].k for r in cap.backward([row._sp_rid], "t").collect()) == want[row.g]
    assert {w.rid for w in why.witness} == {r._sp_rid for r in cap.backward([row._sp_rid], "t").collect()}
