"""The store's lineage graph as a user meets it: built from a pipeline of five captured
jobs, its traces (recursive and by component) equal to each other and to the
end-to-end traces of the captures, which it then answers itself (equal to traces job by
job); imports from elsewhere; the command line."""

from __future__ import annotations

import json
import random
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import rustworkx as rx
from pyspark.sql import functions as F

from sparkprov.errors import InvalidArgument
from sparkprov.graphs.queries import METHODS, GraphNotBuilt

from ..cli.test_main import sparkprov_cli, sparkprov_process


def _pipeline(spark, session, tmp_path):
    orders = spark.createDataFrame(
        [(i, ["NL", "BE", "DE", "FR"][i % 4], (i * 7) % 11 - 2) for i in range(40)],
        "id int, country string, amount int",
    )
    orders.coalesce(2).write.parquet(str(tmp_path / "orders"))
    regions = session.source(
        spark.createDataFrame([("NL", "north"), ("BE", "north"), ("DE", "central")], "country string, region string"),
        "regions",
    )

    def read(name: str):
        return session.source(spark.read.parquet(str(tmp_path / name)), name)

    caps = [session.capture(read("orders").where("amount > 0"), "clean", path=tmp_path / "clean")]
    caps.append(session.capture(read("clean").join(regions, "country"), "joined", path=tmp_path / "joined"))
    by_country = read("joined").groupBy("region", "country").agg(F.sum("amount").alias("total"))
    caps.append(session.capture(by_country, "by_country", path=tmp_path / "by_country"))
    by_region = read("by_country").groupBy("region").agg(F.sum("total").alias("total"))
    caps.append(session.capture(by_region, "by_region", path=tmp_path / "by_region"))
    report = read("by_region").join(read("by_country").select("region", "country"), "region")
    caps.append(session.capture(report, "report"))
    return caps


def _rids(frames, suffix: str) -> list[int]:
    return sorted({r["_sp_rid"] for key, df in frames.items() if key.split("/")[-1] == suffix for r in df.collect()})


def test_graph_traces_equal_end_to_end_traces(spark, session, tmp_path, monkeypatch):
    caps = _pipeline(spark, session, tmp_path)
    by_region = session.source(spark.read.parquet(str(tmp_path / "by_region")), "by_region")
    top = session.capture(by_region.where("total > 0"), "top")  # five jobs in a chain: top, by_region ... clean
    graph = session.graph()
    with pytest.raises(GraphNotBuilt, match="sparkprov graph build"):
        graph.backward("report@1", 0)
    assert graph.end_to_end(top._plan, [0]) is None  # not built: end-to-end traces go job by job
    # components of 5 nodes or more split into sets, two levels of datasets per split
    meta = graph.build(buckets=3, progress=lambda _: None, threshold=5, split_depth=2)
    assert meta["nodes"] > 0 and meta["components"] >= 2 and graph.stale() == []
    assert meta["sets"] > meta["components"] and meta["set_dependencies"] > 0
    report = caps[-1]
    # a report row of each region (each traced by Spark job by job: several jobs a trace)
    for rid in [min(r["_sp_rid"] for r in report.output.collect() if r["region"] == g) for g in ("north", "central")]:
        traces = [graph.backward("report@1", rid, method=m) for m in METHODS]
        assert all(t.triples.equals(traces[0].triples) for t in traces[1:])
        rq, ccprov, csprov = (t.read for t in traces)
        assert csprov <= ccprov  # the sets read are part of the component
        reached = traces[0].rows().to_pylist()
        end_to_end = report.backward([rid], end_to_end=True, engine="spark")  # job by job
        for source in ("orders", "regions"):
            in_graph = sorted(r["rid"] for r in reached if r["dataset"].split("/")[-1].split("@")[0] == source)
            assert in_graph == _rids(end_to_end, source), (rid, source)
        # every hop's op names the capture and source it came from
        assert {t.split("@")[0] for t in traces[0].triples.column("op").to_pylist()} == {
            "report", "by_region", "by_country", "joined", "clean"
        }  # fmt: skip
    _end_to_end_from_the_graph(spark, session, tmp_path, graph, top, report, monkeypatch)
    clean = caps[0]
    # an order of a country in the report and one of FR (no region: the join drops it),
    # each traced by Spark end to end and by the graph
    kept = clean.sources["orders"].rows().where("amount > 0").collect()
    for first in [min(r["_sp_rid"] for r in kept if r["country"] == c) for c in ("NL", "FR")]:
        forward = [graph.forward(_orders_dataset(graph), first, method=m) for m in METHODS]
        assert all(t.triples.equals(forward[0].triples) for t in forward[1:])
        reports = sorted(r["rid"] for r in forward[0].rows().to_pylist() if r["dataset"] == "report@1")
        expected = clean.forward("orders", [first], end_to_end=True).get("report")
        assert reports == sorted(r["_sp_rid"] for r in expected.collect()) if expected is not None else reports == []
    # a row that was filtered out has no lineage to trace
    dropped = clean.sources["orders"].rows().where("amount <= 0").first()["_sp_rid"]
    with pytest.raises(InvalidArgument, match="in no triple"):
        graph.forward(_orders_dataset(graph), dropped)
    # a later capture makes the build stale, until an update adds it
    ids = session.capture(spark.read.parquet(str(tmp_path / "clean")).select("id"), "ids")
    assert graph.stale() == ["ids@1", "later@1"]
    updated = graph.update(progress=lambda _: None)
    assert updated["build"] == 2 and graph.stale() == [] and updated["added"]["components_merged"] == 0
    # the update's rows: an id traced to the order it was cleaned from, through both jobs
    row = ids.output.first()
    behind = graph.backward("ids@1", row["_sp_rid"], method="csprov").rows().to_pylist()
    orders = [r["rid"] for r in behind if r["dataset"] == _orders_dataset(graph)]
    assert orders == [r["_sp_rid"] for r in clean.sources["orders"].rows().where(f"id = {row['id']}").collect()]


