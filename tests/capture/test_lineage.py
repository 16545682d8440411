"""Resolving slots and side relations into end-to-end pairs (``capture/lineage.py``).

The side relations here are written by hand, so each test states its lineage
exactly: what the pairs must be, and how much work resolving them may take.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sparkprov.capture import lineage
from sparkprov.capture.lineage import HANDLE, OUT, POS, SideGraph, shared_pairs, source_pairs, union_pairs
from sparkprov.capture.shapes import SideRelation
from sparkprov.store.format import Slot


def _pairs(found: dict) -> dict[int, set[tuple[int, int]]]:
    return {src: {tuple(r) for r in union_pairs(parts).collect()} for src, parts in found.items()}


class _Graph:
    """A SideGraph over DataFrames, counting what resolving asks of it."""

    def __init__(self, spark, sides: list[SideRelation], rows: dict[int, list[tuple]], schemas: dict[int, str]):
        self.frames = {k: spark.createDataFrame(rows[k], schemas[k]) for k in rows}
        self.built = Counter()
        self.kept_rows: list[int] = []
        self.graph = SideGraph(sides=sides, relation=self._relation, source_of=lambda i: i, keep=self._keep)

    def _relation(self, k):
        self.built[k] += 1
        return self.frames[k]

    def _keep(self, df):
        kept = df.localCheckpoint()
        self.kept_rows.append(kept.count())
        return kept


@pytest.mark.parametrize("own_rows", [True, False])
def test_a_group_reached_along_many_paths_is_joined_once_per_output_row(spark, own_rows):
    # TPC-DS q70's shape: every row of side 1 (a semi join's left side, or a group
    # over a join) meets the same aggregated row, whose group (side 0) holds all 200
    # input rows. With ``own_rows`` side 1 also has a source slot of its own.
    n = 200
    own = [Slot("s1", "source", 1)] if own_rows else []
    sides = [
        SideRelation(0, "Aggregate", None, [Slot("s0", "source", 0)]),
        SideRelation(1, "Join", None, [*own, Slot("g0", "group", 0)]),
    ]
    g = _Graph(
        spark,
        sides,
        rows={0: [("TN", i) for i in range(n)], 1: [(i, i, "TN") for i in range(n)]},
        schemas={0: f"{HANDLE} string, s0 long", 1: f"{HANDLE} long, s1 long, g0 string"},
    )
    # two output rows: one over every row of side 1, one over the first ten
    outputs = spark.createDataFrame([(0, i) for i in range(n)] + [(1, i) for i in range(10)], f"{OUT} long, g1 long")
    pairs = _pairs(source_pairs(outputs, [Slot("g1", "group", 1)], g.graph))
    assert pairs[0] == {(o, i) for o in (0, 1) for i in range(n)}  # through the aggregated row: its whole group
    if own_rows:
        assert pairs[1] == {(0, i) for i in range(n)} | {(1, i) for i in range(10)}
        assert g.kept_rows == [n + 10]  # side 1's join, read once per slot
    else:
        assert g.kept_rows == [2]  # side 0 is probed with the distinct (output row, handle) pairs: 2, not 210
    assert g.built == {0: 1, 1: 1}


def test_a_few_matches_are_resolved_through_the_broadcasting_relation(spark, monkeypatch):
    # A semi join's matches (side 0) have a second form, ``narrow``, whose join
    # broadcasts its left side; it answers when few handles are reached. Here its rows
    # are marked (rid + 1000) to tell which form answered.
    side = SideRelation(0, "Join (LeftSemi)", None, [Slot("s0", "source", 0)], combine="matches")
    schema = f"{HANDLE} long, s0 long"
    wide = spark.createDataFrame([(10, 100), (10, 101), (11, 102), (12, 103)], schema)
    narrow = wide.selectExpr(HANDLE, "s0 + 1000 AS s0")
    asked = []
    graph = SideGraph(
        sides=[side], relation=lambda k: wide, source_of=lambda i: i, narrow=lambda k: asked.append(k) or narrow
    )
    outputs = spark.createDataFrame([(0, 10), (1, 11)], f"{OUT} long, g0 long")
    slots = [Slot("g0", "group", 0)]
    assert _pairs(source_pairs(outputs, slots, graph)) == {0: {(0, 1100), (0, 1101), (1, 1102)}}
    assert asked == [0]
    monkeypatch.setattr(lineage, "NARROW_MAX_HANDLES", 1)  # two handles reached: more than that
    assert _pairs(source_pairs(outputs, slots, graph)) == {0: {(0, 100), (0, 101), (1, 102)}}


def test_a_side_shared_by_two_parents_is_resolved_once(spark):
    # a diamond: sides 1 and 2 both lead to side 0
    sides = [
        SideRelation(0, "Aggregate", None, [Slot("s0", "source", 0)]),
        SideRelation(1, "Aggregate", None, [Slot("a", "group", 0)]),
        SideRelation(2, "Aggregate", None, [Slot("b", "group", 0)]),
    ]
    g = _Graph(
        spark,
        sides,
        rows={0: [("x", 10), ("x", 11), ("y", 12)], 1: [(1, "x")], 2: [(2, "y"), (2, "x")]},
        schemas={0: f"{HANDLE} string, s0 long", 1: f"{HANDLE} long, a string", 2: f"{HANDLE} long, b string"},
    )
    outputs = spark.createDataFrame([(100, 1, 2), (101, 1, None)], f"{OUT} long, g1 long, g2 long")
    found = source_pairs(outputs, [Slot("g1", "group", 1), Slot("g2", "group", 2)], g.graph)
    assert _pairs(found) == {0: {(100, 10), (100, 11), (100, 12), (101, 10), (101, 11)}}
    assert g.built == {0: 1, 1: 1, 2: 1}


def test_window_slots_name_position_ranges_of_their_partition(spark):
    sides = [SideRelation(0, "Window", None, [Slot("s0", "source", 0)], ranged=True)]
    g = _Graph(
        spark,
        sides,
        rows={0: [("p", pos, 50 + pos) for pos in range(5)] + [("q", 0, 60)]},
        schemas={0: f"{HANDLE} string, {POS} long, s0 long"},
    )
    outputs = spark.createDataFrame(
        [(1, ("p", 1, 3)), (2, ("p", 0, 0)), (3, ("q", 0, 4))], f"{OUT} long, w struct<h string, lo long, hi long>"
    )
    found = source_pairs(outputs, [Slot("w", "window", 0)], g.graph)
    assert _pairs(found) == {0: {(1, 51), (1, 52), (1, 53), (2, 50), (3, 60)}}


def test_shared_sides_are_referenced_and_resolved_once(spark):
    # a scalar subquery's row (side 0, shared) read by every output row
    sides = [SideRelation(0, "Aggregate", None, [Slot("s0", "source", 0)], shared=True)]
    g = _Graph(spark, sides, rows={0: [(0, 7), (0, 8)]}, schemas={0: f"{HANDLE} int, s0 long"})
    outputs = spark.createDataFrame([(1, 0), (2, 0)], f"{OUT} long, g0 int")
    found = source_pairs(outputs, [Slot("g0", "group", 0)], g.graph)
    assert _pairs(found) == {-1: {(1, 0), (2, 0)}}  # references, not copies
    assert g.built == {}
    repeated, unique = shared_pairs({0}, g.graph)
    assert unique == []  # (a window's tree)
    shared = {tuple(r) for r in union_pairs(repeated).collect()}
    assert shared == {(0, 0, 0, 7), (0, 0, 0, 8)}  # (ref, set, src, in_rid): its one set, 0


def test_a_few_groups_are_read_by_their_key_values(spark, tmp_path, monkeypatch):
    # An aggregate's side relation over a Parquet source: the output reached two of
    # its groups, one with a NULL key. Their key values are pushed to the scan, and
    # the pairs are those of the two groups, the NULL one included.
    monkeypatch.setattr(lineage, "SMALL_BYTES", 0)  # as large as a side worth the job finding its keys
    path = str(tmp_path / "groups")
    rows = [(k % 4 if k % 4 else None, f"v{k % 2}", 100 + k) for k in range(40)]
    spark.createDataFrame(rows, "k long, v string, s0 long").write.parquet(path)
    side = SideRelation(0, "Aggregate", None, [Slot("s0", "source", 0)])

    def relation(k):
        return spark.read.parquet(path).selectExpr(f"named_struct('_0', k, '_1', v) AS {HANDLE}", "s0")

    graph = SideGraph(sides=[side], relation=relation, source_of=lambda i: i)
    outputs = spark.createDataFrame([(0, (1, "v1")), (1, (None, "v0"))], f"{OUT} long, g0 struct<_0: long, _1: string>")
    slots = [Slot("g0", "group", 0)]
    expected = {0: {(0, 100 + k) for k in range(40) if k % 4 == 1} | {(1, 100 + k) for k in range(0, 40, 4)}}
    found = source_pairs(outputs, slots, graph)
    assert _pairs(found) == expected
    scan = found[0][0]._jdf.queryExecution().executedPlan().toString()
    assert "In(k, [1])" in scan or "EqualTo(k,1)" in scan, scan
    assert "IsNull(k)" in scan, scan

    monkeypatch.setattr(lineage, "PREFILTER_MAX_HANDLES", 1)  # two groups reached: more than that
    found = source_pairs(outputs, slots, graph)
    assert _pairs(found) == expected
    assert "IsNull(k)" not in found[0][0]._jdf.queryExecution().executedPlan().toString()

    # a side whose files are small is read whole: no job to find the keys first
    monkeypatch.undo()
    found = source_pairs(outputs, slots, graph)
    assert _pairs(found) == expected
    assert "IsNull(k)" not in found[0][0]._jdf.queryExecution().executedPlan().toString()
