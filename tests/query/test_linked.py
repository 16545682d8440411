"""Linked views: brushing groups of one captured aggregate measures the brushed source
rows behind every group of the others; checked against counts and aggregates made from
the source's rows directly (each row's groups derived from its values), on random
brushes, through the lineage's arrays, joint tables and drill-down tables alike."""

from __future__ import annotations

import math
import random

import pyspark.sql.functions as F
import pytest

from sparkprov.errors import InvalidArgument
from sparkprov.query.linked import LinkedViews

ROWS = 2_000


@pytest.fixture(scope="module")
def linked(spark, tmp_path_factory):
    import sparkprov as sp

    root = tmp_path_factory.mktemp("linked")
    rng = random.Random(7)
    rows = [
        (
            i,
            rng.choice("vwxyz"),
            rng.randrange(12),
            rng.choice(["p", "q", None]),
            rng.randrange(100),
            rng.choice([None, rng.uniform(-5, 5)]),
        )
        for i in range(ROWS)
    ]
    schema = "id long, a string, b int, c string, d int, e double"
    spark.createDataFrame(rows, schema).repartition(3).write.parquet(str(root / "t"))
    session = sp.LineageSession(spark, store=root / "store")
    t = spark.read.parquet(str(root / "t"))
    captures = {
        "by_a": (t.groupBy("a").count(), lambda r: [(r["a"],)]),
        "by_b": (t.groupBy("b").agg(F.sum("d").alias("d")), lambda r: [(r["b"],)]),
        "by_c": (t.groupBy("c").count(), lambda r: [(r["c"],)]),
        # every row in three groups: (a, b), (a, NULL), (NULL, NULL)
        "rollup": (t.rollup("a", "b").count(), lambda r: [(r["a"], r["b"]), (r["a"], None), (None, None)]),
        # rows with d <= 50 in no group
        "filtered": (t.filter("d > 50").groupBy("a").count(), lambda r: [(r["a"],)] if r["d"] > 50 else []),
    }
    for name, (df, _) in captures.items():
        session.capture(df, name=name)
    source = [r.asDict() for r in t.collect()]
    names = list(captures)
    views = LinkedViews([session.store.load(n) for n in names])
    return views, source, [captures[n][1] for n in names], session


def _measured(function: str, column: str, rows: list[dict]):
    if column == "*":
        return len(rows)
    values = [r[column] for r in rows if r[column] is not None]
    if function == "count":
        return len(values)
    if not values:
        return math.nan
    return {"sum": sum, "avg": lambda v: sum(v) / len(v), "min": min, "max": max}[function](values)


def _check_brush(views, source, groups_of, chart: int, picked: list[int], function="count", column="*"):
    keys = {_key(views.charts[chart], g) for g in picked}
    brushed = [r for r in source if keys & set(groups_of[chart](r))]
    for c, groups, answer in zip(views.charts, groups_of, views.brush(chart, picked)):
        behind: dict[tuple, list] = {}
        for row in brushed:
            for g in groups(row):
                behind.setdefault(g, []).append(row)
        expected = {_key(c, i): _measured(function, column, behind.get(_key(c, i), [])) for i in range(len(c.rids))}
        got = {_key(c, i): float(v) for i, v in enumerate(answer)}
        assert got == pytest.approx(expected, nan_ok=True, rel=1e-9, abs=1e-9), (c.capture, function, column)


def _key(chart, group: int) -> tuple:
    keys = len(chart.columns) - 1  # the group columns come first, one measure after them
    return tuple(chart.values[group][:keys])


def test_charts_list_each_group_with_the_source_rows_behind_it(linked):
    views, source, groups_of, _ = linked
    assert len(views.rids) == ROWS
    for chart, groups in zip(views.charts, groups_of):
        expected = {}
        for row in source:
            for g in groups(row):
                expected[g] = expected.get(g, 0) + 1
        assert {_key(chart, i): int(n) for i, n in enumerate(chart.total)} == expected
    by_c = views.charts[2]
    assert by_c.labels[-1] == "NULL"  # nulls sort last


@pytest.mark.parametrize("seed", range(12))
def test_a_brush_counts_the_brushed_rows_behind_every_group(linked, seed):
    views, source, groups_of, _ = linked
    rng = random.Random(seed)
    chart = rng.randrange(len(views.charts))
    n = len(views.charts[chart].rids)
    lo = rng.randrange(n)
    picked = list(range(lo, min(n, lo + rng.randrange(1, 4))))  # a range, as a brush over the x axis
    keys = {_key(views.charts[chart], g) for g in picked}
    brushed = [r for r in source if keys & set(groups_of[chart](r))]
    assert views.brushed_rows(chart, picked).size == views.brushed_count(chart, picked) == len(brushed)
    for c, groups, counts in zip(views.charts, groups_of, views.brush(chart, picked)):
        expected = {}
        for row in brushed:
            for g in groups(row):
                expected[g] = expected.get(g, 0) + 1
        assert {_key(c, i): int(k) for i, k in enumerate(counts) if k} == expected


