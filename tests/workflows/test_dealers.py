"""Lipstick's running example (the car dealerships) as a tracked workflow: its
provenance graph, zoom, deletion propagation and dependency queries."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

import sparkprov as sp
from sparkprov.bench import dealers
from sparkprov.workflows.graph import ProvenanceGraph

SEED = 8


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    """Two dealers with six cars each; a buyer who takes any bid; two executions."""
    session = sp.LineageSession(spark, store=tmp_path_factory.mktemp("dealers"))
    wf = dealers.workflow(session, cars_per_dealer=6, seed=SEED, dealers=2)
    lot = Counter(model for _, model, _ in dealers.cars(1, 6, SEED))
    model = lot.most_common(1)[0][0]
    assert lot[model] >= 2
    buyer = dealers.Buyer("b1", model, reserve=10**6, acceptance=1.0)
    for e in (1, 2):
        wf.run(request=buyer.request(spark, e))
    return wf, wf.graph(), model


def _node(wf, g, dataset, version, where=None):
    rows = wf.dataset(dataset, version)
    rows = rows.where(where) if where else rows
    return [g.tuple(dataset, r._sp_rid, version) for r in rows.collect()]


def test_a_bid_comes_from_the_cars_of_its_model_and_the_earlier_bids(run):
    wf, g, model = run
    (bid,) = _node(wf, g, "bid1", 2)
    ancestors = set(g.ancestors(bid).tolist())
    cars = wf.dataset("cars1", 0).collect()
    of_model = {g.tuple("cars1", c._sp_rid, 0) for c in cars if c.model == model}
    assert of_model <= ancestors
    used = set(g.tuples_of(np.array(sorted(ancestors))).column("node").to_pylist())
    other = [c for c in cars if c.model != model]
    assert not any(("cars1", 0, c._sp_rid) in _keys(g, used) for c in other)
    (earlier_bid,) = _node(wf, g, "bids1", 1)  # the first bid, as the dealer's history (its state) keeps it
    assert earlier_bid in ancestors
    assert g.depends(bid, on=_node(wf, g, "request", 2))
    assert not g.depends(bid, on=earlier_bid)  # the cars alone still make a bid


def _keys(g: ProvenanceGraph, nodes: set) -> set:
    return {(t["dataset"], t["version"], t["rid"]) for t in g.tuples_of(np.array(sorted(nodes))).to_pylist()}


def test_had_this_car_not_been_on_the_lot_the_dealer_would_still_have_sold(run):
    wf, g, model = run
    sales = _node(wf, g, "sale", 1)
    assert len(sales) == 1
    car = next(c for c in wf.dataset("cars1", 0).collect() if c.model == model)
    car_node = g.tuple("cars1", car._sp_rid, 0)
    gone = g.delete(car_node)
    assert gone.survives(sales[0])  # another car of the model is on the lot
    changed = {(t["dataset"], t["version"]) for t in gone.changed.to_pylist()}
    assert ("bid1", 1) in changed and ("sale", 1) in changed  # fewer cars: the price may differ
    assert not g.depends(sales[0], on=car_node)


def test_deleting_a_request_removes_its_executions_rows_but_not_state_or_invocations(run):
    # Lipstick's example 4.4: without the bid request the execution would not have happened
    wf, g, model = run
    request = _node(wf, g, "request", 1)
    gone = g.delete(request)
    removed = Counter((t["dataset"], t["version"]) for t in gone.tuples.to_pylist())
    for name in ("bid1", "bid2", "best", "sale"):
        assert removed[(name, 1)] == wf.dataset(name, 1).count()
        assert removed[(name, 2)] == 0
    kinds = Counter(g.nodes.filter(_mask(g, gone.removed)).column("kind").to_pylist())
    assert kinds["invocation"] == 0 and kinds["tuple"] == 1  # the request alone among base tuples
    survivors = set(_node(wf, g, "cars1", 0, f"model = '{model}'"))
    assert survivors.isdisjoint(gone.removed.tolist())


def _mask(g, ids):
    import pyarrow as pa

    return pa.array(np.isin(g.nodes.column("id").to_numpy(), ids))


def test_the_pricing_function_is_a_black_box_node(run):
    _, g, _ = run
    labels = Counter(n["label"] for n in g.nodes.to_pylist() if n["kind"] == "blackbox")
    assert set(labels) == {"calc_bid"}


def test_zoom_in_undoes_zoom_out_for_every_set_of_modules(run):
    _, g, _ = run
    assert g.modules == ["aggregator", "choice", "dealer1", "dealer2"]
    for k in range(len(g.modules) + 1):
        for chosen in itertools.combinations(g.modules, k):
            out = g.zoom_out(chosen)
            assert out.zoomed == frozenset(chosen)
            assert out.zoom_in(chosen).same_as(g)


def test_zoom_out_removes_definition_4_1s_intermediate_nodes(run):
    _, g, _ = run
    for module in g.modules:
        out = g.zoom_out(module)
        removed = set(g.nodes.column("id").to_pylist()) - set(out.nodes.column("id").to_pylist())
        intermediate = _intermediate(g, module)
        state = {n["id"] for n in g.nodes.to_pylist() if n["kind"] == "state" and n["module"] == module}
        assert intermediate | state <= removed
        assert all(n["kind"] == "tuple" for n in g.nodes.to_pylist() if n["id"] in removed - intermediate - state)
        # one node per invocation, from its inputs to its outputs
        invocations = [n for n in g.nodes.to_pylist() if n["kind"] == "invocation" and n["module"] == module]
        zoomed = [n for n in out.nodes.to_pylist() if n["kind"] == "module"]
        assert sorted(n["invocation"] for n in zoomed) == sorted(n["id"] for n in invocations)


def _intermediate(g: ProvenanceGraph, module: str) -> set[int]:
    # Definition 4.1 literally: reachable from an input or state node of an invocation of
    # the module by a path with no output node on it
    nodes = {n["id"]: n for n in g.nodes.to_pylist()}
    children: dict[int, list[int]] = {}
    for s, d in zip(g.edges.column("src").to_pylist(), g.edges.column("dst").to_pylist()):
        children.setdefault(s, []).append(d)
    starts = [i for i, n in nodes.items() if n["module"] == module and n["kind"] in ("input", "state")]
    seen: set[int] = set()
    todo = list(starts)
    while todo:
        for c in children.get(todo.pop(), []):
            if nodes[c]["kind"] != "output" and c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def test_the_coarse_graph_holds_invocations_inputs_and_outputs(run):
    _, g, _ = run
    coarse = g.coarse()
    kinds = Counter(coarse.nodes.column("kind").to_pylist())
    assert kinds["op"] == kinds["state"] == kinds["blackbox"] == 0
    assert kinds["module"] == kinds["invocation"] == 8  # four modules, two executions
    assert coarse.zoom_in(g.modules).same_as(g)


def test_a_subgraph_holds_ancestors_descendants_and_their_other_parents(run):
    wf, g, _ = run
    (bid,) = _node(wf, g, "bid1", 1)
    sub = set(g.subgraph(bid).tolist())
    assert {bid} | set(g.ancestors(bid).tolist()) | set(g.descendants(bid).tolist()) <= sub
    (best,) = _node(wf, g, "best", 1)
    other_bid = _node(wf, g, "bid2", 1)[0]
    assert best in sub and other_bid not in set(g.ancestors(bid).tolist())
    parents_of_descendants = {s for s, d in zip(g.edges.column("src").to_pylist(), g.edges.column("dst").to_pylist())
                              if d in set(g.descendants(bid).tolist())}  # fmt: skip
    assert parents_of_descendants <= sub
