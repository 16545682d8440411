"""The strategy optimizer: the integer program's choices on known costs, and on costs
measured from a workflow, within every budget and answering as the lineage says."""

from __future__ import annotations

import time

import numpy as np
import pytest

import sparkprov as sp
from sparkprov.arrays.cells import Box
from sparkprov.arrays.operators import ArrayOperator, Elementwise
from sparkprov.arrays.optimizer import Costs, LineageQuery, StrategyCost, choose, measure
from sparkprov.arrays.workflow import ArrayWorkflow

from .test_workflow import brute_backward, brute_forward, workflow


def known() -> Costs:
    return Costs(
        {
            "a": {
                "BlackBox": StrategyCost(0, 0.0, qb=10.0, qf=10.0),
                "FullOne←": StrategyCost(100, 1.0, qb=1.0, qf=40.0),
                "FullOne→": StrategyCost(120, 1.0, qb=40.0, qf=1.0),
            },
            "b": {
                "Map": StrategyCost(0, 0.0, qb=0.5, qf=0.5),
                "FullOne←": StrategyCost(80, 1.0, qb=0.4, qf=30.0),
            },
        },
        pb={"a": 1.0, "b": 1.0},
        pf={"a": 0.5, "b": 0.0},
    )


def test_choices_follow_the_budgets():
    free = choose(known(), max_disk=0)
    assert free.strategies == {"a": ["BlackBox"], "b": ["Map"]} and free.disk == 0
    backward_only = choose(known(), max_disk=150)
    # backward steps read FullOne←; forward steps run the operator again (10 s, not 40)
    assert backward_only.strategies["a"] == ["BlackBox", "FullOne←"]
    assert backward_only.answers["a"] == ("FullOne←", "BlackBox")
    assert backward_only.strategies["b"] == ["Map"]  # FullOne← would not fit beside a's
    both = choose(known(), max_disk=220)
    assert set(both.strategies["a"]) == {"FullOne→", "FullOne←"}
    assert both.answers["a"] == ("FullOne←", "FullOne→") and both.disk <= 220
    assert both.query < backward_only.query < free.query
    slow = choose(known(), max_runtime=0.5)
    assert slow.runtime == 0 and slow.strategies["a"] == ["BlackBox"]
    assert "FullOne←, FullOne→" in both.explain()


def test_strategies_of_two_modes_pay_for_running_their_operator_again():
    costs = Costs(
        {
            "a": {
                "BlackBox": StrategyCost(0, 0.0, qb=10.0, qf=10.0),
                "FullOne←": StrategyCost(100, 1.0, qb=1.0, qf=40.0),
                "PayOne←": StrategyCost(100, 1.0, qb=40.0, qf=1.0),
                "FullOne→": StrategyCost(100, 1.5, qb=40.0, qf=1.0),
            }
        },
        pb={"a": 1.0},
        pf={"a": 1.0},
        modes={"a": {"BlackBox": None, "FullOne←": "full", "PayOne←": "payload", "FullOne→": "full"}},
        rerun={"a": 5.0},
    )
    # full and payload lineage: the operator's run and one run again, 1 + 1 + 5 seconds;
    # two full strategies share one run, 1 + 1.5
    plan = choose(costs, max_runtime=3.0)
    assert set(plan.strategies["a"]) == {"FullOne←", "FullOne→"} and plan.runtime == pytest.approx(2.5)
    assert costs.runtime("a", ["FullOne←", "PayOne←"]) == pytest.approx(7.0)
    tight = choose(costs, max_runtime=2.0)  # one strategy storing lineage, the other direction re-run
    assert tight.runtime == pytest.approx(1.0) and len(set(tight.strategies["a"]) - {"BlackBox"}) == 1
    assert "2.500" in plan.explain()


def test_fixed_strategies_are_kept_or_refused():
    kept = choose(known(), max_disk=300, fixed={"b": ["FullOne←"]})
    assert "FullOne←" in kept.strategies["b"]
    with pytest.raises(sp.InvalidArgument, match="no choice of strategies fits the budgets"):
        choose(known(), max_disk=50, fixed={"a": ["FullOne←"]})
    with pytest.raises(sp.InvalidArgument, match="'b' cannot keep 'PayOne←'"):
        choose(known(), fixed={"b": ["PayOne←"]})


