"""Deletion propagation (Lipstick, Definition 4.2) against re-running the workflow:
random small workflows of modules built from operators capture follows, some with
state carried across executions, run once on Spark, tracked; deleting any base tuple
(a workflow input's row or a state table's initial row) removes, per the graph, exactly
the rows a run without it no longer makes, and leaves every other row (values included)
as it was, except the rows the graph says may change (below an aggregate that lost
rows). Runs without a tuple are computed here, by the modules' operators on lists
(checked first to give what Spark gave with every tuple), so every tuple is tried;
a tuple the graph has no node for must change nothing."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pyspark.sql import functions as F

import sparkprov as sp

KEYS = ["a", "b", "c", "d"]


def _templates():
    # every template keeps the schema (k string, v long); filters and joins read k alone,
    # which no module computes, so a deleted row changes values but never which rows pass
    one = {
        "filter": lambda x: x.where(F.col("k") != "c"),
        "project": lambda x: x.select("k", (F.col("v") + 1).alias("v")),
        "distinct": lambda x: x.select("k", F.lit(0).cast("long").alias("v")).distinct(),
        "sum": lambda x: x.groupBy("k").agg(F.sum("v").cast("long").alias("v")),
        "count": lambda x: x.groupBy("k").agg(F.count("*").alias("v")),
    }
    two = {
        "join": lambda x, y: x.join(y.withColumnRenamed("v", "w"), "k").select(
            "k", (F.col("v") + F.col("w")).alias("v")
        ),
        "union": lambda x, y: x.unionByName(y),
    }
    return one, two


def _module(op: str, inputs: list[str], output: str, state: str | None):
    """A module applying template ``op`` to its inputs; with ``state``, its output also
    meets the state table (rows whose key it has seen, or all of them), and its rows
    are added to the state."""
    one, two = _templates()

    def function(**frames):
        data = [frames[n] for n in inputs]
        out = two[op](*data) if op in two else one[op](data[0])
        if state is None:
            return out
        kept = frames[state]
        seen = out.unionByName(kept) if op == "union" else out.join(kept.select("k").distinct(), "k")
        return {output: seen, state: kept.unionByName(out)}

    function.__name__ = f"{output}_{op}"
    return function


def _specs(seed: int) -> tuple[list[tuple], dict[str, list]]:
    """The modules of a random workflow of three or four over inputs src0 and src1
    (``op, inputs, output, state``), and its state tables' initial rows."""
    rnd = random.Random(seed)
    one, two = _templates()
    available, specs, initial = ["src0", "src1"], [], {}
    for i in range(rnd.choice([3, 4])):
        op = rnd.choice(sorted(one) + sorted(two))
        inputs = rnd.sample(available, 2) if op in two else [rnd.choice(available)]
        state = f"s{i}" if rnd.random() < 0.5 else None
        if state:
            initial[state] = [(rnd.choice(KEYS), rnd.randrange(10)) for _ in range(rnd.randrange(1, 4))]
        specs.append((op, inputs, f"d{i}", state))
        available.append(f"d{i}")
    return specs, initial


def build(wf: sp.Workflow, seed: int, spark) -> list[str]:
    """The workflow of ``_specs(seed)`` declared in ``wf``; its outputs."""
    specs, initial = _specs(seed)
    for op, inputs, output, state in specs:
        if state:
            wf.state(state, spark.createDataFrame(initial[state], "k string, v long"))
        wf.module(inputs=inputs, outputs=[output], state=[state] if state else [])(_module(op, inputs, output, state))
    return [output for _, _, output, _ in specs]


def _inputs(seed: int, execution: int) -> dict[str, list]:
    rnd = random.Random(seed * 100 + execution)
    return {s: [(rnd.choice(KEYS), rnd.randrange(10)) for _ in range(rnd.randrange(2, 5))] for s in ("src0", "src1")}


def _by_key(rows: list) -> dict:
    found: dict = {}
    for k, v in rows:
        found.setdefault(k, []).append(v)
    return found


# the templates on lists of (k, v) rows, as Spark computes them
_ONE = {
    "filter": lambda x: [r for r in x if r[0] != "c"],
    "project": lambda x: [(k, v + 1) for k, v in x],
    "distinct": lambda x: sorted({(k, 0) for k, _ in x}),
    "sum": lambda x: [(k, sum(vs)) for k, vs in _by_key(x).items()],
    "count": lambda x: [(k, len(vs)) for k, vs in _by_key(x).items()],
}
_TWO = {
    "join": lambda x, y: [(k, v + w) for k, v in x for k2, w in y if k == k2],
    "union": lambda x, y: x + y,
}


