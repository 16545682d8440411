"""sp.Workflow as a user meets it: declaring modules, running executions with state,
reopening a workflow, untracked runs, and clear errors for what cannot work."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.errors import InvalidArgument, UnsupportedOperation

SCHEMA = "k string, v long"


def _rows(spark, *rows):
    return spark.createDataFrame(list(rows), SCHEMA)


def test_declaring_modules_checks_names_and_owners(session):
    wf = sp.Workflow("w", session)

    @wf.module(inputs=["a"], outputs=["b"], state=["s"])
    def first(a, s):
        return a

    with pytest.raises(InvalidArgument, match="writes at least one output"):
        wf.module(inputs=["a"])
    with pytest.raises(InvalidArgument, match="a letter followed by"):
        wf.module(outputs=["not a name"])
    with pytest.raises(InvalidArgument, match="is an output of module 'first' already"):
        wf.module(inputs=["a"], outputs=["b"], name="again")(lambda a: a)
    with pytest.raises(InvalidArgument, match="give the module one"):
        wf.module(inputs=["a"], outputs=["e"])(lambda a: a)
    with pytest.raises(InvalidArgument, match="a state table belongs to one module"):

        @wf.module(inputs=["a"], outputs=["c"], state=["s"])
        def second(a, s):
            return a

    with pytest.raises(InvalidArgument, match="already"):
        wf.module(inputs=["b"], outputs=["d"])(first)
    with pytest.raises(InvalidArgument, match="a LineageSession"):
        sp.Workflow("w", object())
    with pytest.raises(InvalidArgument, match="invalid capture name"):
        sp.Workflow("no/slash", session)


def test_running_checks_inputs_state_and_what_a_module_returns(spark, session):
    wf = sp.Workflow("w", session)
    with pytest.raises(InvalidArgument, match="has no modules"):
        wf.run()

    @wf.module(inputs=["a"], outputs=["b"], state=["s"])
    def keep(a, s):
        return {"b": a, "s": s.unionByName(a)}

    with pytest.raises(InvalidArgument, match="lacks input 'a'"):
        wf.run()
    with pytest.raises(InvalidArgument, match="has no input 'z'"):
        wf.run(a=_rows(spark, ("x", 1)), z=_rows(spark, ("x", 1)))
    with pytest.raises(InvalidArgument, match=r"give them with wf.state\('s', df\)"):
        wf.run(a=_rows(spark, ("x", 1)))
    wf.state("s", _rows(spark, ("y", 2)))
    with pytest.raises(InvalidArgument, match="has its initial rows already"):
        wf.state("s", _rows(spark, ("y", 2)))

    @wf.module(inputs=["b"], outputs=["c"])
    def broken(b):
        return {"c": b, "d": b}

    with pytest.raises(InvalidArgument, match="module 'broken' returned 'd', not one of its outputs or state"):
        wf.run(a=_rows(spark, ("x", 1)))
    assert wf.executions == []  # a failed execution leaves no record
    with pytest.raises(sp.CaptureFailed, match="part of execution 1 of workflow 'w', which failed"):
        session.load("w.b")
    del wf.modules["broken"]
    wf.run(a=_rows(spark, ("x", 1)))  # the same execution again
    assert wf.executions[0].execution == 1 and wf.dataset("b").count() == 1
    with pytest.raises(InvalidArgument, match="has run already"):
        wf.state("t", _rows(spark, ("y", 2)))


def test_cycles_are_refused(spark, session):
    wf = sp.Workflow("w", session)
    wf.module(inputs=["a", "c"], outputs=["b"], name="one")(lambda a, c: a)
    wf.module(inputs=["b"], outputs=["c"], name="two")(lambda b: b)
    with pytest.raises(InvalidArgument, match="in a cycle"):
        wf.run(a=_rows(spark, ("x", 1)))


def test_state_carries_across_executions_and_reopening(spark, session):
    def counter(hits, seen):
        new = hits.select("k", F.lit(1).cast("long").alias("v"))
        return {"total": seen.unionByName(new).groupBy("k").agg(F.sum("v").alias("v")), "seen": seen.unionByName(new)}

    wf = sp.Workflow("visits", session)
    wf.state("seen", _rows(spark, ("home", 1)))
    wf.module(inputs=["hits"], outputs=["total"], state=["seen"])(counter)
    wf.run(hits=_rows(spark, ("home", 0), ("shop", 0)))
    # a later session opens the same workflow, declares its modules again and goes on
    again = sp.Workflow("visits", sp.LineageSession(spark, store=session.store.root))
    again.module(inputs=["hits"], outputs=["total"], state=["seen"])(counter)
    record = again.run(hits=_rows(spark, ("home", 0)))
    assert record.execution == 2 and record.state == {"seen": 2}
    totals = {r.k: r.v for r in again.dataset("total").collect()}
    assert totals == {"home": 3, "shop": 1}
    assert again.dataset("seen", 0).count() == 1 and again.dataset("seen", 1).count() == 3
    g = again.graph()
    first = again.dataset("seen", 0).first()._sp_rid
    # the initial row is one tuple through every version of the state table
    home = [r._sp_rid for r in again.dataset("total", 2).collect() if r.k == "home"]
    assert g.ancestors(g.tuple("total", home[0], 2)).tolist().count(g.tuple("seen", first, 0)) == 1
    same = [g.tuple("seen", r._sp_rid, 2) for r in again.dataset("seen", 2).collect()]
    assert g.tuple("seen", first, 0) in same
    shop = again.dataset("hits", 1).where("k = 'shop'").first()._sp_rid
    gone = g.delete(g.tuple("hits", shop, 1))
    assert sorted((t["dataset"], t["version"]) for t in gone.tuples.to_pylist()) == [
        ("hits", 1),  # the row deleted
        ("seen", 1),  # its visit in the state table, and that same row in the next version
        ("seen", 2),
        ("total", 1),  # the shop's totals, in both executions (the second from the state alone)
        ("total", 2),
    ]
    # end to end through the captures: the second total comes from the first execution's
    # hits too, through the state version that execution wrote
    cap = session.load("visits.total", 2)
    traced = cap.backward(cap.output.where("k = 'home'"), end_to_end=True)
    assert traced["visits.seen/visits.hits/dataframe_0"].count() == 1


def test_untracked_runs_write_their_datasets_and_add_no_graph(spark, session):
    wf = sp.Workflow("w", session)
    wf.state("kept", _rows(spark, ("w", 0)))

    @wf.module(inputs=["a"], outputs=["b"], state=["kept"])
    def big(a, kept):
        return {"b": a.where("v > 1").unionByName(kept), "kept": kept.unionByName(a)}

    record = wf.run(track=False, a=_rows(spark, ("x", 1), ("y", 2)))
    assert not record.tracked and record.invocations[0].node == -1
    assert sorted(r.k for r in wf.dataset("b", 1).collect()) == ["w", "y"]
    with pytest.raises(InvalidArgument, match="no tracked execution"):
        wf.graph()
    wf.run(a=_rows(spark, ("z", 3)))
    g = wf.graph()
    # the state version the untracked execution wrote has no graph: its rows are base tuples
    kept = [n["kind"] for n in g.nodes.to_pylist() if n["dataset"] == "kept" and n["version"] == 1]
    assert kept == ["tuple"] * 3
    assert sorted(r.k for r in wf.dataset("b", 2).collect()) == ["w", "x", "y", "z"]


def test_a_deletion_through_an_anti_join_is_refused_by_name(spark, session):
    wf = sp.Workflow("w", session)
    wf.module(inputs=["a", "banned"], outputs=["b"], name="allowed")(lambda a, banned: a.join(banned, "k", "left_anti"))
    wf.run(a=_rows(spark, ("x", 1), ("y", 2)), banned=_rows(spark, ("y", 0)))
    g = wf.graph()
    assert wf.executions[0].invocations[0].not_monotone[0].startswith("Join LeftAnti")
    a = wf.dataset("a", 1).where("k = 'x'").first()._sp_rid
    with pytest.raises(UnsupportedOperation, match="module 'allowed', whose 'Join LeftAnti"):
        g.delete(g.tuple("a", a, 1))
    gone = g.delete(g.tuple("a", a, 1), allow_inexact=True).tuples.column("dataset").to_pylist()
    assert sorted(gone) == ["a", "b"]
    with pytest.raises(InvalidArgument, match="has no node"):
        g.tuple("banned", 12345, 1)
    with pytest.raises(InvalidArgument, match="no module 'nope'"):
        g.zoom_out("nope")
