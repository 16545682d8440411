"""Captures started from the page, in a real browser: a query over the session's tables
captured as a job with progress (its lineage then equals a capture made in Python),
cancellable; statements refused before Spark sees them; no form without a session."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

import sparkprov as sp
from sparkprov.web.server import UiServer

QUERY = "SELECT who, count(*) AS n, sum(amount) AS total FROM page_orders GROUP BY who"


@pytest.fixture(scope="module")
def capturing(spark, tmp_path_factory):
    """A page served by a session of its own store, with a temporary view to query and
    a function slow while a flag file exists (a capture to cancel)."""
    root = tmp_path_factory.mktemp("capturing")
    rows = [(i, ["ann", "bob", "cy"][i % 3], float(i)) for i in range(90)]
    spark.createDataFrame(rows, "id long, who string, amount double").coalesce(2).write.parquet(str(root / "orders"))
    spark.read.parquet(str(root / "orders")).createOrReplaceTempView("page_orders")
    flag = root / "slow"

    def slow(who):
        import os
        import time

        if os.path.exists(flag):
            time.sleep(0.5)
        return who

    spark.udf.register("page_slow", slow, "string")
    session = sp.LineageSession(spark, store=root / "store")
    session.slow_flag = flag
    with UiServer(str(session.store.root), port=0, session=session) as server:
        yield server, session
    spark.catalog.dropTempView("page_orders")


def _fill(page, ui, name: str, sql: str) -> None:
    page.goto(ui.url)
    page.click('[data-test="capture-form"] summary')
    page.fill('input[aria-label="capture name"]', name)
    page.fill('textarea[aria-label="query to capture"]', sql)
    page.click('[data-test="capture"]')


def test_a_query_captured_from_the_page_traces_as_one_captured_in_python(capturing, page, spark):
    ui, session = capturing
    page.goto(ui.url)
    expect(page.locator('[data-test="capture-form"]')).to_contain_text("page_orders")
    _fill(page, ui, "from_page", QUERY)
    expect(page.locator('[data-test="captured"]')).to_have_text("from_page v1", timeout=60_000)
    assert "3 output rows" in page.inner_text('[data-test="capture-progress"]')

    captured = session.load("from_page")
    made_here = session.capture(spark.sql(QUERY), name="in_python")
    (source,) = captured.sources
    for who in ("ann", "cy"):
        got = captured.backward(f"who = '{who}'", source).select("id").collect()
        assert sorted(r.id for r in got) == sorted(
            r.id for r in made_here.backward(f"who = '{who}'", source).select("id").collect()
        )
    page.click('[data-test="captured"]')  # on to its view
    expect(page.locator('[data-test="output"] tbody tr')).to_have_count(3)
    assert page.errors == []


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("DROP VIEW page_orders", "is not a query (found a statement, DROP)"),
        ("SELECT 1; DROP VIEW page_orders", "';' ends a statement"),
        ("CACHE TABLE page_orders", "is not a query"),
        ("SELECT * FROM no_such_table", "no_such_table"),
    ],
)
def test_statements_and_bad_queries_are_refused_and_nothing_runs(capturing, page, spark, sql, why):
    ui, session = capturing
    _fill(page, ui, "refused", sql)
    expect(page.locator("#error")).to_contain_text(why, timeout=30_000)
    assert spark.catalog.tableExists("page_orders")
    assert "refused" not in session.captures()


def test_a_capture_shows_its_progress_and_can_be_cancelled(capturing, page):
    ui, session = capturing
    session.slow_flag.touch()
    try:
        _fill(page, ui, "cancelled", "SELECT page_slow(who) AS who, count(*) AS n FROM page_orders GROUP BY 1")
        expect(page.locator('[data-test="job-state"]')).to_contain_text("tasks in", timeout=30_000)
        page.click('[data-test="cancel"]')
        expect(page.locator('[data-test="job-state"]')).to_have_text("cancelled", timeout=30_000)
        (job,) = [j for j in ui.jobs.list() if j.what == "capture cancelled"]
        assert job.ended.wait(60)  # the work stopped: it did not go on to commit
    finally:
        session.slow_flag.unlink()
    assert "cancelled" not in session.captures()
    assert page.errors == []


def test_without_a_session_there_is_no_form_and_the_api_says_why(ui, page):
    page.goto(ui.url)
    page.wait_for_selector('[data-test="captures"]')
    assert page.locator('[data-test="capture-form"]').count() == 0
    answer = page.evaluate(
        """async () => {
            const r = await fetch("/api/capture", {method: "POST", headers: {"content-type": "application/json"},
                                                   body: JSON.stringify({name: "x", sql: "SELECT 1"})});
            return [r.status, await r.json()];
        }"""
    )
    assert answer[0] == 409 and answer[1]["kind"] == "SessionRequired"


def test_the_name_is_checked(capturing, page):
    ui, _ = capturing
    _fill(page, ui, "../escape", QUERY)
    expect(page.locator("#error")).to_contain_text("invalid capture name '../escape'")


def test_the_lineage_graph_is_built_from_the_page_as_a_job(capturing, page):
    ui, session = capturing
    if "from_page" not in session.captures():  # a capture whose pairs the graph holds
        session.capture(session.spark.sql(QUERY), name="from_page")
    page.goto(ui.url)
    expect(page.locator('[data-test="graph-status"]')).to_have_text("Lineage graph: not built")
    page.click('[data-test="build-graph"]')
    expect(page.locator('[data-test="graph-status"]')).to_contain_text("current", timeout=180_000)
    stats = session.graph().stats()
    status = page.inner_text('[data-test="graph-status"]')
    assert f"{stats['nodes']} nodes, {stats['edges']} edges" in status and stats["edges"] > 0
    assert page.errors == []


def test_without_a_session_the_graph_is_shown_but_not_built(ui, page):
    page.goto(ui.url)
    expect(page.locator('[data-test="graph-status"]')).to_have_text("Lineage graph: not built")
    assert page.locator('[data-test="build-graph"]').count() == 0