def test_measured_choices_answer_as_the_lineage_says(tmp_path):
    image = np.random.default_rng(3).random((8, 9))
    wf = workflow()
    workload = [
        LineageQuery("backward", "flip", "image", Box((0, 0), (2, 2))),
        LineageQuery("backward", "sum", "rays", [(1, 1), (4, 5)]),
        LineageQuery("forward", "image", "blur", [(3, 3)]),
    ]
    costs = measure(wf, {"image": image}, tmp_path / "sample", workload, repeat=1)
    assert costs.pb["flip"] == pytest.approx(1 / 3) and costs.pf["blur"] == pytest.approx(1 / 3)
    assert costs.pb["shifted"] == pytest.approx(1 / 3)  # flip <- sum <- blur <- shifted
    for by in costs.strategies.values():  # a mapping operator's black box is its mapping: not a choice
        assert not ("Map" in by and "BlackBox" in by)
        assert all(c.disk > 0 for s, c in by.items() if s not in ("BlackBox", "Map"))
    assert "BlackBox" not in costs.strategies["flip"] and costs.strategies["runs"]["BlackBox"].disk == 0
    previous = None
    for budget in (0, 20_000, None):
        plan = choose(costs, max_disk=budget)
        assert budget is None or plan.disk <= budget
        if previous is not None:
            assert plan.query <= previous + 1e-12  # more room never predicts slower queries
        previous = plan.query
        run = wf.run({"image": image}, tmp_path / f"plan-{budget}", plan.strategies)
        assert run.lineage_bytes() == plan.disk  # what it predicted is what was stored
        for q in workload:
            ids = sorted(set(q.run(run).tolist()))
            cells = q.cells.ids(run.shape(q.start)) if isinstance(q.cells, Box) else run.shape(q.start).ids(q.cells)
            brute = brute_backward if q.direction == "backward" else brute_forward
            assert ids == brute(run, set(cells.tolist()), q.start, q.target), (budget, q)


class EveryCell(ArrayOperator):
    """Each output cell from its own input cell, stated as full lineage cell by cell."""

    modes = ("full",)

    def run(self, arrays, writer):
        if writer is not None:
            ids = np.arange(arrays[0].size)
            writer.write_many(ids[:, None], ids[:, None])
        return arrays[0] + 1


_NEXT_STEP = {"seconds": 0.2}


def _slow(a):
    time.sleep(_NEXT_STEP["seconds"])  # a long next step, during which the background thread writes
    return a


def test_runtime_costs_are_what_a_run_pays_not_each_write_alone(tmp_path, monkeypatch):
    wf = ArrayWorkflow()
    wf.add("cells", EveryCell(), ["image"])
    wf.add("slow", Elementwise(_slow), ["cells"])
    inputs = {"image": np.random.default_rng(0).random((400, 400))}
    workload = [LineageQuery("backward", "slow", "image", [(1, 1)])]
    inline = measure(wf, inputs, tmp_path / "inline", workload, repeat=1, runs=0)
    written = inline.strategies["cells"]["FullOne←"].run
    # each write timed alone costs what it takes (160,000 pairs: about 0.1 s here, 0.27
    # s on a loaded machine); in a run, the write goes on while the next step sleeps, so
    # the run pays far less of it, given a next step well longer than the write
    assert written > 0.02
    monkeypatch.setitem(_NEXT_STEP, "seconds", max(0.2, 2 * written))
    paid = measure(wf, inputs, tmp_path / "paid", workload, repeat=1, runs=1)
    assert paid.strategies["cells"]["FullOne←"].run < written / 2
    assert paid.strategies["cells"]["BlackBox"].run == 0  # nothing written, nothing added
    assert paid.strategies["cells"]["FullOne←"].disk == inline.strategies["cells"]["FullOne←"].disk
