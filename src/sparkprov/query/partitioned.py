"""Backward lineage partitioned by a source column (Smoke's data skipping, section 4.2).

A capture whose workload declares ``partition_by`` for a source keeps, besides its pair
table, that source's pairs with the value of the column on their source row, written
as Parquet partitioned by the value (one directory per value, each file sorted by
output row). A backward trace with a predicate on that column alone
(``Capture.backward(rows, source, where="l_shipmode = 'AIR'")``, a parameterized
predicate whose value the user picks) reads only the directories the predicate keeps:
Spark prunes the others before opening any of their files. Its answer is the
same rows as ``backward(rows, source)`` filtered by the predicate.

Layout: ``<capture data>/partitioned/<source number>/__sp_p=<value>/``, Parquet with
``out_rid``, ``in_rid``, and ``_sp_partitioned.json`` (the column's name and type, read
back as the partition's type).

>>> PART
'__sp_p'
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import AnalysisException

from ..capture.lineage import IN, OUT
from ..capture.workload import quoted
from ..plan.catalyst import quiet_analysis
from ..sources.identity import RID
from ..store.catalog import publish_written
from ..store.entry import CaptureEntry
from ..store.layout import CaptureFolders

PART = "__sp_p"
_META = "_sp_partitioned.json"  # Spark skips files starting with "_"


def table_path(entry: CaptureEntry, source: str) -> Path:
    """Where capture ``entry`` keeps ``source``'s partitioned pairs."""
    return CaptureFolders.of(entry).partitioned(entry.lineage.sources[source])


def column(entry: CaptureEntry, source: str) -> str | None:
    """The column ``entry``'s workload partitions ``source``'s lineage by, or None."""
    return (entry.workload or {}).get("partition_by", {}).get(source)


def build(pairs: DataFrame, rows: DataFrame, name: str, path: Path) -> None:
    """Write ``pairs`` (``out_rid``, ``in_rid``) partitioned by the value of column
    ``name`` of their source row (``rows``, with ``_sp_rid``) at ``path``."""
    values = rows.select(F.col(RID).alias(IN), F.col(quoted(name)).alias(PART))
    kind = values.schema[PART].dataType
    joined = pairs.join(values, IN).repartition(PART).sortWithinPartitions(PART, OUT)
    typed = T.StructType([T.StructField(PART, kind)]).json()

    def write(tmp: Path) -> None:
        joined.write.partitionBy(PART).parquet(str(tmp))
        (tmp / _META).write_text(json.dumps({"column": name, "type": typed}))

    publish_written(path, write)  # a concurrent builder may win: its table stands


def pairs_where(spark, path: Path, predicate: str) -> DataFrame | None:
    """The pairs of the source rows that satisfy ``predicate``, read from the partitions
    it keeps; None when the predicate reads other columns than the partition's (the
    caller filters the traced rows instead)."""
    meta = json.loads((path / _META).read_text())
    (part,) = T.StructType.fromJson(json.loads(meta["type"])).fields
    schema = T.StructType([T.StructField(OUT, T.LongType()), T.StructField(IN, T.LongType()), part])
    # the partition type comes from the schema given, not from the directory names
    index = spark.read.schema(schema).parquet(str(path)).withColumnRenamed(PART, meta["column"])
    try:  # resolved against the partition column alone: it must read no other column
        with quiet_analysis():
            index.select(quoted(meta["column"])).where(predicate).schema  # noqa: B018
    except AnalysisException:
        return None
    return index.where(predicate).select(OUT, IN)