def _frames(traced) -> dict[str, list]:
    return {k: sorted(tuple(r) for r in df.orderBy("_sp_rid").collect()) for k, df in traced.items()}


def _end_to_end_from_the_graph(spark, session, tmp_path, graph, top, report, monkeypatch) -> None:
    """End-to-end traces of ``top`` (five jobs in a chain) read from the built graph equal
    traces job by job; ``report`` (two paths of writers meet) and a capture made since
    the build are not answered from the graph."""
    from sparkprov.query.planner import Planner

    job_by_job = Planner.backward

    def refused(*args, **kwargs):
        raise AssertionError("traced job by job, not from the graph")

    for start in ([top.output.first()["_sp_rid"]], "true"):
        want = _frames(top.backward(start, end_to_end=True, engine="spark"))
        monkeypatch.setattr(Planner, "backward", refused)
        got = _frames(top.backward(start, end_to_end=True))
        monkeypatch.setattr(Planner, "backward", job_by_job)
        assert got == want, start
    assert set(got) == {"by_region/by_country/joined/clean/orders", "by_region/by_country/joined/regions"}
    assert graph.end_to_end(report._plan, report._plan.output_rids("true")) is None
    later = session.capture(session.source(spark.read.parquet(str(tmp_path / "by_region")), "by_region"), "later")
    assert graph.end_to_end(later._plan, later._plan.output_rids("true")) is None
    assert graph.end_to_end(top._plan, top._plan.output_rids("true")) is not None


def _orders_dataset(graph) -> str:
    (name,) = [d for d in graph._graph().datasets if d.startswith("orders@")]
    return name


