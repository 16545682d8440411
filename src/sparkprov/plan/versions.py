"""The Spark line sparkprov is verified on, and the check that a session runs it.

Catalyst's constructors (and so the nodes the bridge builds) differ between Spark lines,
and Spark Connect sessions have no Catalyst plans to read: a ``Bridge`` is made for a
classic session of the supported line only.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> spark_version(spark) == SUPPORTED_SPARK
True
>>> check_supported(spark)
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from ..errors import SparkUnsupported

SUPPORTED_SPARK = (4, 3)  # the verified line: Catalyst constructors differ between lines


def spark_version(spark: SparkSession) -> tuple[int, int]:
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


def check_supported(spark: SparkSession) -> None:
    """Raises ``SparkUnsupported`` for a Spark Connect session or another Spark line."""
    if not hasattr(spark, "_jsparkSession"):
        raise SparkUnsupported(
            "sparkprov needs a classic SparkSession with a JVM; Spark Connect sessions do not expose Catalyst plans"
        )
    if spark_version(spark) != SUPPORTED_SPARK:
        raise SparkUnsupported(f"sparkprov supports Spark 4.3 (verified), found {spark.version}")