@pytest.mark.parametrize("measure", ["count(e)", "sum(d)", "avg(e)", "min(e)", "max(d)"])
def test_a_measure_over_the_brushed_rows_behind_every_group(linked, measure, monkeypatch):
    import sparkprov.query.linked as module

    views, source, groups_of, session = linked
    function, column = measure[:-1].split("(")
    entries = [session.store.load(c.capture) for c in views.charts]
    measured = LinkedViews(entries, measure=measure)
    monkeypatch.setattr(module, "JOINT_MAX", 0)
    rows_only = LinkedViews(entries, measure=measure)
    assert measured.routes and not rows_only.routes
    for c in measured.charts:  # the bars without a brush: the measure over every row behind them
        assert c.total.tolist() == views.charts[measured.charts.index(c)].total.tolist()
    rng = random.Random(measure)
    for _ in range(6):
        chart = rng.randrange(len(views.charts))
        n = len(views.charts[chart].rids)
        lo = rng.randrange(n)
        picked = list(range(lo, min(n, lo + rng.randrange(1, 4))))
        for answering in (measured, rows_only):
            _check_brush(answering, source, groups_of, chart, picked, function, column)


def test_a_measure_names_a_column_of_the_source(linked):
    views, _, _, session = linked
    entries = [session.store.load(c.capture) for c in views.charts[:2]]
    with pytest.raises(InvalidArgument, match="needs a numeric column"):
        LinkedViews(entries, measure="sum(a)")
    with pytest.raises(InvalidArgument, match="no column 'nope'"):
        LinkedViews(entries, measure="count(nope)")
    with pytest.raises(InvalidArgument, match="measure 'median"):
        LinkedViews(entries, measure="median(d)")
    assert LinkedViews(entries, measure="count(a)").charts[0].value.tolist() == views.charts[0].total.tolist()


@pytest.mark.parametrize("measure", [None, "avg(e)", "sum(e)", "min(e)", "count(e)"])
def test_drill_down_tables_answer_where_they_hold_the_measure(linked, spark, measure):
    views, source, groups_of, session = linked
    (path,) = session.load("by_a").sources
    t = spark.read.parquet(path)
    workload = {
        "sources": [path],
        "group_by": {path: {"by": ["A", "c"], "aggregates": ["count(*)", "avg(e)", "min(e)"]}},
    }
    if "by_b_drill" not in session.store.names():
        session.capture(t.groupBy("b").agg(F.sum("d").alias("d")), name="by_b_drill", workload=workload)
    # by_c groups by c, which the table holds; "filtered" by a, but not every row behind by_b
    # is behind it (d <= 50): the lineage answers it
    names = ["by_b_drill", "by_c", "filtered", "by_a"]
    drilled = LinkedViews([session.store.load(n) for n in names], measure=measure)
    function, column = measure[:-1].split("(") if measure else ("count", "*")
    held = True  # count(*), avg(e), min(e) are kept; sum(e) and count(e) are avg(e)'s states
    routes = drilled.routes
    assert routes[0, 1] == ("drill-down" if held else "joint") and routes[0, 2] == "joint"
    assert routes[0, 3] == ("drill-down" if held else "joint") and routes[1, 0] == "joint"
    groups = [groups_of[1], groups_of[2], groups_of[4], groups_of[0]]
    rng = random.Random(3)
    for _ in range(6):
        n = len(drilled.charts[0].rids)
        picked = sorted(rng.sample(range(n), rng.randrange(1, n + 1)))
        _check_brush(drilled, source, groups, 0, picked, function, column)


def test_no_brush_and_every_group_brushed(linked):
    views, _, _, _ = linked
    assert all(not counts.any() for counts in views.brush(0, []))
    everything = views.brush(0, list(range(len(views.charts[0].rids))))
    assert [c.tolist() for c in everything] == [c.total.tolist() for c in views.charts]


def test_what_linked_views_refuse(linked, spark, tmp_path):
    views, _, _, session = linked
    with pytest.raises(InvalidArgument, match="groups 0 to 4"):
        views.brush(0, [5])
    with pytest.raises(InvalidArgument, match="chart must be"):
        views.brush(9, [0])
    with pytest.raises(InvalidArgument, match="two captures"):
        LinkedViews([session.store.load("by_a")])
    with pytest.raises(InvalidArgument, match="no output column 'nope'"):
        LinkedViews([session.store.load("by_a"), session.store.load("by_b")], x=["nope", None])
    (path,) = session.load("by_a").sources
    session.capture(spark.read.parquet(path).where("d > 1000").groupBy("a").count(), name="empty")
    empty = LinkedViews([session.store.load("by_a"), session.store.load("empty")])  # an empty chart
    assert empty.charts[1].labels == [] and [c.tolist() for c in empty.brush(0, [0])][1] == []
    other = spark.createDataFrame([("v", 1)], "a string, n int")
    session.capture(other.groupBy("a").count(), name="elsewhere")
    with pytest.raises(InvalidArgument, match="no common source"):
        LinkedViews([session.store.load("by_a"), session.store.load("elsewhere")])


def test_the_joint_tables_answer_as_the_brushed_rows_do(linked, monkeypatch):
    import sparkprov.query.linked as module

    views, _, _, session = linked
    monkeypatch.setattr(module, "JOINT_MAX", 0)  # every brush through the rows themselves
    rows_only = LinkedViews([session.store.load(c.capture) for c in views.charts])
    assert not rows_only._joint and views._joint
    rng = random.Random(11)
    for _ in range(20):
        chart = rng.randrange(len(views.charts))
        n = len(views.charts[chart].rids)
        picked = rng.sample(range(n), rng.randrange(1, n + 1))
        assert views.brushed_count(chart, picked) == rows_only.brushed_rows(chart, picked).size
        for a, b in zip(views.brush(chart, picked), rows_only.brush(chart, picked)):
            assert a.tolist() == b.tolist()