def test_imported_triples_and_bad_imports(spark, session, tmp_path):
    good = tmp_path / "triples.csv"
    good.write_text(
        "src_dataset,src_rid,dst_dataset,dst_rid,op\n"
        "docs,1,clean_docs,10,dedup\ndocs,2,clean_docs,10,dedup\ndocs,3,clean_docs,11,dedup\n"
        "clean_docs,10,index,100,tokenize\nclean_docs,11,index,100,tokenize\nother,5,lonely,6,copy\n"
    )
    graph = session.graph()
    store = str(session.store.root)
    assert graph.import_triples(good) == 6
    built = sparkprov_cli("graph", "build", "--buckets", "2", "--store", store, "--json")
    assert built.returncode == 0, built.stderr
    meta = json.loads(built.stdout)
    assert (meta["nodes"], meta["edges"], meta["components"]) == (8, 6, 2)
    for method in METHODS:
        back = graph.backward("index", 100, method=method).rows().to_pylist()
        assert [(r["dataset"], r["rid"]) for r in back] == [
            ("clean_docs", 10), ("clean_docs", 11), ("docs", 1), ("docs", 2), ("docs", 3)
        ]  # fmt: skip
        assert graph.forward("docs", 3, method=method).rows().to_pylist() == [
            {"dataset": "clean_docs", "rid": 11}, {"dataset": "index", "rid": 100}
        ]  # fmt: skip
    stats = graph.stats()
    assert stats["components"] == 2 and stats["largest_component"] == 6 and stats["imports"] == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("src,dst\n1,2\n")
    with pytest.raises(InvalidArgument, match="lacks column 'src_dataset'"):
        graph.import_triples(bad)
    refused = sparkprov_cli("graph", "import", str(bad), "--store", store)
    assert refused.returncode == 1 and "lacks column 'src_dataset'" in refused.stderr
    empty_field = tmp_path / "empty.csv"
    empty_field.write_text("src_dataset,src_rid,dst_dataset,dst_rid,op\ndocs,x,clean_docs,1,dedup\n")
    with pytest.raises(InvalidArgument, match="empty or unreadable field"):
        graph.import_triples(empty_field)
    with pytest.raises(InvalidArgument, match="no dataset 'nope'"):
        graph.backward("nope", 1)
    with pytest.raises(InvalidArgument, match="method is one of"):
        graph.backward("index", 100, method="bfs")

    traced = sparkprov_process("graph", "trace", "index#100", "--method", "rq", "--store", store, "--json")
    assert traced.returncode == 0, traced.stderr
    answer = json.loads(traced.stdout)
    assert len(answer["rows"]) == 5 and len(answer["triples"]) == 5
    text = sparkprov_process("graph", "trace", "docs#3", "--forward", "--store", store)
    assert text.returncode == 0 and text.stdout.startswith("2 rows derived from docs#3 over 2 triples")
    stats_text = sparkprov_process("graph", "stats", "--store", store, "--json")
    assert json.loads(stats_text.stdout)["edges"] == 6
    wrong = sparkprov_cli("graph", "trace", "index", "--store", store)
    assert wrong.returncode == 1 and "dataset#rid" in wrong.stderr


def test_three_methods_equal_a_reference_on_random_layered_graphs(spark, session, tmp_path):
    # a workflow of eight tables, each row fed by rows of the one or two before it
    rnd = random.Random(3)
    triples = set()
    for layer in range(1, 8):
        for _ in range(70):
            back = 2 if layer > 1 and rnd.random() < 0.2 else 1
            triples.add((f"t{layer - back}", rnd.randrange(40), f"t{layer}", rnd.randrange(40), f"step{layer}"))
    columns = list(zip(*sorted(triples)))
    names = ["src_dataset", "src_rid", "dst_dataset", "dst_rid", "op"]
    pq.write_table(pa.table(dict(zip(names, columns))), tmp_path / "triples.parquet")
    graph = session.graph()
    assert graph.import_triples(tmp_path / "triples.parquet") == len(triples)
    meta = graph.build(buckets=4, progress=lambda _: None, threshold=20, split_depth=2)
    assert meta["sets"] > meta["components"]
    reference = rx.PyDiGraph()
    index: dict[tuple[str, int], int] = {}
    for a_ds, a, b_ds, b, _ in triples:
        ends = [index.setdefault(key, reference.add_node(key)) for key in ((a_ds, a), (b_ds, b))]
        reference.add_edge(*ends, None)
    keys = rnd.sample(sorted(index), 30)
    for key in keys:
        for direction, expected in (("backward", rx.ancestors), ("forward", rx.descendants)):
            want = sorted(reference[n] for n in expected(reference, index[key]))
            for method in METHODS:
                trace = getattr(graph, direction)(key[0], key[1], method=method)
                assert [(r["dataset"], r["rid"]) for r in trace.rows().to_pylist()] == want, (key, direction, method)
    # a build written before by_set was bucketed by component is read as it was written
    _by_set_as_before(graph._graph().folder, buckets=4)
    older = session.graph()
    for key in keys:
        want = sorted(reference[n] for n in rx.ancestors(reference, index[key]))
        trace = older.backward(key[0], key[1], method="csprov")
        assert [(r["dataset"], r["rid"]) for r in trace.rows().to_pylist()] == want, key


def _by_set_as_before(folder, buckets: int) -> None:
    # by_set as builds wrote it before: bucketed and sorted by dst_set, no component column
    table = pq.read_table(folder / "by_set").drop_columns(["component", "bucket"])
    shutil.rmtree(folder / "by_set")
    for b in range(buckets):
        part = table.filter(pc.equal(pc.bit_wise_and(table["dst_set"], buckets - 1), b)).sort_by("dst_set")
        (folder / "by_set" / f"bucket={b}").mkdir(parents=True)
        pq.write_table(part, folder / "by_set" / f"bucket={b}" / "part-0.parquet", row_group_size=16)
