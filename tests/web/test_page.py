"""The page in a real browser, used as a user would: what it shows is checked against
the Python API's answers (on Spark, the other engine than the page's)."""

from __future__ import annotations

import pyspark.sql.functions as F
from playwright.sync_api import expect

from .conftest import IMAGE, SCRIPT


def _cells(page, table: str) -> list[list[str]]:
    """The text of every body cell of ``table`` (a data-test name), checkbox cells left out."""
    return page.eval_on_selector_all(
        f'[data-test="{table}"] tbody tr',
        "rows => rows.map(r => [...r.querySelectorAll('td')].filter(td => !td.querySelector('input'))"
        ".map(td => td.textContent))",
    )


def _source(ui_session) -> str:
    (name,) = ui_session.load("totals").sources
    return name


def _ids(df) -> list[str]:
    return [str(r["id"]) for r in df.orderBy("_sp_rid").collect()]


def _open_capture(page, ui, name: str) -> None:
    page.goto(ui.url)
    page.wait_for_selector('[data-test="captures"]')
    page.click(f"a:text-is('{name}')")
    page.wait_for_selector('[data-test="output"]')


def test_from_the_captures_to_the_rows_behind_a_selected_output_row(ui, ui_session, page):
    page.goto(ui.url)
    page.wait_for_selector('[data-test="captures"]')
    names = page.eval_on_selector_all('[data-test="captures"] tbody tr', "rows => rows.map(r => r.dataset.name)")
    assert names == ["big", "broken", "buckets", "by_who", "clean", "marked", "marked.pricey", "slow", "totals", "whos"]
    assert "failed: the script raised ZeroDivisionError" in page.inner_text("tr[data-name=broken]")
    assert "?token=" not in page.url  # the token went into a cookie, not into links a user shares

    page.click("a:text-is('totals')")
    page.wait_for_selector('[data-test="output"]')
    plan = _cells(page, "plan")
    assert [row[1] for row in plan] == ["exact", "exact"] and plan[0][0].startswith("Aggregate")
    page.locator('[data-test="output"] tbody tr', has_text="bob").locator("input").check()
    page.click('[data-test="trace-selected"]')
    page.wait_for_selector('[data-test="backward"]')

    source = _source(ui_session)
    expected = ui_session.load("totals").backward("who = 'bob'", source, engine="spark")
    shown = _cells(page, f"backward-{source}")
    assert [row[0] for row in shown] == _ids(expected)
    assert {row[1] for row in shown} == {"bob"}
    assert f"{source}: 50 rows" in page.inner_text('[data-test="backward"]')
    assert page.errors == []


def test_pages_through_a_trace_then_forward_from_a_source_row(ui, ui_session, page):
    _open_capture(page, ui, "totals")
    for who in ("ann", "bob"):
        page.locator('[data-test="output"] tbody tr', has_text=who).locator("input").check()
    page.click('[data-test="trace-selected"]')
    source = _source(ui_session)
    table = f'[data-test="backward-{source}"]'
    page.wait_for_selector(table)
    first = [row[0] for row in _cells(page, f"backward-{source}")]
    page.locator('[data-test="backward"] .relation button', has_text="next").click()
    page.wait_for_selector('[data-test="backward"] >> text=rows 51–100 of 100')
    second = [row[0] for row in _cells(page, f"backward-{source}")]
    cap = ui_session.load("totals")
    assert first + second == _ids(cap.backward("who IN ('ann', 'bob')", source, engine="spark"))

    rid = page.get_attribute(f"{table} tbody tr:last-child", "data-rid")
    page.locator(f"{table} tbody tr:last-child input").check()
    page.click('[data-test="trace-forward"]')
    page.wait_for_selector('[data-test="forward"]')
    expected = cap.forward(source, [int(rid)], engine="spark").collect()
    assert _cells(page, "forward") == [[r["who"], str(int(r["total"])), str(r["n"])] for r in expected]
    assert page.errors == []


