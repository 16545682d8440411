"""The flights demo's five charts, on a slice of the flights: every brush the page's
server answers equals the other charts' queries re-run with the brush as a filter
(DuckDB over the same Parquet; the check ``sparkprov bench ui`` makes on each brush)."""

from __future__ import annotations

import random

import pyarrow.parquet as pq

import sparkprov as sp
from sparkprov.bench.ui import check_counts, duckdb_runner, rerun_queries
from sparkprov.web.data import StoreView
from sparkprov.web.flights import CHARTS, ROWS, capture_charts, flights_table


def test_flights_replicated_are_numbered_apart():
    table = flights_table(2)
    assert table.num_rows == 2 * ROWS
    assert table["row"][ROWS].as_py() == ROWS and table["arr_delay"].null_count == 2 * 9_430


def test_every_brush_of_the_demo_equals_a_rerun_of_the_other_charts(spark, tmp_path):
    path = tmp_path / "flights"
    path.mkdir()
    table = flights_table().slice(0, 6_000)
    pq.write_table(table.slice(0, 3_000), path / "part-0.parquet")
    pq.write_table(table.slice(3_000), path / "part-1.parquet")
    session = sp.LineageSession(spark, store=tmp_path / "store")
    names = capture_charts(session, path)
    assert names == list(CHARTS)
    view = StoreView(str(session.store.root))
    duck = duckdb_runner(path)
    for measure in ("count(*)", "avg(arr_delay)"):
        linked = view.linked(names, measure=measure)
        charts = linked["charts"]
        assert [sum(c["total"]) for c in charts] == [6_000] * 5
        delay = charts[names.index("flights_by_delay")]
        assert delay["labels"][-1] == "NULL"  # cancelled flights: no arrival delay, a bin of their own
        # every capture's drill-down table answers the four charts grouping by a column of the flights
        assert len(linked["drill_down"]) == 5 * 4 - 4
        rng = random.Random(3)
        for _ in range(15):
            chart = rng.randrange(5)
            lo = rng.randrange(len(charts[chart]["labels"]))
            groups = list(range(lo, min(len(charts[chart]["labels"]), lo + rng.randrange(1, 5))))
            answer = view.brush(names, chart, groups, measure=measure)
            check_counts(answer["counts"], charts, chart, rerun_queries(duck, charts, chart, groups, measure))
