"""One SparkSession for the whole suite (per pytest-xdist worker); small data, few shuffle partitions."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparkprov as sp
from sparkprov.local import local_session

ROOT = Path(__file__).resolve().parents[1]

# a Java helper that stops compiling fails the tests instead of leaving a slower path
# in its place (the tests of those paths turn this off)
os.environ.setdefault("SPARKPROV_STRICT_JVM", "1")


# The JVMs the suite's subprocesses start (killed drivers, concurrent writers, the
# command line, the cluster scripts) live a minute or two and run C1's code alone:
# C2's compilations would not pay back there (the retries script: 78 s against 104 s).
# The workers' own drivers, alive for the whole suite, keep C2 (with C1 alone the
# suite took 39 minutes against 34) but call it for a method ten times later than the
# JVM's defaults: each of the suite's many small queries makes C2 compile code that then
# runs little (77 s of compiling in a module that ran 110 s). The window-set and strategy
# tests took 186 s against 213 s (C1 alone 213 s, thirty times later 193 s); the pipelines
# bench, graph and provenance tests 213 s against 254 s (three times later 228 s).
# Spark's launcher reads this when it starts a driver.
SUBPROCESS_JVM = "-XX:TieredStopAtLevel=1"
WORKER_JVM = " ".join(
    f"-XX:Tier4{name}={10 * default}"
    for name, default in (
        ("InvocationThreshold", 5000),
        ("MinInvocationThreshold", 600),
        ("CompileThreshold", 15000),
        ("BackEdgeThreshold", 40000),
    )
)
# Spark's classes as a capturing driver loads them, archived once per venv by make
# (scripts/jvm_archive.py) and mapped by every driver the suite starts: a start and first
# capture 6.0 to 6.4 s against 10.6 to 11.2 s (8.4 to 9.0 against 15.0 to 16.9 on a
# slower hour). A JVM whose jars differ from the archive's ignores it, silently (the
# tests of quiet start-up read the JVM's output).
# SPARKPROV_NO_ARCHIVE=1 runs the suite without it, to compare.
ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"
if ARCHIVE.exists() and not os.environ.get("SPARKPROV_NO_ARCHIVE"):
    shared = f" -XX:SharedArchiveFile={ARCHIVE} -Xlog:cds=off -Xlog:cds+dynamic=off"
    SUBPROCESS_JVM += shared
    WORKER_JVM += shared
os.environ.setdefault("SPARK_SUBMIT_OPTS", SUBPROCESS_JVM)


@pytest.fixture(scope="session")
def spark(tmp_path_factory) -> SparkSession:
    warehouse = tmp_path_factory.mktemp("warehouse")
    # the workers' options in place of the subprocesses' (a value the user set stays)
    ours = os.environ.get("SPARK_SUBMIT_OPTS") == SUBPROCESS_JVM
    if ours:
        os.environ["SPARK_SUBMIT_OPTS"] = WORKER_JVM
    try:
        session = local_session(
            "sparkprov-tests",
            **{
                "spark.default.parallelism": "2",
                "spark.sql.warehouse.dir": str(warehouse),
                # the suite's queries repeat the shapes of earlier modules' queries, whose
                # generated classes Spark's cache of 100 no longer holds: compiled again
                # (with the later C2 above: 170 s against 179 s, and 193 s against 213 s)
                "spark.sql.codegen.cache.maxEntries": "5000",
            },
        )
    finally:
        if ours:
            os.environ["SPARK_SUBMIT_OPTS"] = SUBPROCESS_JVM
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