def _reference(seed: int, inputs: dict, states: dict) -> dict[tuple[str, int], Counter]:
    """What every module writes in each execution, computed here: ``inputs``,
    ``{(src, execution): rows}``; ``states``, the initial rows of each state table."""
    specs, _ = _specs(seed)
    state = dict(states)
    made: dict[tuple[str, int], Counter] = {}
    for e in sorted({e for _, e in inputs}):
        data = {n: rows for (n, at), rows in inputs.items() if at == e}
        for op, names, output, kept_name in specs:
            args = [data[n] for n in names]
            out = _TWO[op](*args) if op in _TWO else _ONE[op](args[0])
            if kept_name:
                kept = state[kept_name]
                seen = out + kept if op == "union" else [r for r in out if r[0] in {k for k, _ in kept}]
                state[kept_name] = kept + out
                made[kept_name, e] = Counter(state[kept_name])
                out = seen
            data[output] = out
            made[output, e] = Counter(out)
    return made


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_deleting_a_tuple_removes_what_running_without_it_no_longer_makes(spark, tmp_path, seed):
    wf = sp.Workflow("random", sp.LineageSession(spark, store=tmp_path / "tracked"))
    outputs = build(wf, seed, spark)
    executions = 2
    for e in range(1, executions + 1):
        wf.run(**{n: spark.createDataFrame(rows, "k string, v long") for n, rows in _inputs(seed, e).items()})
    g = wf.graph()
    state_names = sorted({s for m in wf.modules.values() for s in m.state})
    # what each dataset held: (dataset, version) -> {rid: (k, v)}; version 0, a state's initial rows
    read = [(s, 0) for s in state_names] + [(n, e) for n in ("src0", "src1") for e in range(1, executions + 1)]
    read += [(name, r.execution) for r in wf.executions for inv in r.invocations for name in inv.writes]
    held = {}
    for name, version in read:
        rows = wf.dataset(name, version).collect()
        held[(name, version)] = {row["_sp_rid"]: (row["k"], row["v"]) for row in rows}

    def without(base: dict | None) -> dict[tuple[str, int], Counter]:
        """The reference run without ``base`` (a source or state tuple), or with everything."""
        gone = (base["dataset"], base["version"], base["rid"]) if base else None

        def rows(name: str, version: int) -> list:
            return [v for rid, v in held[(name, version)].items() if (name, version, rid) != gone]

        inputs = {(n, e): rows(n, e) for n in ("src0", "src1") for e in range(1, executions + 1)}
        return _reference(seed, inputs, {s: rows(s, 0) for s in state_names})

    # the reference computes what Spark computed: it may stand for runs without a tuple
    full = without(None)
    for key, rows in held.items():
        if key in full:
            assert Counter(rows.values()) == full[key], key
    bases = [n for n in g.nodes.to_pylist() if n["kind"] == "tuple"]
    named = {(b["dataset"], b["version"], b["rid"]) for b in bases}
    given = {(name, version, rid) for name, version in read[: len(state_names) + 2 * executions]
             for rid in held[(name, version)]}  # fmt: skip
    assert named <= given and bases
    for name, version, rid in sorted(given - named):  # a tuple the graph has no node for changes nothing
        assert without({"dataset": name, "version": version, "rid": rid}) == full, (name, version, rid)
    for base in bases:
        gone = g.delete(base["id"])
        removed = Counter((t["dataset"], t["version"]) for t in gone.tuples.to_pylist())
        removed_rids = {(t["dataset"], t["version"], t["rid"]) for t in gone.tuples.to_pylist()}
        changed_rids = {(t["dataset"], t["version"], t["rid"]) for t in gone.changed.to_pylist()}
        again = without(base)
        for (name, version), rows in held.items():
            if (name, version) not in again:
                continue
            now = again[(name, version)]
            what = f"{name} v{version} without {base['label']} (seed {seed})"
            assert sum(now.values()) == len(rows) - removed[(name, version)], what
            kept = Counter(v for rid, v in rows.items()
                           if (name, version, rid) not in removed_rids | changed_rids)  # fmt: skip
            assert not kept - now, what
    assert outputs
