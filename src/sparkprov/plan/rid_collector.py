"""The aggregate function an injected aggregate keeps its groups' rids with.

Spark's ``collect_list`` keeps a group's values as boxed objects in a Scala buffer,
converts them to Spark's array format and back at every exchange, and is followed by
``flatten`` (an inner injected aggregate's arrays) and ``array_distinct`` (a join below
may repeat a row) as expressions of their own. Rids are longs: ``SparkprovRidCollector``
(Java, compiled once per JVM by Janino, like the other helpers in this package, and
shipped to the executors in a jar added to the SparkContext) keeps them in a
``long[]``, appends an inner aggregate's array in place and exchanges buffers as their
raw bytes. Where a join below may repeat a row, it drops repeats as the buffer fills (a
repeat of the last value at once, the rest by sorting what came since the last time and
merging it with what that left) and before a buffer is exchanged: a group's memory and
shuffled bytes follow its distinct rids, not its rows, and its array comes out sorted.
Like ``collect_list`` it skips NULLs and gives an empty array to a group without rids.

Spark still runs an aggregate holding it as an ``ObjectHashAggregate``, as with
``collect_list``: only the collecting is cheaper (``sparkprov bench aggregates``).
Values of another type (handles, an RDD's keys) are not its to collect:
``collect_rids`` answers None and the caller keeps ``collect_list``.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> df = spark.range(5).selectExpr("id % 2 AS g", "id AS rid", "CAST(id AS INT) AS n")
>>> arrays = rids_column(df, "rid", distinct=True).alias("rids")
>>> sorted((r.g, r.rids) for r in df.groupBy("g").agg(arrays).collect())
[(0, [0, 2, 4]), (1, [1, 3])]
>>> rids_column(df, "n")
Traceback (most recent call last):
sparkprov.errors.InvalidArgument: column n holds int, not rids (bigint)
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
import weakref
import zipfile
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, SparkSession

from ..errors import InvalidArgument, JvmHelperUnavailable
from .references import bytecode, compiled
from .versions import line_of

log = logging.getLogger("sparkprov")

JExpr = Any

# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovRidCollector.java
_CLASS = "SparkprovRidCollector"

_LOCK = threading.Lock()
_SHIPPED: weakref.WeakKeyDictionary[SparkContext, bool] = weakref.WeakKeyDictionary()


def collect_rids(spark: SparkSession, attr: JExpr, nested: bool, distinct: bool) -> JExpr | None:
    """The aggregate expression collecting ``attr``'s rids (longs; the longs of its arrays
    when ``nested``) into one array per group, sorted and without repeats when
    ``distinct``; None when ``attr`` holds something else, or the function cannot be
    compiled or shipped to the executors (logged once)."""
    maker = compiled(spark, _CLASS, line_of(spark).java_source(_CLASS))
    if maker is None or not _shipped(spark):
        return None
    return maker.of(attr, nested, distinct)


def rids_column(df: DataFrame, name: str, distinct: bool = False) -> Column:
    """The aggregate column collecting ``df``'s rid column ``name`` (longs) into an
    array per group, as an injected aggregate does; a ValueError when ``name`` holds
    something else, a RuntimeError when the function is not available."""
    spark = df.sparkSession
    kind = df.schema[name].dataType.simpleString()
    if kind != "bigint":
        raise InvalidArgument(f"column {name} holds {kind}, not rids (bigint)")
    line = line_of(spark)
    made = collect_rids(spark, line.column_expression(spark._jvm, df[name]), nested=False, distinct=distinct)
    if made is None:
        raise JvmHelperUnavailable("the rid collector could not be compiled or shipped (see the log)")
    return line.expression_column(spark._jvm, made)


def _shipped(spark: SparkSession) -> bool:
    # executors load the class from a jar: they do not see Janino's class loader
    sc = spark.sparkContext
    with _LOCK:
        if sc not in _SHIPPED:
            _SHIPPED[sc] = _ship(spark)
        return _SHIPPED[sc]


def _ship(spark: SparkSession) -> bool:
    folder = Path(tempfile.mkdtemp(prefix="sparkprov-jar-"))
    atexit.register(shutil.rmtree, folder, True)
    jar = folder / "sparkprov-rids.jar"
    try:
        with zipfile.ZipFile(jar, "w") as written:
            for name, code in bytecode(spark, _CLASS).items():
                written.writestr(name.replace(".", "/") + ".class", code)
        spark.sparkContext._jsc.sc().addJar(str(jar))
    except Exception:  # the jar cannot be written or added: collect_list stays
        log.warning("sparkprov: rids are collected by collect_list (the collector jar was not added)", exc_info=True)
        return False
    return True
