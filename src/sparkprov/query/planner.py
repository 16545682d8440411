"""What an answer needs before it reads a capture's files: lineage completed when the
capture left it for later, and the pair table of one source as Spark reads it.

One place decides how a capture's lineage is finished (an RDD capture's sides resolved,
lineage kept in the output rows turned into pairs, a lazy capture run again, a deferred
one awaited), so the facade, the command line and later front ends ask it alone.

>>> needs_building({"lineage": {"path": "/s/lineage"}})
False
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..capture import later, rdd_pairs, row_lineage
from ..capture.lineage import expand_shared
from ..store.format import IN, OUT, PAIRS_SCHEMA, SHARED_SCHEMA, SRC, shared_path


def needs_building(entry: dict) -> bool:
    """Whether capture ``entry`` left its pair table to be made by its first answer."""
    stored = entry["lineage"]
    return bool(stored.get("rdd") or stored.get("in_output") or stored.get("later"))


def ensure_lineage(spark: SparkSession, entry: dict) -> None:
    """Make capture ``entry``'s pair table if it is not there yet (nothing otherwise).

    An RDD capture keeps its sides, and a capture whose output rows name their source
    rows keeps them there: their pair tables are made with Spark now. A lazy capture
    runs its query again (only the process that captured it can); a deferred capture's
    background resolution is awaited.
    """
    stored = entry["lineage"]
    if stored.get("rdd"):
        rdd_pairs.ensure_pairs(spark, entry)
    elif stored.get("in_output"):
        row_lineage.ensure_pairs(spark, entry)
    elif stored.get("later"):
        later.ensure_built(entry)


def source_pairs(spark: SparkSession, entry: dict, source: str) -> DataFrame:
    """``(out_rid, in_rid)`` of one source of capture ``entry``, its lineage completed
    first; lineage shared by many output rows (a scalar subquery's) joined in lazily."""
    ensure_lineage(spark, entry)
    stored = entry["lineage"]
    pairs = spark.read.schema(PAIRS_SCHEMA).parquet(stored["path"])
    direct = pairs.where(F.col(SRC) == stored["sources"][source]).select(OUT, IN)
    shared = shared_path(stored)
    if not shared:
        return direct
    table = spark.read.schema(SHARED_SCHEMA).parquet(shared)
    return direct.unionByName(expand_shared(pairs, table, stored["sources"][source])).distinct()
