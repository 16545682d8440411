"""The example programs shipped inside the pyspark package, under ``sparkprov run``:
the same output as a plain run, every action captured, and traces that equal a
plain-Python reading of each program."""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import pyspark
import pytest

import sparkprov as sp

from .running import run_plain, run_traced

EXAMPLES = Path(pyspark.__file__).parent / "examples" / "src" / "main" / "python"
TEXT = ["to be or not", "to be", "not to see", "be"]
NUMBERS = ["5 3 9", "1 3", "7"]
PEOPLE_JSON = '{"name":"Michael"}\n{"name":"Andy", "age":30}\n{"name":"Justin", "age":19}\n'
PEOPLE_TXT = ["Michael, 29", "Andy, 30", "Justin, 19"]


def _run_both(script: Path, args: list[str], store: Path) -> tuple[str, sp.LineageSession]:
    plain = run_plain(script, args)
    traced = run_traced(script, args, store)
    assert traced == plain
    return plain, store


def _one(session: sp.LineageSession, prefix: str) -> sp.Capture:
    (name,) = [n for n in session.captures() if n.startswith(prefix)]
    return session.load(name)


def _values(traced: dict) -> list[str]:
    (rows,) = traced.values()
    return sorted(r["value"] for r in rows.collect())


def test_wordcount(kept_session, tmp_path):
    (tmp_path / "text.txt").write_text("\n".join(TEXT) + "\n")
    out, store = _run_both(EXAMPLES / "wordcount.py", [str(tmp_path / "text.txt")], tmp_path / "store")
    assert "be: 3" in out.splitlines()
    session = sp.LineageSession(kept_session, store=store)
    counts = _one(session, "wordcount.collect.")
    for word in ("be", "see"):
        traced = counts.backward(f"_1 = '{word}'", end_to_end=True)
        assert _values(traced) == sorted(t for t in TEXT if word in t.split(" "))


def test_sort(kept_session, tmp_path):
    (tmp_path / "numbers.txt").write_text("\n".join(NUMBERS) + "\n")
    out, store = _run_both(EXAMPLES / "sort.py", [str(tmp_path / "numbers.txt")], tmp_path / "store")
    assert out.split() == ["1", "3", "3", "5", "7", "9"]
    session = sp.LineageSession(kept_session, store=store)
    ordered = _one(session, "sort.collect.")
    assert _values(ordered.backward("_1 = 3", end_to_end=True)) == ["1 3", "5 3 9"]


def test_pagerank(kept_session, tmp_path):
    data = Path(pyspark.__file__).parent / "data" / "mllib" / "pagerank_data.txt"
    lines = data.read_text().splitlines()
    iterations = 2
    out, store = _run_both(EXAMPLES / "pagerank.py", [str(data), str(iterations)], tmp_path / "store")
    session = sp.LineageSession(kept_session, store=store)
    ranks = _one(session, "pagerank.collect.")
    expected = _pagerank_lineage(lines, iterations)
    assert len(out.splitlines()) == len(expected)
    for url, rows in expected.items():
        assert _values(ranks.backward(f"_1 = '{url}'", end_to_end=True)) == sorted(lines[i] for i in rows)


def _pagerank_lineage(lines: list[str], iterations: int) -> dict[str, set[int]]:
    """The lines behind each URL's rank: its links come from its own lines (distinct,
    grouped); a rank from the links and rank of every URL linking to it."""
    links, neighbours = defaultdict(set), defaultdict(set)
    for i, line in enumerate(lines):
        src, dst = line.split()[:2]
        links[src].add(i)
        neighbours[src].add(dst)
    rank = {u: set(rows) for u, rows in links.items()}
    for _ in range(iterations):
        nxt = defaultdict(set)
        for u in links:
            for v in neighbours[u]:
                nxt[v] |= links[u] | rank[u]
        rank = nxt
    return dict(rank)


def test_transitive_closure_at_a_small_size(kept_session, tmp_path):
    # the shipped program, on a graph of 30 edges instead of 200 (its two constants)
    text = (EXAMPLES / "transitive_closure.py").read_text()
    assert "numEdges = 200\nnumVertices = 100\n" in text
    script = tmp_path / "transitive_closure.py"
    script.write_text(text.replace("numEdges = 200\nnumVertices = 100\n", "numEdges = 30\nnumVertices = 15\n"))
    out, store = _run_both(script, [], tmp_path / "store")
    session = sp.LineageSession(kept_session, store=store)
    counts = sorted(n for n in session.captures() if n.startswith("transitive_closure.count."))
    final = session.load(counts[-1])  # the line printing the result
    edges = {r["_sp_rid"]: (r["_1"], r["_2"]) for r in final.sources["parallelize_0"].rows().collect()}
    expected = _closure_lineage(set(edges.values()))
    assert out == f"TC has {len(expected)} edges\n"
    found = defaultdict(set)
    output = {r["_sp_rid"]: (r["_1"], r["_2"]) for r in final.output.collect()}
    for p in final.pairs("parallelize_0").collect():
        found[output[p["out_rid"]]].add(edges[p["in_rid"]])
    assert dict(found) == expected


def _closure_lineage(edges: set[tuple[int, int]]) -> dict[tuple[int, int], set]:
    """The program's rounds: a path (x, z) from edge (x, y) and path (y, z); its lineage
    the edges of every derivation found until a round adds no path."""
    tc = {e: {e} for e in edges}
    while True:
        grown = {k: set(v) for k, v in tc.items()}
        for (a, b), used in tc.items():
            for x, y in edges:
                if y == a:
                    grown.setdefault((x, b), set()).update(used | {(x, y)})
        if len(grown) == len(tc):
            return grown
        tc = grown


def test_sql_basic(kept_session, tmp_path):
    resources = tmp_path / "examples" / "src" / "main" / "resources"
    resources.mkdir(parents=True)
    (resources / "people.json").write_text(PEOPLE_JSON)
    (resources / "people.txt").write_text("\n".join(PEOPLE_TXT) + "\n")
    script = EXAMPLES / "sql" / "basic.py"
    with _working_directory(kept_session, tmp_path):  # it reads examples/src/main/resources/...
        plain = run_plain(script, [])
        kept_session.catalog.dropGlobalTempView("people")
        assert run_traced(script, [], tmp_path / "store") == plain
    assert "Name: Justin" in plain
    session = sp.LineageSession(kept_session, store=tmp_path / "store")
    names = session.captures()
    assert sum(n.startswith("basic.show.") for n in names) == 9
    # teenNames: SQL over a DataFrame made from an RDD of text lines, then an RDD again
    teen = _one(session, "basic.collect.").backward("value = 'Name: Justin'", end_to_end=True)
    assert _values(teen) == ["Justin, 19"]
    last_show = session.load(max((n for n in names if n.startswith("basic.show.")), key=lambda n: int(n[12:])))
    assert _values(last_show.backward("name = 'Andy'", end_to_end=True)) == ["Andy, 30"]


@contextmanager
def _working_directory(spark, path: Path):
    """Relative paths resolve against ``path``, in the JVM (where Spark resolves them)."""
    jvm = spark.sparkContext._jvm
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark.sparkContext._jsc.hadoopConfiguration())
    before = local.getWorkingDirectory()
    local.setWorkingDirectory(jvm.org.apache.hadoop.fs.Path(str(path)))
    try:
        yield
    finally:
        local.setWorkingDirectory(before)


@pytest.fixture(autouse=True)
def _no_global_view(kept_session):
    yield
    kept_session.catalog.dropGlobalTempView("people")