def test_values_holding_markup_show_as_text_and_run_nothing(ui, page):
    _open_capture(page, ui, "totals")
    shown = {row[0] for row in _cells(page, "output")}
    assert {SCRIPT, IMAGE} <= shown
    page.fill('input[aria-label="filter output rows"]', "who LIKE '<%'")
    page.press('input[aria-label="filter output rows"]', "Enter")
    expect(page.locator('[data-test="output"] tbody tr')).to_have_count(2)
    page.click('[data-test="trace-matching"]')
    page.wait_for_selector('[data-test="backward"]')
    traced = page.locator('[data-test="backward"] table').get_attribute("data-test")
    assert {row[1] for row in _cells(page, traced)} == {SCRIPT, IMAGE}
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img, main script").count() == 0
    assert page.errors == []


def test_filter_sort_and_page_output_rows_in_an_address_that_reloads(ui, ui_session, page, spark):
    out = ui_session.load("big").output
    matching = out.filter("amount > 150 AND who <> 'ann'")
    total = matching.count()
    _open_capture(page, ui, "big")
    page.fill('input[aria-label="filter output rows"]', "amount > 150 AND who <> 'ann'")
    page.press('input[aria-label="filter output rows"]', "Enter")
    page.wait_for_selector(f"text=rows 1–50 of {total}")
    page.click("th:text-is('amount')")
    page.wait_for_selector("th:text-is('amount ▲')")
    page.click("th:text-is('amount ▲')")
    page.wait_for_selector("th:text-is('amount ▼')")
    page.click("button:text-is('next ›')")
    page.wait_for_selector(f"text=rows 51–{min(100, total)} of {total}")
    expected = matching.orderBy(out.amount.desc()).collect()[50:100]
    want = [[str(r["id"]), r["who"], f"{r['amount']:g}"] for r in expected]
    assert _cells(page, "output") == want

    page.reload()
    page.wait_for_selector('[data-test="output"]')
    assert _cells(page, "output") == want
    assert page.errors == []


