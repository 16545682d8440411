"""The lazy strategy: nothing captured while the query runs; lineage built on first use.

Smoke's lazy (section 3) captures nothing and answers lineage queries by querying the
inputs again. A lazy capture runs the user's query as it is and stores its output rows
with their ids, plus what identifies its sources (names, file fingerprints; sources
without stable row positions are copied, as for any capture). The first answer that
needs the pair table runs the query again, this time with capture (``auto``), in the
process that captured it: the rewrite needs the query, which lives only there.

That run's rows are matched to the stored output rows by value (every column, NULL
equal to NULL); rows with equal values are paired in order. Every stored row must find
its equal and the other way round, else nothing is built and ``LineageNotBuilt`` says
why. Parquet sources must be unchanged (``SourceChanged``). ``Rewriter.prepare_lazy``
refuses at capture what could give other rows in the second run (non-deterministic
expressions, LIMIT without ORDER BY, samples). Where a query picks among rows
that tie (a LIMIT over an order with equal keys), a row's lineage is that of an
equal row in the same place of the order.

>>> from sparkprov.capture.lazy import shared_path
>>> shared_path({"shared": None})
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ..errors import LineageNotBuilt
from ..plan.catalyst import Bridge
from ..store.catalog import publish_dir
from .lineage import OUT, source_pairs
from .rewrite import Rewriter
from .sources import RID, check_unchanged


@dataclass
class Pending:
    """What building a lazy capture's lineage needs: the query and its sources as seen
    at capture (so copies made then are read again, not made anew)."""

    bridge: Bridge
    df: DataFrame
    rewriter: Rewriter  # after prepare_lazy


_PENDING: dict[str, Pending] = {}  # by capture id, for this process's lifetime


def remember(capture_id: str, pending: Pending) -> None:
    _PENDING[capture_id] = pending


def shared_path(lineage: dict) -> str | None:
    """Where a capture's shared lineage (scalar subqueries') is, if it has any: a lazy
    capture has it only once built, and only if its query has such subqueries."""
    path = lineage.get("shared")
    return path if path and (not lineage.get("lazy") or Path(path).is_dir()) else None


def ensure_built(entry: dict) -> None:
    """Build the pair table (and shared lineage) of lazy capture ``entry``, unless built."""
    from .run import lineage_settings, materializer, publish_pairs, side_graph, unique_pairs, write_shared

    lineage = entry["lineage"]
    path = Path(lineage["path"])
    if path.is_dir():
        return
    pending = _PENDING.get(entry["id"])
    if pending is None:
        raise LineageNotBuilt(
            f"capture {entry['name']!r} version {entry['version']} was made with strategy='lazy' and its lineage "
            "was never built: only the process that captured it holds the query that builds it (any trace "
            "there builds it, or cap.build_lineage()). Capture it again, with strategy='auto' to keep lineage "
            "at capture"
        )
    bridge, spark, seen = pending.bridge, pending.bridge.spark, pending.rewriter
    for use in seen.sources:
        if use.info.kind == "parquet":
            check_unchanged(bridge, use.info)
    data = path.parent
    work = data / f".lazy-{uuid.uuid4().hex}"
    # the sources as registered at capture: their copies are read, not made again
    rewriter = Rewriter(bridge, str(work / "snapshots"), named=seen.named, sources=list(seen.sources))
    try:
        root = rewriter.rewrite_root(bridge.inline_ctes(bridge.analyzed(pending.df)))
        if len(rewriter.sources) != len(seen.sources):
            raise LineageNotBuilt(f"capture {entry['name']!r}: the query read other sources when run again")
        slots = root.slots
        out = bridge.to_dataframe(root.plan).toDF(*entry["output"]["stored"], *[s.name for s in slots])
        keep = materializer(spark, work / "match")
        rows = _matched(spark, out, entry, [s.name for s in slots], keep)
        graph = side_graph(bridge, rewriter, work / "sides")
        with lineage_settings(bridge):
            pairs = source_pairs(rows, slots, graph)
            referenced = {-src - 1 for src in pairs if src < 0}
            if referenced:
                shared = Path(lineage["shared"])
                tmp = work / "shared"
                write_shared(spark, graph, referenced, str(tmp))
                publish_dir(tmp, shared)
            # last: the pair table's presence says the build is complete
            publish_pairs(spark, pairs, path, distinct=not unique_pairs(rewriter, entry["operators"]))
    finally:
        for kept in rewriter.checkpoints:
            kept.unpersist()
        shutil.rmtree(work, ignore_errors=True)


def _matched(spark, again: DataFrame, entry: dict, slot_names: list[str], keep) -> DataFrame:
    """``(out_rid, slots...)``: the second run's rows ``again`` paired with the stored
    output rows of equal values; raises ``LineageNotBuilt`` unless every row of each
    side has its partner."""
    stored = entry["output"]["stored"]
    rank, found = "__sp_rank", "__sp_found"
    values = [F.col(f"`{c}`") for c in stored]
    # equal rows are paired in order: any pairing of equal rows gives each stored row
    # the lineage of a row equal to it
    again = again.withColumn(
        rank, F.row_number().over(Window.partitionBy(*values).orderBy(*(slot_names or [F.lit(0)])))
    )
    reader = spark.read
    if "schema" in entry["output"]:
        reader = reader.schema(StructType.fromJson(json.loads(entry["output"]["schema"])))
    first = reader.parquet(entry["output"]["path"]).select(*values, RID)
    first = first.withColumn(rank, F.row_number().over(Window.partitionBy(*values).orderBy(RID)))
    a, f = again.alias("a"), first.alias("f")
    cond = [F.col(f"a.`{c}`").eqNullSafe(F.col(f"f.`{c}`")) for c in stored]
    cond.append(F.col(f"a.{rank}") == F.col(f"f.{rank}"))
    joined = a.join(f, cond, "full_outer").select(
        F.col(f"f.{RID}").alias(OUT), F.col(f"a.{rank}").alias(found), *[F.col(f"a.{s}") for s in slot_names]
    )
    rows = keep(joined)
    missing, extra = rows.agg(F.count_if(F.col(found).isNull()), F.count_if(F.col(OUT).isNull())).first()
    if missing or extra:
        what = f"{missing} stored row(s) without an equal row" if missing else f"{extra} row(s) not stored"
        raise LineageNotBuilt(
            f"capture {entry['name']!r}: the query gave other rows when run again to build its lineage ({what}); "
            "floating-point sums can differ between runs. Capture it with strategy='auto'"
        )
    return rows.select(OUT, *slot_names)
