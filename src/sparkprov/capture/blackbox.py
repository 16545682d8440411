"""Exact lineage through Python functions declared blackbox (SubZero's black box).

A blackbox function's lineage is stored per group or partition, as an undeclared
function's is: capture keeps nothing of what the function could report. The exact
lineage of some output rows is found when asked, in the process that captured the
query: the query runs again, with capture, each source restricted to the rows the
stored (coarse) lineage of those rows names, and every blackbox function reporting
its input positions (as a full declaration). A function over groups sees its groups'
rows again; the output rows of that run are matched to the asked ones by value (every
column, NULL equal to NULL, floating-point values within ``FLOAT_TOLERANCE``), and
their lineage is the answer. Among equal rows, each asked row takes the lineage of
one of them (distinct ones where there are enough), as a lazy capture's rows do.

An asked row that does not come out again is an error (``LineageDeclarationWrong``):
the function depends on more than its group or partition (a mapInPandas function
reading its whole batch), or gives other rows when run again.

>>> from sparkprov.capture.blackbox import held
>>> held("no such capture")
False
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, StructType

from ..errors import LineageDeclarationWrong
from ..plan.versions import to_arrow
from ..sources.identity import RID
from ..store.entry import CaptureEntry
from .later import Pending, close, run_again
from .lineage import IN, OUT, source_pairs, union_pairs
from .writing import lineage_settings, side_graph

_HELD: dict[str, Pending] = {}  # by capture id, for this process's lifetime
_AGAIN = "__sp_again"


def remember(capture_id: str, pending: Pending) -> None:
    """Keep what running capture ``capture_id``'s query again needs."""
    _HELD[capture_id] = pending


def held(capture_id: str) -> bool:
    """Whether this process can run capture ``capture_id``'s query again."""
    return capture_id in _HELD


def exact_pairs(entry: CaptureEntry, out_rids: list[int], coarse: dict[str, DataFrame]) -> dict[str, pa.Table] | None:
    """``{source name: (out_rid, in_rid)}``: the exact lineage of output rows ``out_rids``
    of capture ``entry``, whose stored lineage (``coarse``: per source, rows with
    ``_sp_rid``) passes through functions declared blackbox. None where the run again
    cannot say it: a scalar subquery's lineage (kept once, as a reference) is on the
    way."""
    pending = _HELD[entry.id]
    bridge, seen = pending.bridge, pending.rewriter
    spark = bridge.spark
    numbers = entry.lineage.sources
    none = spark.createDataFrame([], f"{RID} long")
    # A workload's predicate leaves some rows' rids NULL: the query used them, their
    # lineage does not name them, so such a source is read whole.
    restrict = {
        i: coarse[name].select(RID) if name in coarse else none for name, i in numbers.items() if name not in seen.where
    }
    work = Path(tempfile.mkdtemp(prefix="sparkprov-blackbox-"))
    rewriter, again = run_again(entry, pending, work, restrict)
    try:
        slots = rewriter.root.slots
        again = again.withColumn(_AGAIN, F.monotonically_increasing_id()).localCheckpoint(eager=True)
        rewriter.checkpoints.append(again)
        rows = _matched(spark, again, entry, out_rids, [s.name for s in slots])
        with lineage_settings(bridge):
            graph = replace(side_graph(bridge, rewriter, work / "sides"), factorize=False)
            pairs = source_pairs(rows, slots, graph)
        if any(number < 0 for number in pairs):
            return None
        names = {i: name for name, i in numbers.items()}
        return {names[i]: to_arrow(union_pairs(parts).select(OUT, IN)) for i, parts in pairs.items()}
    finally:
        for kept in rewriter.checkpoints:
            kept.unpersist()
        shutil.rmtree(work, ignore_errors=True)


def _matched(spark, again: DataFrame, entry: CaptureEntry, out_rids: list[int], slot_names: list[str]) -> DataFrame:
    """``(out_rid, slots...)``: each asked output row with the slots of an equal row of
    ``again``."""
    schema = StructType.fromJson(json.loads(entry.output.schema))
    stored = entry.output.stored
    asked = spark.read.schema(schema).parquet(entry.output.path).where(F.col(RID).isin(out_rids))
    a, f = again.alias("a"), F.broadcast(asked.alias("f"))
    cond = F.lit(True)
    for c in stored:
        x, y = F.col(f"a.`{c}`"), F.col(f"f.`{c}`")
        same = close(x, y) if isinstance(schema[c].dataType, DoubleType | FloatType) else x.eqNullSafe(y)
        cond = cond & same
    # the asked rows that exist (with no partner: None), then every partner of each
    found = asked.select(RID, F.lit(None).cast("long")).union(a.join(f, cond).select(f"f.{RID}", f"a.{_AGAIN}"))
    equal: dict[int, list[int]] = defaultdict(list)
    for rid, candidate in found.collect():
        if candidate is None:
            equal.setdefault(rid, [])
        else:
            equal[rid].append(candidate)
    missing = sorted(rid for rid, candidates in equal.items() if not candidates)
    if missing:
        raise LineageDeclarationWrong(
            f"capture {entry.name!r}: output row(s) {', '.join(map(str, missing[:5]))} did not come out again when "
            f"the query ran over their stored lineage with {', '.join(entry.blackbox or [])} (declared blackbox) "
            "traced: such a function must give each output row from the rows of its group or partition alone, "
            "the same rows every run"
        )
    used: set[int] = set()
    chosen = []
    for rid in sorted(equal):  # every asked row that exists has partners now
        candidates = sorted(equal[rid])
        pick = next((c for c in candidates if c not in used), candidates[0])
        used.add(pick)
        chosen.append((rid, pick))
    mapping = spark.createDataFrame(chosen, f"{OUT} long, {_AGAIN} long")
    return mapping.join(again, _AGAIN).select(OUT, *slot_names)
