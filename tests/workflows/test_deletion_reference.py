"""Deletion propagation (Lipstick, Definition 4.2) against re-running the workflow:
random small workflows of modules built from operators capture follows, some with
state carried across executions; deleting a base tuple (a workflow input's row or a
state table's initial row) removes, per the graph, exactly the rows a run without it
no longer makes, and leaves every other row (values included) as it was, except the
rows the graph says may change (below an aggregate that lost rows)."""

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


def build(wf: sp.Workflow, seed: int, spark, initial: dict | None = None) -> list[str]:
    """A random workflow of three or four modules over inputs src0 and src1; ``initial``:
    the state tables' initial rows, in place of the random ones."""
    rnd = random.Random(seed)
    one, two = _templates()
    available, outputs = ["src0", "src1"], []
    for i in range(rnd.choice([3, 4])):
        op = rnd.choice(sorted(one) + sorted(two))
        inputs = rnd.sample(available, 2) if op in two else [rnd.choice(available)]
        state = f"s{i}" if rnd.random() < 0.5 else None
        if state:
            rows = [(rnd.choice(KEYS), rnd.randrange(10)) for _ in range(rnd.randrange(1, 4))]
            rows = (initial or {}).get(state, rows)  # drawn either way: the same modules follow
            wf.state(state, spark.createDataFrame(rows, "k string, v long"))
        wf.module(inputs=inputs, outputs=[f"d{i}"], state=[state] if state else [])(_module(op, inputs, f"d{i}", state))
        available.append(f"d{i}")
        outputs.append(f"d{i}")
    return outputs


def _inputs(seed: int, execution: int) -> dict[str, list]:
    rnd = random.Random(seed * 100 + execution)
    return {s: [(rnd.choice(KEYS), rnd.randrange(10)) for _ in range(rnd.randrange(2, 5))] for s in ("src0", "src1")}


def _values(df) -> Counter:
    return Counter(tuple(r[c] for c in ("k", "v")) for r in df.collect())


@pytest.mark.parametrize("seed", [0, 3])
def test_deleting_a_tuple_removes_what_running_without_it_no_longer_makes(spark, tmp_path, seed):
    wf = sp.Workflow("random", sp.LineageSession(spark, store=tmp_path / "tracked"))
    outputs = build(wf, seed, spark)
    executions = 2
    for e in range(1, executions + 1):
        wf.run(**{n: spark.createDataFrame(rows, "k string, v long") for n, rows in _inputs(seed, e).items()})
    g = wf.graph()
    state_names = sorted({s for m in wf.modules.values() for s in m.state})
    # what each dataset held: (dataset, version) -> {rid: (k, v)}
    held = {}
    for r in wf.executions:
        for inv in r.invocations:
            for name in inv.writes:
                rows = wf.dataset(name, r.execution).collect()
                held[(name, r.execution)] = {row["_sp_rid"]: (row["k"], row["v"]) for row in rows}
    bases = [n for n in g.nodes.to_pylist() if n["kind"] == "tuple"]
    rnd = random.Random(seed)
    for base in rnd.sample(bases, min(3, len(bases))):
        gone = g.delete(base["id"])
        removed = Counter((t["dataset"], t["version"]) for t in gone.tuples.to_pylist())
        removed_rids = {(t["dataset"], t["version"], t["rid"]) for t in gone.tuples.to_pylist()}
        changed_rids = {(t["dataset"], t["version"], t["rid"]) for t in gone.changed.to_pylist()}
        # the same workflow run again without the tuple, untracked, in a store of its own
        again = sp.Workflow("random", sp.LineageSession(spark, store=tmp_path / f"again-{base['id']}"))
        initial = {}
        for s in state_names:
            rows = wf.dataset(s, 0).collect()
            initial[s] = [(r["k"], r["v"]) for r in rows if not (base["dataset"] == s and r["_sp_rid"] == base["rid"])]
        build(again, seed, spark, initial)
        for e in range(1, executions + 1):
            given = {}
            for n in ("src0", "src1"):
                rows = wf.dataset(n, e).collect()
                drop = base["dataset"] == n and base["version"] == e
                given[n] = [(r["k"], r["v"]) for r in rows if not (drop and r["_sp_rid"] == base["rid"])]
            again.run(track=False, **{n: spark.createDataFrame(rows, "k string, v long") for n, rows in given.items()})
        for (name, version), rows in held.items():
            now = _values(again.dataset(name, version))
            what = f"{name} v{version} without {base['label']} (seed {seed})"
            assert sum(now.values()) == len(rows) - removed[(name, version)], what
            kept = Counter(v for rid, v in rows.items()
                           if (name, version, rid) not in removed_rids | changed_rids)  # fmt: skip
            assert not kept - now, what
    assert outputs
