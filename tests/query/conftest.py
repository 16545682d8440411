"""Sources of the workload tests (drill-down, partitioned lineage)."""

from __future__ import annotations

from decimal import Decimal

import pytest


@pytest.fixture
def orders(spark, session):
    # a NULL mode every seventh row; decimals and doubles to sum and average
    rows = [(i, i % 5, None if i % 7 == 0 else str(i % 3), Decimal(i) * Decimal("1.25"), i / 3) for i in range(60)]
    schema = "oid long, cust long, mode string, price decimal(10, 2), w double"
    return session.source(spark.createDataFrame(rows, schema), "orders")


@pytest.fixture
def customers(spark, session):
    rows = [(i, str(i % 2)) for i in range(5)]
    return session.source(spark.createDataFrame(rows, "cust long, region string"), "customers")
