"""A small graph's build and update made in this process: the same answers, sizes and
splits as those made on Spark, and a reference graph's answers; large components split
into sets and merged alike; the limit read from the Spark conf, with a clear error for
a bad one."""

from __future__ import annotations

import random
from contextlib import contextmanager

import pytest

import sparkprov as sp
from sparkprov.errors import InvalidArgument
from sparkprov.graphs.build_here import LOCAL_TRIPLES_CONF

from .test_update import _import, _layered, _reference, _traces

_SHARED = ["nodes", "edges", "components", "largest_component", "sets", "largest_set", "set_dependencies",
           "datasets", "ops", "splits", "feeds", "buckets"]  # fmt: skip


def _built(spark, folder, triples: set, limit: str | None) -> tuple[sp.LineageSession, dict]:
    graph = sp.LineageSession(spark, store=folder / "store").graph()
    _import(graph, folder, "triples", triples)
    with _limit(spark, limit):
        return graph, graph.build(buckets=4, progress=lambda _: None, threshold=20, split_depth=2)


@contextmanager
def _limit(spark, limit: str | None):
    if limit is not None:
        spark.conf.set(LOCAL_TRIPLES_CONF, limit)
    try:
        yield
    finally:
        spark.conf.unset(LOCAL_TRIPLES_CONF)


def test_a_graph_built_here_answers_as_one_built_on_spark(spark, tmp_path):
    rnd = random.Random(11)
    triples = _layered(rnd, range(1, 6), 40, 45, "a") | _layered(rnd, range(1, 3), 200, 10, "b")
    keys = sorted({(t[0], t[1]) for t in triples} | {(t[2], t[3]) for t in triples})
    keys = rnd.sample(keys, 40)
    on_spark, spark_meta = _built(spark, tmp_path / "spark", triples, "0")
    here, here_meta = _built(spark, tmp_path / "here", triples, None)
    assert "built in this process" in here_meta["timings"] and "built in this process" not in spark_meta["timings"]
    assert {k: here_meta[k] for k in _SHARED} == {k: spark_meta[k] for k in _SHARED}
    assert here_meta["sets"] > here_meta["components"]  # large components were split into sets
    assert here_meta["max_node"] == here_meta["nodes"] - 1
    found = _traces(here, keys)
    assert found == _traces(on_spark, keys)
    assert {k: sorted(v) for k, v in found.items()} == _reference(triples, keys)
    own = ("bytes", "created", "timings", "max_node")  # nodes are numbered otherwise on Spark
    stats = {k: v for k, v in here.stats().items() if k not in own}
    assert stats == {k: v for k, v in on_spark.stats().items() if k not in own}


def test_layers_made_here_answer_as_layers_made_on_spark(spark, tmp_path):
    rnd = random.Random(5)
    rounds = [_layered(rnd, range(1, 5), 40, 30, "a"), _layered(rnd, range(1, 7), 50, 25, "b"),
              _layered(rnd, range(1, 8), 60, 40, "c")]  # fmt: skip
    graphs, metas = {}, {}
    for where, limit in (("spark", "0"), ("here", None)):
        graphs[where], _ = _built(spark, tmp_path / where, rounds[0], None)  # both built here: the same numbers
        for i, triples in enumerate(rounds[1:], start=2):
            _import(graphs[where], tmp_path / where, f"round{i}", triples)
            with _limit(spark, limit):
                metas[where, i] = graphs[where].update(progress=lambda _: None)
    for i in (2, 3):
        here, on_spark = metas["here", i], metas["spark", i]
        assert "updated in this process" in here["timings"] and "numbering" in on_spark["timings"]
        assert {k: here[k] for k in [*_SHARED, "added"]} == {k: on_spark[k] for k in [*_SHARED, "added"]}
        assert set(here) == set(on_spark)
    last = metas["here", 3]
    assert last["added"]["components_merged"] > 0 and last["sets"] > last["components"]  # merged, and split
    every = set().union(*rounds)
    keys = rnd.sample(sorted({(t[0], t[1]) for t in every} | {(t[2], t[3]) for t in every}), 40)
    found = _traces(graphs["here"], keys)
    assert found == _traces(graphs["spark"], keys)
    assert {k: sorted(v) for k, v in found.items()} == _reference(every, keys)
    own = ("bytes", "created", "timings", "max_node", "added")
    stats = {k: v for k, v in graphs["here"].stats().items() if k not in own}
    assert stats == {k: v for k, v in graphs["spark"].stats().items() if k not in own}


def test_the_limit_is_read_from_the_spark_conf(spark, tmp_path):
    triples = {("raw", 1, "clean", 10, "f"), ("clean", 10, "report", 100, "s")}
    _, meta = _built(spark, tmp_path / "one", triples, "1")  # two triples: more than the limit
    assert "built in this process" not in meta["timings"]
    with pytest.raises(InvalidArgument, match="localTriples='many' must be a count of triples"):
        _built(spark, tmp_path / "bad", triples, "many")
