"""A workflow's provenance exported (PROV-JSON, PROV-N, DOT, SVG, OpenLineage) and
asked about from the command line.

``schemas/OpenLineage-2-0-0.json`` is the RunEvent part of OpenLineage's spec schema 2-0-0
(OpenLineage/OpenLineage, website/static/spec/2-0-0/OpenLineage.json, Apache-2.0),
without its descriptions and without the branches for the spec's own facets (kept in
files of their own): the events here carry only sparkprov's facet.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import jsonschema
import pytest
from prov.model import ProvDocument
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.cli import main
from sparkprov.workflows import export

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "OpenLineage-2-0-0.json").read_text())


@pytest.fixture(scope="module")
def visits(spark, tmp_path_factory):
    store = tmp_path_factory.mktemp("visits")
    session = sp.LineageSession(spark, store=store)
    wf = sp.Workflow("visits", session)
    wf.state("seen", spark.createDataFrame([("home", 1)], "k string, v long"))

    @wf.module(inputs=["hits"], outputs=["total"], state=["seen"])
    def counter(hits, seen):
        new = hits.select("k", F.lit(1).cast("long").alias("v"))
        both = seen.unionByName(new)
        return {"total": both.groupBy("k").agg(F.sum("v").alias("v")), "seen": both}

    @wf.module(inputs=["total"], outputs=["top"])
    def top(total):
        return total.where("k != 'shop'")

    for rows in ([("home", 0), ("shop", 0)], [("home", 0)]):
        wf.run(hits=spark.createDataFrame(rows, "k string, v long"))
    return wf, session, store


def test_prov_json_reads_back_to_the_same_document(visits):
    wf, _, _ = visits
    g = wf.graph()
    doc = export.prov_document(g)
    again = ProvDocument.deserialize(content=export.prov_json(g), format="json")
    assert again == doc
    records = Counter(type(r).__name__ for r in doc.get_records())
    kinds = Counter(g.nodes.column("kind").to_pylist())
    assert records["ProvActivity"] == kinds["invocation"]
    assert records["ProvEntity"] == g.nodes.num_rows - kinds["invocation"]
    assert records["ProvGeneration"] + records["ProvUsage"] + records["ProvDerivation"] == g.edges.num_rows
    provn = export.prov_n(g)
    assert provn.count("activity(") == kinds["invocation"]
    assert provn.count("wasGeneratedBy(") == records["ProvGeneration"]


def test_dot_and_svg_draw_every_node_and_edge(visits):
    wf, _, _ = visits
    g = wf.graph().zoom_out("top")
    source = export.dot(g)
    assert source.count(" -> ") == g.edges.num_rows
    svg = export.svg(g).decode()
    assert svg.count('class="node"') == g.nodes.num_rows and svg.count('class="edge"') == g.edges.num_rows


def test_openlineage_events_validate_and_name_the_captures(visits):
    wf, session, _ = visits
    events = export.openlineage_events(wf.folders, wf.executions)
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for event in events:
        validator.validate(event)
    assert [(e["job"]["name"], e["run"]["facets"]["sparkprov"]["execution"]) for e in events] == [
        ("counter", 1),
        ("top", 1),
        ("counter", 2),
        ("top", 2),
    ]
    assert len({e["run"]["runId"] for e in events}) == 4
    for event in events:
        for c in event["run"]["facets"]["sparkprov"]["captures"]:
            assert session.load(c["capture"], c["version"]).output.count() > 0
    counter = events[0]
    assert {d["name"].rsplit("/", 2)[-1] for d in counter["outputs"]} == {"total", "v000001"}
    bad = dict(events[0], run={"facets": {}})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)  # the schema does check: a run without its id is refused


def _cli(capsys, *args) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_the_command_line_lists_sizes_deletes_and_exports(visits, capsys, tmp_path):
    wf, _, store = visits

    def cli(*args) -> str:
        return _cli(capsys, "workflow", *args, "--store", str(store))

    assert re.search(r"visits\s+2\s+2\s+0\s+counter, top", cli("list"))
    size = json.loads(cli("graph", "visits", "--json"))
    assert size["nodes"] == wf.graph().nodes.num_rows and size["modules"] == ["counter", "top"]
    coarse = json.loads(cli("graph", "visits", "--zoom-out", "all", "--json"))
    assert coarse["kinds"].get("op", 0) == 0 and coarse["kinds"]["module"] == 4
    assert json.loads(cli("zoom", "visits", "--out", "all", "--json")) == coarse
    half = json.loads(cli("zoom", "visits", "--out", "all", "--in", "top", "--json"))
    assert half["zoomed_out"] == ["counter"] and half["kinds"]["module"] == 2
    back = json.loads(cli("zoom", "visits", "--out", "counter,top", "--in", "all", "--json"))
    assert back == size  # ZoomIn undoes ZoomOut
    shop = wf.dataset("hits", 1).where("k = 'shop'").first()._sp_rid
    gone = json.loads(cli("delete", "visits", f"hits@1#{shop}", "--json"))
    removed = sorted(r["row"].split("#")[0] for r in gone["removed"])
    assert removed == ["hits@1", "seen@1", "seen@2", "total@1", "total@2"]
    home_total = wf.dataset("top", 2).first()._sp_rid
    first = wf.dataset("seen", 0).first()._sp_rid
    said = cli("depends", "visits", f"top@2#{home_total}", f"seen@0#{first}")
    assert "does not depend" in said  # two more visits home keep the total
    out = tmp_path / "g.json"
    cli("export", "visits", "--format", "prov-json", "-o", str(out))
    assert ProvDocument.deserialize(content=out.read_text(), format="json") == export.prov_document(wf.graph())
    assert len(json.loads(cli("export", "visits", "--format", "openlineage"))) == 4
    assert main(["workflow", "graph", "nope", "--store", str(store)]) == 1
    assert "no workflow 'nope'" in capsys.readouterr().err
    assert main(["workflow", "delete", "visits", "hits-1-0", "--store", str(store)]) == 1
    assert "dataset@version#rid" in capsys.readouterr().err
