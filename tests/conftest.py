"""One SparkSession for the whole suite (per pytest-xdist worker); small data, few shuffle partitions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkprov as sp
from sparkprov.local import local_session

ROOT = Path(__file__).resolve().parents[1]

# a Java helper that stops compiling fails the tests instead of leaving a slower path
# in its place (the tests of those paths turn this off)
os.environ.setdefault("SPARKPROV_STRICT_JVM", "1")


@pytest.fixture(scope="session")
def spark(tmp_path_factory) -> SparkSession:
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = local_session(
        "sparkprov-tests", **{"spark.default.parallelism": "2", "spark.sql.warehouse.dir": str(warehouse)}
    )
    yield session
    session.stop()


@pytest.fixture
def session(spark, tmp_path) -> sp.LineageSession:
    return sp.LineageSession(spark, store=tmp_path / "store")


@pytest.fixture(scope="session")
def tpch_dir() -> Path:
    from sparkprov.bench.tpch import generate

    base = Path(os.environ.get("SPARKPROV_TPCH", ROOT / "data" / "tpch"))
    return generate(0.01, base)


@pytest.fixture(scope="session")
def tpcds_dir() -> Path:
    from sparkprov.bench.tpcds import generate

    base = Path(os.environ.get("SPARKPROV_TPCDS", ROOT / "data" / "tpcds"))
    return generate(0.01, base)
