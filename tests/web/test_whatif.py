"""What-if in a real browser: source rows behind an output row left out, the capture
replayed from the session that made it, and the diff shown equal to ``cap.replay``;
a replay in progress shows its tasks and can be cancelled."""

from __future__ import annotations

import pyspark.sql.functions as F
from playwright.sync_api import expect


def _trace_who(page, ui, capture: str, who: str) -> None:
    page.goto(ui.url)
    page.wait_for_selector('[data-test="captures"]')
    page.click(f"a:text-is('{capture}')")
    page.wait_for_selector('[data-test="output"]')
    page.locator('[data-test="output"] tbody tr', has_text=who).locator("input").check()
    page.click('[data-test="trace-selected"]')
    page.wait_for_selector('[data-test="backward"]')


def test_leaving_out_source_rows_shows_the_replayed_outputs_diff(ui_replaying, ui_session, page):
    _trace_who(page, ui_replaying, "totals", "bob")
    rows = page.locator('[data-test="backward"] tbody tr')
    rids = [int(rows.nth(i).get_attribute("data-rid")) for i in (0, 1)]
    for i in (0, 1):
        rows.nth(i).locator("input").check()
    page.click('[data-test="what-if"]')
    expect(page.locator('[data-test="job-state"]')).to_contain_text("0 added, 1 changed", timeout=60_000)

    cap = ui_session.load("totals")
    (source,) = cap.sources
    without = cap.sources[source].rows().where(~F.col("_sp_rid").isin(rids)).drop("_sp_rid")
    (row,) = cap.replay({source: without}, key="who").changed.collect()
    shown = page.eval_on_selector_all('[data-test="diff-changed"] tbody td', "cells => cells.map(c => c.textContent)")
    assert shown == [
        "bob",
        f"{row['__sp_was_total']:g} → {row['total']:g}",
        f"{row['__sp_was_n']} → {row['n']}",
    ]
    assert "without 2 rows of" in page.inner_text('[data-test="job-state"]')
    assert page.errors == []


def test_leaving_out_the_rows_a_predicate_holds_for(ui_replaying, ui_session, page):
    _trace_who(page, ui_replaying, "totals", "bob")
    page.fill('input[aria-label^="leave out rows of"]', "amount > 150 AND who <> 'ann'")
    page.click('[data-test="what-if-where"]')
    expect(page.locator('[data-test="job-state"]')).to_contain_text("changed", timeout=60_000)

    cap = ui_session.load("totals")
    (source,) = cap.sources
    rows = cap.sources[source].rows()
    without = rows.where("NOT coalesce(amount > 150 AND who <> 'ann', false)").drop("_sp_rid")
    replayed = cap.replay({source: without}, key="who")
    changed = {r["who"]: r for r in replayed.changed.collect()}
    shown = page.eval_on_selector_all(
        '[data-test="diff-changed"] tbody tr', "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert {cells[0] for cells in shown} == set(changed) and "ann" not in changed
    for cells in shown:
        row = changed[cells[0]]
        assert cells[2] == f"{row['__sp_was_n']} → {row['n']}"
    left_out = rows.where("amount > 150 AND who <> 'ann'").count()
    assert f"without {left_out} rows of" in page.inner_text('[data-test="job-state"]')
    assert page.errors == []


def test_a_predicate_to_leave_out_is_checked_as_the_api_checks_one(ui_replaying, page):
    _trace_who(page, ui_replaying, "totals", "bob")
    page.fill('input[aria-label^="leave out rows of"]', "1=1; DROP TABLE x")
    page.click('[data-test="what-if-where"]')
    expect(page.locator("#error")).to_contain_text("';' ends a statement")


def test_a_replay_shows_its_progress_and_can_be_cancelled(ui_replaying, ui_session, page):
    ui_session.slow_flag.touch()
    try:
        _trace_who(page, ui_replaying, "slow", "ann")
        page.locator('[data-test="backward"] tbody tr').first.locator("input").check()
        page.click('[data-test="what-if"]')
        expect(page.locator('[data-test="job-state"]')).to_contain_text("tasks in", timeout=30_000)
        page.click('[data-test="cancel"]')
        expect(page.locator('[data-test="job-state"]')).to_have_text("cancelled", timeout=30_000)
        assert page.locator('[data-test="diff-changed"]').count() == 0
    finally:
        ui_session.slow_flag.unlink()
    assert page.errors == []


def test_what_if_needs_the_session_that_made_the_capture(ui, page):
    _trace_who(page, ui, "totals", "bob")  # the page of `sparkprov ui`: no session
    assert page.locator('[data-test="what-if"]').count() == 0
