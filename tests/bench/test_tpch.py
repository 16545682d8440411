"""TPC-H queries at SF 0.01, through ``sparkprov bench coverage``'s per-query check.

Every query must pass: identical answers with capture on and off, re-execution of
one output row over its traced rows (3 in ``bench coverage``), forward/backward
consistency. To keep the suite short this runs one query of each shape; ``sparkprov
bench coverage --suite tpch`` runs all 22.
"""

from __future__ import annotations

import pytest

from sparkprov.bench import coverage, tpch


@pytest.fixture(scope="module")
def tpch_suite(spark, tpch_dir):
    suite = coverage.suite("tpch")
    suite.register(spark, tpch_dir)
    return suite


# aggregate, correlated scalar subquery (min), EXISTS, scalar subquery in HAVING,
# outer join + count, NOT IN, IN over a grouped subquery, EXISTS + NOT EXISTS, and
# Q22 (one source read twice with a negation between the reads)
SUBSET = [1, 2, 4, 11, 13, 16, 18, 21, 22]


@pytest.mark.parametrize("n", SUBSET)
def test_tpch_query(spark, session, tpch_suite, tpch_dir, n):
    entry = coverage.check_query(spark, session, tpch_dir, tpch_suite, f"q{n}", rows=1)
    assert entry["status"] == "pass", entry
    assert set(session.load(f"q{n}").sources) <= set(tpch.TABLES)
    # only Q22 reads a source twice with a negation between the reads
    assert entry.get("by_occurrence", False) == (n == 22)
