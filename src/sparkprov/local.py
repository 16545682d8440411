"""A local SparkSession for the demo, the benchmarks and the tests.

>>> local_session("sparkprov-doc").conf.get("spark.ui.enabled")
'false'
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

# G1's region size for the JVMs sparkprov starts. An object of half a region or more is
# "humongous" to G1, allocated and collected one by one; an injected aggregate keeps a
# group's rids in one array (TPC-H Q1 at SF 1: 1.5M rids a group), which at the default
# region size (heap / 2048: 2 MB for 6 GiB) spent 2.0 of 3.8 s of Q1's final
# aggregation in GC, 0.3 s with 32 MB regions (docs/benchmarks-history.md).
G1_REGION = "32m"


def region_hint(region_bytes: int | None) -> str | None:
    """What to tell the user whose driver JVM runs G1 with smaller regions than
    ``G1_REGION`` (None: nothing to tell).

    >>> region_hint(32 << 20) is None
    True
    >>> "G1HeapRegionSize=32m" in region_hint(2 << 20)
    True
    """
    if region_bytes is None or region_bytes >= 32 << 20:
        return None
    return (
        f"sparkprov: this driver JVM runs G1 with {region_bytes >> 20} MB regions; captures that keep large rid "
        f"arrays spend much of their time in GC with them. Start it with -XX:G1HeapRegionSize={G1_REGION} "
        "(spark.driver.extraJavaOptions, and spark.executor.extraJavaOptions on a cluster)"
    )


def local_session(
    app: str, shuffle_partitions: int = 2, driver_memory: str = "2g", quiet: bool = False, **conf: str
) -> SparkSession:
    """A ``local[2]`` session (this project's machines have 2 cores), quiet, without the UI,
    its driver JVM with ``G1_REGION`` regions. ``quiet`` also keeps the JVM's start-up
    warnings off stderr (the command line's Spark): it logs errors alone from the start."""
    # Python workers run this interpreter (the project's environment), not whatever
    # `python3` is first on PATH: UDFs need the same packages as the driver
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    java_options = [f"-XX:G1HeapRegionSize={G1_REGION}"]
    if quiet:
        java_options.append(f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2-quiet.properties')}")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", " ".join(java_options))
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
