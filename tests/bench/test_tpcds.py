"""A subset of Spark's TPC-DS queries at SF 0.01, through ``bench coverage``'s per-query check.

The subset covers what TPC-H does not: window functions (ranking and aggregates over
frames), ROLLUP, INTERSECT and EXCEPT. One output row per query is
checked here to keep the suite short; ``sparkprov bench coverage --suite tpcds`` runs all
103 files with three rows each.
"""

from __future__ import annotations

import pytest

from sparkprov.bench import coverage

SUBSET = ["q36", "q38", "q51", "q87"]


@pytest.fixture(scope="module")
def tpcds_suite(spark, tpcds_dir):
    suite = coverage.suite("tpcds")
    suite.register(spark, tpcds_dir)
    return suite


@pytest.mark.parametrize("name", SUBSET)
def test_tpcds_query(spark, session, tpcds_suite, tpcds_dir, name):
    entry = coverage.check_query(spark, session, tpcds_dir, tpcds_suite, name, rows=1)
    assert entry["status"] == "pass", entry
