"""Replay and what-if: the captured query re-run with sources replaced, and the diff."""

from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov import demo


@pytest.fixture
def errors(spark, session, tmp_path):
    log = demo.write_log(tmp_path / "app.log", lines=400)
    lines, descriptions, report = demo.error_report(spark, log)
    session.source(lines, "log")
    session.source(descriptions, "descriptions")
    return log, lines, session.capture(report, name="errors")


def error_counts(text: str, skip: str | None = None) -> Counter:
    return Counter(
        int(line.split()[3]) for line in text.splitlines() if " ERROR " in line and (skip is None or skip not in line)
    )


def test_titian_example_3_errors_without_guest(spark, errors):
    log, lines, cap = errors
    result = cap.replay({"log": lines.where(~F.col("value").contains(" GUEST "))}, key="code")
    expected = error_counts(log.read_text(), skip=" GUEST ")
    assert {r["code"]: r["count"] for r in result.output.collect()} == dict(expected)
    before = error_counts(log.read_text())
    changed = {r["code"]: (r["__sp_was_count"], r["count"]) for r in result.changed.collect()}
    assert changed == {c: (before[c], expected[c]) for c in before if expected[c] != before[c]} and changed
    assert result.counts() == {"added": 0, "removed": 0, "changed": len(changed)}
    assert {r["__sp_was_description"] for r in result.changed.collect()} <= {d for _, d in demo.DESCRIPTIONS}


def test_replay_without_the_traced_rows(spark, errors):
    log, lines, cap = errors
    top = cap.output.orderBy(F.desc("count")).first()
    traced = cap.backward([top["_sp_rid"]], source="log")
    # the rows of the source (with their _sp_rid) minus the traced ones; extra columns are ignored
    kept = cap.sources["log"].rows().join(traced.select("_sp_rid"), "_sp_rid", "left_anti")
    result = cap.replay({"log": kept})
    assert [r["code"] for r in result.removed.collect()] == [top["code"]]
    assert result.added.count() == 0 and result.changed is None
    assert result.output.count() == cap.output.count() - 1


def test_replay_arguments_are_checked(spark, session, errors):
    _, lines, cap = errors
    with pytest.raises(ValueError, match="no source 'nope'"):
        cap.replay({"nope": lines})
    with pytest.raises(ValueError, match="lacks its columns"):
        cap.replay({"log": lines.select(F.col("value").alias("other"))})
    with pytest.raises(ValueError, match="key columns"):
        cap.replay({"log": lines}, key="nope")
    with pytest.raises(ValueError, match="non-empty dict"):
        cap.replay({})
    elsewhere = sp.LineageSession(spark, store=session.store.root).load("errors")
    with pytest.raises(ValueError, match="not made in this session"):
        elsewhere.replay({"log": lines})
