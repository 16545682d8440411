"""Updating the lineage graph: triples imported after a build, added as layers by two
updates (new rows, new tables, components merged, a label merged twice), answer every
trace as a reference graph does, the three methods alike, and the graph's sizes are
the reference's; what an update cannot do it refuses."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import rustworkx as rx

from sparkprov.errors import InvalidArgument
from sparkprov.graphs.queries import METHODS, GraphNotBuilt
from sparkprov.store.layout import StoreFolders

from ..cli.test_main import sparkprov_cli

_NAMES = ["src_dataset", "src_rid", "dst_dataset", "dst_rid", "op"]


def _layered(rnd: random.Random, tables: range, rows: int, count: int, step: str) -> set[tuple]:
    # rows of each table fed by rows of the one or two before it
    triples = set()
    for layer in tables:
        for _ in range(count):
            back = 2 if layer > 1 and rnd.random() < 0.2 else 1
            triples.add((f"t{layer - back}", rnd.randrange(rows), f"t{layer}", rnd.randrange(rows), f"{step}{layer}"))
    return triples


def _import(graph, tmp_path, name: str, triples: set[tuple]) -> None:
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table(dict(zip(_NAMES, zip(*sorted(triples)), strict=True))), path)
    assert graph.import_triples(path) == len(triples)


def _traces(graph, keys) -> dict:
    found = {}
    for key in keys:
        for direction in ("backward", "forward"):
            answers = [getattr(graph, direction)(*key, method=m).rows().to_pylist() for m in METHODS]
            assert all(a == answers[0] for a in answers[1:]), (key, direction)
            found[key, direction] = [(r["dataset"], r["rid"]) for r in answers[0]]
    return found


def _graph(triples: set[tuple]) -> tuple[rx.PyDiGraph, dict]:
    graph, index = rx.PyDiGraph(), {}
    for a_ds, a, b_ds, b, _ in triples:
        for key in ((a_ds, a), (b_ds, b)):
            if key not in index:
                index[key] = graph.add_node(key)
        graph.add_edge(index[a_ds, a], index[b_ds, b], None)
    return graph, index


def _reference(triples: set[tuple], keys) -> dict:
    graph, index = _graph(triples)
    return {
        (key, direction): sorted(graph[n] for n in way(graph, index[key]))
        for key in keys
        for direction, way in (("backward", rx.ancestors), ("forward", rx.descendants))
    }


def test_updates_answer_as_a_build_of_everything(spark, session, tmp_path):
    graph = session.graph()
    with pytest.raises(GraphNotBuilt, match="build it first"):
        graph.update(progress=lambda _: None)
    rnd = random.Random(5)
    # a build of five tables, sparse enough to leave many components; then more rows
    # between them and two new tables; then denser triples everywhere, merging more
    rounds = [
        _layered(rnd, range(1, 5), 40, 30, "a"),
        _layered(rnd, range(1, 7), 50, 25, "b"),
        _layered(rnd, range(1, 8), 60, 40, "c"),
    ]
    _import(graph, tmp_path, "first", rounds[0])
    built = graph.build(buckets=4, progress=lambda _: None, threshold=20, split_depth=2)
    so_far = set(rounds[0])
    for i, triples in enumerate(rounds[1:], start=2):
        _import(graph, tmp_path, f"round{i}", triples)
        assert graph.stale() == []  # imports are not capture versions
        meta = graph.update(progress=lambda _: None)
        so_far |= triples
        assert meta["build"] == built["build"] + i - 1 and meta["layers"] == list(range(1, i + 1))
        assert meta["added"]["triples"] == len(triples) and meta["added"]["components_merged"] > 0
        assert meta["edges"] == len(so_far)
        keys = rnd.sample(sorted({(t[0], t[1]) for t in so_far} | {(t[2], t[3]) for t in so_far}), 10)
        assert _traces(graph, keys) == _reference(so_far, keys), f"after update {i - 1}"
    assert meta["sets"] > meta["components"]  # large components were split, and grew
    nothing = graph.update(progress=lambda _: None)
    assert nothing["build"] == meta["build"] and nothing["added"]["triples"] == 0
    # the sizes a build of everything would give, summed over the layers
    components = rx.weakly_connected_components(_graph(so_far)[0])
    stats = graph.stats()
    assert (stats["nodes"], stats["edges"]) == (
        len({(t[0], t[1]) for t in so_far} | {(t[2], t[3]) for t in so_far}),
        len(so_far),
    )
    assert (stats["components"], stats["largest_component"]) == (len(components), max(map(len, components)))
    assert (stats["components_smaller"], stats["layers"], stats["imports"], stats["datasets"]) == (
        len(components),
        3,
        3,
        8,
    )


def test_an_update_only_adds(spark, session, tmp_path):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, k string")
    session.capture(session.source(df, "items").where("id > 1"), "kept")
    graph = session.graph()
    graph.build(buckets=2, progress=lambda _: None)
    ks = session.capture(session.source(df, "items").select("k"), "ks")
    told = []
    meta = graph.update(progress=told.append)
    assert meta["added"] == {"triples": 2, "nodes": 4, "components_merged": 0} and graph.stale() == []
    assert told[0].startswith("lineage graph update of build 1: 1 capture versions, 0 imports")
    b = ks.output.where("k = 'b'").first()["_sp_rid"]
    want = ks.backward([b])["items"].first()["_sp_rid"]
    assert graph.backward("ks@1", b).rows().to_pylist() == [{"dataset": "ks@1/items", "rid": want}]
    StoreFolders(session.store.root).entry("kept", 1).unlink()  # a version removed by hand
    with pytest.raises(InvalidArgument, match="kept@1 were removed since build 2"):
        graph.update(progress=lambda _: None)
    refused = sparkprov_cli("graph", "update", "--store", str(session.store.root))
    assert refused.returncode == 1 and "an update only adds" in refused.stderr
