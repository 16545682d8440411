"""Connected components on Spark against a union-find reference, on random graphs and
on the shapes that are hardest for these algorithms: long chains (numbered in and out
of order) and stars."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sparkprov.errors import InvalidArgument
from sparkprov.graphs.components import (
    LOCAL_EDGES_CONF,
    connected,
    local_components,
    streamed_components,
    weakly_connected,
)


def _reference(edges: list[tuple[int, int]]) -> dict[int, int]:
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    smallest: dict[int, int] = {}
    for n in parent:
        r = find(n)
        smallest[r] = min(smallest.get(r, n), n)
    return {n: smallest[find(n)] for n in parent}


def _shapes(seed: int) -> dict[str, list[tuple[int, int]]]:
    rnd = random.Random(seed)
    order = list(range(1200))
    rnd.shuffle(order)
    return {
        "random sparse": [(rnd.randrange(500), rnd.randrange(500)) for _ in range(300)],
        "random dense": [(rnd.randrange(200), rnd.randrange(200)) for _ in range(2000)],
        # chains need the most rounds (their length's logarithm): long enough for a dozen;
        # numbered in order, shuffled and descending, apart in one graph (a Spark round
        # costs the same for one chain or three)
        "chains": [(i, i + 1) for i in range(1200)]
        + [(100_000 + order[i], 100_000 + order[i + 1]) for i in range(len(order) - 1)]
        + [(200_000 + i + 1, 200_000 + i) for i in range(1000)],
        "stars": [(10_000 * s, 10_000 * s + i) for s in range(1, 4) for i in range(1, 800)]
        + [(5, 10_000 * s + 17) for s in range(1, 3)],  # two stars joined through node 5
        "self loops and repeats": [(1, 1), (2, 3), (3, 2), (2, 3), (9, 9)],
    }


@pytest.mark.parametrize("shape", list(_shapes(0)))
def test_components_equal_union_find(spark, tmp_path, shape):
    edges = _shapes(0)[shape]
    df = spark.createDataFrame(edges, "src long, dst long")
    found = {r.node: r.component for r in weakly_connected(spark, df, tmp_path).collect()}
    assert found == _reference(edges)
    src, dst = (np.array(ends, np.int64) for ends in zip(*edges))
    local = local_components(src, dst)  # small graphs' components, found without Spark
    assert dict(zip(*(local.column(c).to_pylist() for c in ("node", "component")))) == found
    for size in (1, 97):  # and taken a few edges at a time, as from a large graph's files
        chunks = [(src[i : i + size], dst[i : i + size]) for i in range(0, len(src), size)]
        streamed = streamed_components(chunks)
        assert dict(zip(*(streamed.column(c).to_pylist() for c in ("node", "component")))) == found


def test_components_of_a_hundred_thousand_edges(spark, tmp_path):
    # a random forest of long paths and a few hubs, 10^5 edges
    rnd = random.Random(7)
    nodes = list(range(60_000))
    rnd.shuffle(nodes)
    edges = [(nodes[i], nodes[i + 1]) for i in range(0, 59_999) if i % 5000 != 4999]
    edges += [(rnd.randrange(60_000), rnd.randrange(60_000, 120_000)) for _ in range(100_000 - len(edges))]
    df = spark.createDataFrame(edges, "src long, dst long")
    found = {r.node: r.component for r in weakly_connected(spark, df, tmp_path).collect()}
    assert len(edges) == 100_000
    assert found == _reference(edges)


def test_connected_finds_few_edges_in_the_driver_unless_told_otherwise(spark, tmp_path):
    edges = _shapes(1)["self loops and repeats"]
    df = spark.createDataFrame(edges, "src long, dst long")
    assert {r.node: r.component for r in connected(spark, df, tmp_path / "a").collect()} == _reference(edges)
    assert (tmp_path / "a" / "local").is_dir()
    try:
        spark.conf.set(LOCAL_EDGES_CONF, "4")  # one edge fewer than the graph has: Spark's rounds
        assert {r.node: r.component for r in connected(spark, df, tmp_path / "b").collect()} == _reference(edges)
        assert not (tmp_path / "b" / "local").exists()
        spark.conf.set(LOCAL_EDGES_CONF, "lots")
        with pytest.raises(InvalidArgument, match="localEdges='lots' must be a count of edges"):
            connected(spark, df, tmp_path / "c")
    finally:
        spark.conf.unset(LOCAL_EDGES_CONF)
