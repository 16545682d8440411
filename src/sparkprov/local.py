"""A local SparkSession for the demo, the benchmarks and the tests.

>>> local_session("sparkprov-doc").conf.get("spark.ui.enabled")
'false'
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def local_session(app: str, shuffle_partitions: int = 2, driver_memory: str = "2g", **conf: str) -> SparkSession:
    """A ``local[2]`` session (this project's machines have 2 cores), quiet, without the UI."""
    # Python workers run this interpreter (the project's environment), not whatever
    # `python3` is first on PATH: UDFs need the same packages as the driver
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", "-XX:G1HeapRegionSize=32m")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
