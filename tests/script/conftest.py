"""Running scripts inside the suite's one SparkSession: plainly, and under ``sparkprov run``."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession


@pytest.fixture
def kept_session(spark, monkeypatch):
    """Scripts end with spark.stop(); the suite's one session must outlive them."""
    monkeypatch.setattr(SparkSession, "stop", lambda self: None)
    return spark
