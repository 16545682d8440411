"""Linked views in a real browser: captures picked in the list become charts, and
brushing bars of one chart redraws the others with the counts a re-run of their
queries, filtered to the brushed rows, gives (computed here on Spark)."""

from __future__ import annotations

import pyspark.sql.functions as F
import pytest
from playwright.sync_api import expect


def _drag_over_bars(page, chart: str, first: int, last: int) -> None:
    box = f'[data-test="chart-{chart}"]'
    bars = page.locator(f'{box} svg g[aria-label="bar"] rect')
    a, b = bars.nth(first).bounding_box(), bars.nth(last).bounding_box()
    area = page.locator(f"{box} g.brush rect.overlay").bounding_box()
    y = area["y"] + area["height"] / 2
    page.mouse.move(a["x"] + 1, y)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] - 1, y, steps=3)
    page.mouse.up()


def _brushed(page, chart: str) -> dict[str, str]:
    titles = page.eval_on_selector_all(
        f'[data-test="chart-{chart}"] g.brushed rect title', "ts => ts.map(t => t.textContent)"
    )
    return dict(t.split(": ", 1) for t in titles)


def test_brushing_one_chart_redraws_the_other_with_the_brushed_rows_counts(ui, ui_session, page, spark):
    page.goto(ui.url)
    page.wait_for_selector('[data-test="captures"]')
    page.check('input[aria-label="link buckets"]')
    page.check('input[aria-label="link totals"]')
    page.click('[data-test="link"]')
    page.wait_for_selector('[data-test="chart-totals"] svg')
    page.wait_for_selector('[data-test="chart-buckets"] svg')
    assert "200 rows of" in page.inner_text('[data-test="linked-status"]')

    _drag_over_bars(page, "buckets", 2, 4)  # buckets 2, 3 and 4
    expect(page.locator('[data-test="linked-status"]')).to_contain_text("60 of 200 rows brushed in buckets")
    (source,) = ui_session.load("totals").sources
    orders = spark.read.parquet(source)
    rerun = orders.filter((F.col("id") % 10).isin(2, 3, 4)).groupBy("who").count().collect()
    totals = {r["who"]: r["count"] for r in orders.groupBy("who").count().collect()}
    expected = {r["who"]: f"{r['count']} of {totals[r['who']]} rows brushed" for r in rerun}
    shown = _brushed(page, "totals")
    assert {k: v for k, v in shown.items() if not v.startswith("0 of")} == expected
    assert "b=0%3A2-4" in page.url  # chart 0 (buckets), groups 2 to 4

    page.reload()  # the brush is in the address
    expect(page.locator('[data-test="linked-status"]')).to_contain_text("60 of 200 rows brushed")
    assert _brushed(page, "totals") == shown
    assert page.errors == []


def test_linking_needs_two_captures_over_one_source(ui, page):
    page.goto(ui.url)  # the token becomes a cookie
    page.goto(ui.url.split("?")[0] + "#/linked?c=totals")
    page.wait_for_selector("#error:not([hidden])")
    assert "two captures or more" in page.inner_text("#error")


def test_the_bars_measure_an_aggregate_of_the_brushed_rows(ui, ui_session, page, spark):
    page.goto(ui.url)
    page.goto(ui.url.split("?")[0] + "#/linked?c=buckets&c=totals")
    page.wait_for_selector('[data-test="chart-totals"] svg')
    page.select_option('select[aria-label="measure"]', "avg")  # the first numeric column: id
    page.select_option('select[aria-label="measure\'s column"]', "amount")
    expect(page.locator('[data-test="chart-totals"] svg text').filter(has_text="avg(amount)")).to_have_count(1)
    assert "m=avg%28amount%29" in page.url

    _drag_over_bars(page, "buckets", 2, 4)
    expect(page.locator('[data-test="linked-status"]')).to_contain_text("60 of 200 rows brushed in buckets")
    (source,) = ui_session.load("totals").sources
    orders = spark.read.parquet(source)
    brushed = orders.filter((F.col("id") % 10).isin(2, 3, 4))
    rerun = {r["who"]: r["a"] for r in brushed.groupBy("who").agg(F.avg("amount").alias("a")).collect()}
    shown = page.eval_on_selector_all(
        '[data-test="chart-totals"] g.brushed rect',
        "rs => rs.map(r => [r.querySelector('title').textContent.split(':')[0], Number(r.dataset.value)])",
    )
    assert dict(shown) == {k: pytest.approx(v) for k, v in rerun.items()}
    assert page.errors == []
