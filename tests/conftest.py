"""One SparkSession for the whole suite; small data, few shuffle partitions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkprov as sp

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark(tmp_path_factory) -> SparkSession:
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("sparkprov-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "2g")
        .config("spark.sql.adaptive.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
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
