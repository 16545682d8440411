"""Titian's workloads (bench/titian.py) at a small size: the traced program returns what
the plain one does, and every output record's lineage is the input lines a
plain-Python reading of the workload gives."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

import sparkprov as sp
from sparkprov.bench import titian


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> titian.Data:
    return titian.generate(120_000, tmp_path_factory.mktemp("titian"))


def _lines(path: str) -> list[str]:
    return [line for f in sorted(Path(path).glob("part-*")) for line in f.read_text().splitlines()]


def _reference(name: str, d: titian.Data) -> dict:
    """{output key: set of input lines} as the workload means it."""
    found = defaultdict(set)
    if name == "wordcount":
        for line in _lines(d.text):
            for w in line.split(" "):
                found[w].add(line)
    elif name == "grep":
        for line in _lines(d.text):
            if titian.GREP_TERM in line.split(" "):
                found[line].add(line)
    elif name == "log":
        for line in _lines(d.log):
            if line.startswith("ERROR"):
                found[int(line.split(" ")[1])].add(line)
    else:
        power = {line.split("\t")[0]: line for line in _lines(d.power_users)}
        for line in _lines(d.page_views):
            f = line.split("\t")
            if name == "pigmix_l2" and f[0] in power:
                found[f[0]] |= {line, power[f[0]]}
            elif name == "pigmix_l6":
                found[(f[0], f[3], f[4], f[5])].add(line)
            elif name == "pigmix_l7":
                found[f[0]].add(line)
    return found


def _key(name: str, row):
    """An output row's key, as the reference names it (a record is stored as _1, _2... or value)."""
    if name == "grep":
        return row["value"]
    return tuple(row["_1"]) if name == "pigmix_l6" else row["_1"]


@pytest.mark.parametrize("name", sorted(titian.WORKLOADS))
def test_workload_lineage_matches_its_meaning(spark, session, data, name):
    program = titian.WORKLOADS[name]
    plain = program(spark.sparkContext, data).collect()
    traced = program(sp.LineageContext(spark.sparkContext, session=session), data)
    records = traced.collect(name=name)
    assert sorted(map(repr, records)) == sorted(map(repr, plain))
    cap = traced.capture
    expected = _reference(name, data)
    # one entry per output key (L2 has one record per view of a power user: same lineage per user)
    got = defaultdict(set)
    keys = {r["_sp_rid"]: _key(name, r) for r in cap.output.collect()}
    for source in cap.sources:
        rows = {r["_sp_rid"]: r["value"] for r in cap.sources[source].rows().collect()}
        for p in cap.pairs(source).collect():
            got[keys[p["out_rid"]]].add(rows[p["in_rid"]])
    assert dict(got) == dict(expected)


def test_benchmark_reports_ratios_storage_and_word_traces(spark, data):
    report = titian.run(spark, 120_000, ["wordcount", "grep"], 1, str(Path(data.text).parent.parent))
    assert [w["workload"] for w in report["workloads"]] == ["wordcount", "grep"]
    for w in report["workloads"]:
        assert w["median_ratio"] > 0 and len(w["plain_s"]) == len(w["traced_s"]) == 1
    wc = report["workloads"][0]
    assert wc["lineage_bytes"] > 0 and wc["storage_ratio"] == float(f"{wc['lineage_bytes'] / wc['input_bytes']:.3g}")
    lines = _lines(data.text)
    for t in wc["backward_trace"]:  # as sparkprov trace answers it: in this process
        assert t["engine"] == "embedded"
        assert t["lines"] == sum(1 for line in lines if t["word"] in line.split(" "))