def test_a_predicate_that_is_not_one_expression_is_refused_with_its_reason(ui, page):
    _open_capture(page, ui, "big")
    page.fill('input[aria-label="filter output rows"]', "amount > 1; DROP TABLE orders")
    page.press('input[aria-label="filter output rows"]', "Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert "one" in page.inner_text("#error").lower() or "statement" in page.inner_text("#error").lower()
    page.fill('input[aria-label="filter output rows"]', "id = 101")
    page.press('input[aria-label="filter output rows"]', "Enter")
    page.wait_for_selector("text=rows 1–1 of 1")
    assert page.is_hidden("#error")


def test_the_captures_filter_by_name(ui, page):
    page.goto(ui.url)
    page.wait_for_selector('[data-test="captures"]')
    page.fill('input[aria-label="filter captures by name"]', "TOT")
    expect(page.locator('[data-test="captures"] tbody tr')).to_have_count(1)
    assert page.get_attribute('[data-test="captures"] tbody tr', "data-name") == "totals"
    assert "like=TOT" in page.url


def test_why_and_how_of_a_selected_row_where_witnesses_were_kept(ui, ui_session, page):
    _open_capture(page, ui, "whos")
    page.locator('[data-test="output"] tbody tr', has_text="bob").locator("input").check()
    page.click('[data-test="why-how"]')
    page.wait_for_selector('[data-test="provenance"]')
    cap = ui_session.load("whos")
    (source,) = cap.sources
    behind = sorted(r["_sp_rid"] for r in cap.backward("who = 'bob'", source, engine="spark").collect())
    # a distinct row: each of the 50 rows behind it derives it alone
    assert "why: 50 witnesses" in page.inner_text('[data-test="provenance"]')
    witnesses = page.eval_on_selector_all('[data-test="why"] li', "items => items.map(i => i.textContent)")
    assert witnesses == [f"{source}#{rid}" for rid in behind]
    assert page.inner_text('[data-test="how"]').startswith("how: δ(")
    _open_capture(page, ui, "totals")  # kept no witnesses: no button
    assert page.locator('[data-test="why-how"]').count() == 0
    assert page.errors == []


def test_a_functional_dependency_shows_its_violations_and_the_rows_behind_one(ui, ui_session, page):
    _open_capture(page, ui, "big")
    page.select_option('select[aria-label="dependency from"]', "who")
    page.select_option('select[aria-label="dependency to"]', "amount")
    page.click('[data-test="check-fd"]')
    page.wait_for_selector('[data-test="bipartite"] svg')
    out = ui_session.load("big").output
    violating = out.groupBy("who").agg(F.countDistinct("amount").alias("b")).where("b > 1").count()
    assert page.inner_text('[data-test="fd-summary"]').startswith(
        f"{violating} values of who have more than one amount"
    )
    links = page.locator('[data-test="bipartite"] g[aria-label="link"] path')
    assert links.count() == out.where("who IS NOT NULL").select("who", "amount").distinct().count()
    links.first.click(force=True)
    page.wait_for_selector('[data-test="backward"]')
    (source,) = ui_session.load("big").sources
    assert f"{source}: 1 row" in page.inner_text('[data-test="backward"]')  # 'big' keeps each row it filters
    assert page.errors == []


def test_a_dependency_that_holds_says_so(ui, page):
    page.goto(ui.url)
    page.goto(ui.url.split("?")[0] + "#/fd/totals/1?a=who&b=n")
    expect(page.locator('[data-test="fd-summary"]')).to_have_text("the dependency holds: every who has one n")


def test_traces_go_on_through_the_job_that_wrote_a_source_and_into_those_that_read_an_output(ui, ui_session, page):
    _open_capture(page, ui, "by_who")
    (clean,) = ui_session.load("by_who").sources
    assert f"{clean}: parquet" in page.inner_text('[data-test="sources"]')
    assert "written by clean v1" in page.inner_text('[data-test="sources"]')
    page.locator('[data-test="output"] tbody tr', has_text="bob").locator("input").check()
    page.click('[data-test="trace-selected"]')
    page.wait_for_selector('[data-test="backward"]')
    page.click('[data-test="trace-on"]')  # the rows on the page: every one of bob's (fewer than 50)
    page.wait_for_selector('[data-test="backward"] >> text=Backward:')
    assert page.url.split("#")[1].startswith("/c/clean/1?")
    expected = ui_session.load("by_who").backward("who = 'bob'", end_to_end=True)
    ((name, rows),) = expected.items()
    (orders,) = ui_session.load("clean").sources
    assert name == f"clean/{orders}"
    shown = _cells(page, f"backward-{orders}")
    assert [row[0] for row in shown] == _ids(rows)

    assert "Its output was read by by_who v1" in page.inner_text('[data-test="readers"]')
    page.locator('[data-test="output"] tbody tr').first.locator("input").check()
    who = _cells(page, "output")[0][1]
    page.click('[data-test="forward-on"]')
    page.wait_for_selector('[data-test="forward"]')
    assert page.url.split("#")[1].startswith("/c/by_who/1?")
    assert [row[0] for row in _cells(page, "forward")] == [who]
    assert page.errors == []


def test_a_trace_steps_through_a_mark_one_point_at_a_time(ui, ui_session, page):
    _open_capture(page, ui, "marked")
    page.locator('[data-test="output"] tbody tr', has_text="ann").locator("input").check()
    page.click('[data-test="trace-selected"]')
    page.wait_for_selector('[data-test="backward"]')
    cursor = ui_session.load("marked").lineage("who = 'ann'")
    step = cursor.go_back()  # to the mark's rows
    assert [row[0] for row in _cells(page, "backward-pricey")] == _ids(step.to_df())
    page.click('[data-test="trace-on"]')  # on through the mark's capture: to the orders
    page.wait_for_selector(f'[data-test="backward-{_source(ui_session)}"]')
    assert page.url.split("#")[1].startswith("/c/marked.pricey/1?")
    assert [row[0] for row in _cells(page, f"backward-{_source(ui_session)}")] == _ids(step.go_back().to_df())
    assert page.errors == []
