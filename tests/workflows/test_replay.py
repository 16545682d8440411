"""Executions run with ``track="later"``: tracked when first asked for, by running them
again; the graph is the one tracking as they ran gives, and a module that gives other
rows the second time leaves the execution as it ran, with a clear error."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import dealers
from sparkprov.cli import main
from sparkprov.errors import InvalidArgument, LineageNotBuilt
from sparkprov.workflows import replay

SEED = 8


def _dealers(spark, store, tracks: list):
    session = sp.LineageSession(spark, store=store)
    wf = dealers.workflow(session, cars_per_dealer=6, seed=SEED, dealers=2)
    model = Counter(m for _, m, _ in dealers.cars(1, 6, SEED)).most_common(1)[0][0]
    buyer = dealers.Buyer("b1", model, reserve=10**6, acceptance=0.0)
    records = [wf.run(track=t, request=buyer.request(spark, e)) for e, t in enumerate(tracks, 1)]
    return wf, records


def _answers(wf) -> dict:
    """Every bid's base tuples, and the bids each car's deletion changes, by value: the
    same in two stores whatever row ids each gave."""
    g = wf.graph()
    labels = {}
    every = g.tuples_of(g.nodes.column("id").to_numpy()).to_pylist()
    rows = {}
    for dataset, version in {(t["dataset"], t["version"]) for t in every}:
        for row in wf.dataset(dataset, version).collect():
            rows[dataset, version, row._sp_rid] = tuple(v for k, v in row.asDict().items() if k != "_sp_rid")
    for t in every:
        labels[t["node"]] = (t["dataset"], t["version"], rows[t["dataset"], t["version"], t["rid"]])
    answers = {}
    for node, (dataset, version, values) in labels.items():
        if dataset.startswith("bid") and dataset[3:].isdigit():
            base = sorted(labels[a] for a in g.ancestors(node).tolist() if a in labels and labels[a][0] != dataset)
            answers[("ancestors", dataset, version, values)] = base
        if dataset.startswith("cars"):
            gone = g.delete(node)
            answers[("delete", dataset, version, values)] = sorted(
                (t["dataset"], t["version"]) for t in gone.changed.to_pylist()
            )
    return answers, (g.nodes.num_rows, g.edges.num_rows)


def test_executions_tracked_later_answer_as_executions_tracked_as_they_ran(spark, tmp_path):
    eager, _ = _dealers(spark, tmp_path / "eager", [True, True, True])
    lazy, records = _dealers(spark, tmp_path / "lazy", ["later", True, "later"])
    # the second execution, tracked as it ran, tracked the one before it first
    assert [r.tracked for r in records] == [False, True, False]
    assert [r.tracked for r in lazy.executions] == [True, True, False]
    assert lazy.dataset("request", 3).count() == 1  # as given, before it is tracked
    assert _answers(lazy) == _answers(eager)
    assert all(r.tracked and r.later for r in lazy.executions if r.execution != 2)
    assert not any(lazy.folders.untracked(e).exists() for e in range(1, 4))


def test_a_module_that_gives_other_rows_again_leaves_its_execution_as_it_ran(spark, session):
    wf = sp.Workflow("w", session)

    @wf.module(inputs=["a"], outputs=["b"])
    def noisy(a):
        return a.withColumn("r", F.rand())

    wf.run(track="later", a=spark.createDataFrame([("x", 1), ("y", 2)], "k string, v long"))
    first = sorted(wf.dataset("b", 1).collect())
    with pytest.raises(LineageNotBuilt, match=r"execution 1 .*dataset 'b' came out otherwise .*track=True"):
        wf.track()
    assert sorted(wf.dataset("b", 1).collect()) == first
    assert wf.executions[0].pending
    assert "_sp_rid" not in wf.dataset("b", 1).columns
    with pytest.raises(LineageNotBuilt):
        wf.graph()


def test_an_attempt_that_failed_or_ended_half_way_is_undone_before_the_next(spark, session):
    wf = sp.Workflow("w", session)
    wf.state("seen", spark.createDataFrame([("w", 0)], "k string, v long"))
    calls = []

    @wf.module(inputs=["a"], outputs=["b"], state=["seen"])
    def keep(a, seen):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the second call fails")
        return {"b": a.where("v > 1"), "seen": seen.unionByName(a)}

    wf.run(track="later", a=spark.createDataFrame([("x", 1), ("y", 2)], "k string, v long"))
    with pytest.raises(RuntimeError, match="second call"):
        wf.track()
    assert wf.executions[0].pending and not wf.folders.untracked(1).exists()
    assert sorted(r.k for r in wf.dataset("seen", 1).collect()) == ["w", "x", "y"]
    replay.move_aside(wf.folders, 1, ["seen"])  # as if the process ended while tracking
    assert not wf.folders.state("seen", 1).exists()
    (record,) = wf.track()
    assert record.tracked and record.execution == 1
    g = wf.graph()
    (y,) = wf.dataset("b", 1).collect()
    given = wf.dataset("a", 1).where("k = 'y'").first()
    assert g.depends(g.tuple("b", y._sp_rid, 1), on=g.tuple("a", given._sp_rid, 1))


def test_tracking_later_needs_the_modules_and_a_known_mode(spark, session, capsys):
    wf = sp.Workflow("w", session)
    wf.module(inputs=["a"], outputs=["b"], name="copy")(lambda a: a)
    a = spark.createDataFrame([("x", 1)], "k string, v long")
    with pytest.raises(InvalidArgument, match="True, False or 'later'"):
        wf.run(track="soon", a=a)
    wf.run(track="later", a=a)
    reopened = sp.Workflow("w", session)
    with pytest.raises(InvalidArgument, match="execution 1 ran with track='later'.*declare them"):
        reopened.graph()
    with pytest.raises(InvalidArgument, match="'graph': the name of an execution's provenance graph"):
        wf.module(inputs=["b"], outputs=["graph"], name="g")
    # the command line holds no modules: it says what tracks the execution
    assert main(["workflow", "graph", "w", "--store", str(session.store.root)]) == 1
    assert "execution 1 ran with track='later' and is tracked by wf.track()" in capsys.readouterr().err
    wf.run(a=a)  # tracks execution 1 first, then runs 2
    wf.run(track="later", a=a)
    assert main(["workflow", "graph", "w", "--store", str(session.store.root)]) == 0
    assert "execution(s) 3 ran with track='later' and are not in this graph" in capsys.readouterr().err


def test_rows_are_compared_by_value_in_any_order_whatever_their_types(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    rows = pa.table({
        "k": [1, 2, 2], "m": pa.array([[("a", 1)], [("b", 2)], []], pa.map_(pa.string(), pa.int64())),
        "l": [[1.0, 2.0], None, []], "s": [{"x": 1}, {"x": 2}, None], "d": pa.array([1, 2, 2], pa.decimal128(10, 2)),
        "x": [float("nan"), 0.1 + 0.2, 5.0],
    })  # fmt: skip
    pq.write_table(rows, first / "part-0.parquet")
    pq.write_table(rows.slice(0, 1), second / "part-0.parquet")  # the same rows over two files, in another order
    pq.write_table(rows.slice(1).take([1, 0]).append_column("_sp_rid", pa.array([7, 8])), second / "part-1.parquet")
    assert replay.differences(first, second) is None
    other = rows.set_column(1, "m", pa.array([[("a", 1)], [("b", 3)], []], pa.map_(pa.string(), pa.int64())))
    pq.write_table(other, second / "part-0.parquet")
    (second / "part-1.parquet").unlink()
    assert replay.differences(first, second) == "1 row(s) without an equal row"
    pq.write_table(rows.set_column(5, "x", pa.array([float("nan"), 0.3000001, 5.0])), second / "part-0.parquet")
    assert "further apart than 1e-09" in replay.differences(first, second)
    pq.write_table(rows.slice(1), second / "part-0.parquet")
    assert replay.differences(first, second) == "2 row(s), not 3"
    pq.write_table(rows.drop_columns(["d"]), second / "part-0.parquet")
    assert replay.differences(first, second) == "no column 'd'"
