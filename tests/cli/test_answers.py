"""The command line's answers, computed as ``sparkprov trace`` prints them."""

from __future__ import annotations

from pyspark.sql.classic.dataframe import DataFrame

from sparkprov.cli.answers import drill_down


def test_a_drill_down_counts_the_matched_rows_once(session, orders, monkeypatch):
    workload = {"sources": ["orders"], "group_by": {"orders": {"by": ["mode"], "aggregates": ["count(*)"]}}}
    cap = session.capture(orders.groupBy("cust").count(), "by_cust", workload=workload)
    root, entry = str(session.store.root), cap._entry
    rows = orders.collect()
    want = {}
    for r in rows:
        if r.cust in (1, 2):
            want[r.mode] = want.get(r.mode, 0) + 1
    # DuckDB finds and counts the output rows a predicate matches: Spark does not count them again
    counted = []
    monkeypatch.setattr(DataFrame, "count", lambda self: counted.append(self) or 0)
    answer = drill_down(root, entry, "cust IN (1, 2)", "orders")
    assert counted == [] and answer.matched == 2
    assert {r["mode"]: r["count(*)"] for r in answer.groups.to_pylist()} == want
    nothing = drill_down(root, entry, "cust > 100", "orders")
    assert nothing.matched == 0 and nothing.groups.num_rows == 0
    assert "0 output rows matched; orders: 0 groups" in nothing.to_text()
