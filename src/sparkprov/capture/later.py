"""Lineage finished after a capture returns: the defer and lazy strategies.

Both commit the capture when its output is stored; the entry's ``lineage.later`` says
which (``defer`` or ``lazy``), and the pair table's presence in ``lineage/`` says it
is built (shared lineage is renamed into place first, the pair table last). Only the
process that captured the query can finish it: ``_PENDING`` holds, by capture id, a
defer capture's background job or what a lazy capture's build needs. Answers call
``ensure_built`` first; another process gets ``LineageNotBuilt``.

**Defer** (Smoke's defer, for the whole query): the query runs with the logical
rewrite, whose output job carries only handles, and the capture returns once its
output is written. Resolving the handles into pairs (step 4 of a capture) runs in a
background thread, one capture at a time; an answer waits for it.

**Lazy**: Smoke's lazy (section 3) captures nothing and answers lineage queries by
querying the inputs again. A lazy capture runs the user's query as it is and stores
its output rows with their ids, plus what identifies its sources (names, file
fingerprints; sources without stable row positions are copied, as for any capture).
The first answer that needs the pair table runs the query again, this time with
capture (``auto``), in the process that captured it: the rewrite needs the query,
which lives only there.

That run's rows are matched to the stored output rows by value (every column, NULL
equal to NULL, floating-point values within ``FLOAT_TOLERANCE``); rows with equal
values are paired in order. Every stored row must find its equal and the other way
round, else nothing is built and ``LineageNotBuilt`` says why. Parquet sources must
be unchanged (``SourceChanged``). ``CaptureContext.check_lazy`` refuses at capture what
could give other rows in the second run (non-deterministic expressions, LIMIT without
ORDER BY, samples). Where a query picks among rows that tie (a LIMIT over an order
with equal keys), a row's lineage is that of an equal row in the same place of the
order.

>>> from sparkprov.capture.later import shared_path
>>> from sparkprov.store.entry import LineageInfo
>>> shared_path(LineageInfo("/store/data/1/lineage", {}, shared="/store/data/1/shared", later="lazy")) is None
True
"""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, StructType

from ..errors import LineageNotBuilt
from ..plan.catalyst import Bridge
from ..sources.identity import RID, check_unchanged
from ..store.entry import CaptureEntry
from ..store.format import shared_path  # noqa: F401 - also imported from here
from .context import CaptureContext
from .lineage import OUT, source_pairs
from .writing import lineage_settings, materializer, side_graph, store_lineage, unique_pairs


@dataclass
class Pending:
    """What building a lazy capture's lineage needs: the query and its sources as seen
    at capture (so copies made then are read again, not made anew)."""

    bridge: Bridge
    df: DataFrame
    rewriter: CaptureContext  # after check_lazy


log = logging.getLogger("sparkprov")
# relative difference (or absolute, below 1) within which two runs' floating-point values
# are equal: a sum of doubles differs between runs in its last bits, with the order of
# its terms
FLOAT_TOLERANCE = 1e-9
_PENDING: dict[str, Pending | Future] = {}  # by capture id, for this process's lifetime
# one deferred resolution at a time: each already runs Spark jobs on every core
_BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkprov-defer")


def remember(capture_id: str, pending: Pending) -> None:
    """Keep what building lazy capture ``capture_id``'s lineage needs."""
    _PENDING[capture_id] = pending


def run_later(capture_id: str, name: str, job: Callable[[], None]) -> None:
    """Run ``job`` (resolving defer capture ``capture_id``) in the background."""

    def logged() -> None:
        try:
            job()
        except BaseException:
            log.exception("sparkprov: resolving the lineage of %r after its capture failed", name)
            raise

    _PENDING[capture_id] = _BACKGROUND.submit(logged)


def ensure_built(entry: CaptureEntry) -> None:
    """Finish the lineage of capture ``entry`` (``lineage.later``), unless it is built:
    wait for a defer capture's background job, build a lazy one's."""
    lineage = entry.lineage
    if Path(lineage.path).is_dir():
        return
    pending = _PENDING.get(entry.id)
    how = lineage.later
    if pending is None:
        what = (
            "its lineage was still being resolved when the process that captured it ended"
            if how == "defer"
            else "its lineage was never built: only the process that captured it holds the query that builds it "
            "(any trace there builds it, or cap.build_lineage())"
        )
        raise LineageNotBuilt(
            f"capture {entry.name!r} version {entry.version} was made with strategy={how!r} and {what}. "
            "Capture it again, with strategy='auto' to keep lineage at capture"
        )
    if isinstance(pending, Future):
        try:
            pending.result()
        except Exception as e:
            raise LineageNotBuilt(
                f"capture {entry.name!r} version {entry.version}: resolving its lineage after the capture failed: {e}"
            ) from e
    else:
        _build(entry, pending)
    _PENDING.pop(entry.id, None)  # built: the query and its plan need not be held any longer


def _build(entry: CaptureEntry, pending: Pending) -> None:
    """Build lazy capture ``entry``'s pair table (and shared lineage)."""

    lineage = entry.lineage
    path = Path(lineage.path)
    bridge, spark = pending.bridge, pending.bridge.spark
    work = path.parent / f".lazy-{uuid.uuid4().hex}"
    # nothing is kept at a lazy capture: its blackbox functions' lineage is found now, exactly
    rewriter, out = run_again(entry, pending, work)
    try:
        slots = rewriter.root.slots
        keep = materializer(spark, work / "match")
        rows = _matched(spark, out, entry, [s.name for s in slots], keep)
        graph = side_graph(bridge, rewriter, work / "sides")
        with lineage_settings(bridge):
            pairs = source_pairs(rows, slots, graph)
            distinct = not unique_pairs(rewriter)
            store_lineage(spark, pairs, graph, path, Path(lineage.shared), distinct)
    finally:
        for kept in rewriter.checkpoints:
            kept.unpersist()
        shutil.rmtree(work, ignore_errors=True)


def run_again(
    entry: CaptureEntry, pending: Pending, work: Path, restrict: dict | None = None
) -> tuple[CaptureContext, DataFrame]:
    """Capture ``pending``'s query again: its sources as registered at capture (their
    copies read, not made again; ``restrict``: rows of some, as ``CaptureContext`` takes
    them), functions declared blackbox reporting their lineage. Returns the context
    (its checkpoints and ``work`` are the caller's to release; on failure, released
    here) and the output: the stored columns, then the slots'."""
    bridge, seen = pending.bridge, pending.rewriter
    rewriter = CaptureContext(
        bridge,
        str(work / "snapshots"),
        named=seen.named,
        sources=list(seen.sources),
        keep=seen.keep,
        where=seen.where,
        read_elsewhere=seen.read_elsewhere,
        restrict=restrict,
        trace_blackbox=True,
    )
    try:
        for use in seen.sources:
            if use.info.kind == "parquet":
                check_unchanged(bridge, use.info)
        root = rewriter.rewrite_root(bridge.inline_ctes(bridge.analyzed(pending.df)))
        if len(rewriter.sources) != len(seen.sources):
            raise LineageNotBuilt(f"capture {entry.name!r}: the query read other sources when run again")
    except BaseException:
        for kept in rewriter.checkpoints:
            kept.unpersist()
        shutil.rmtree(work, ignore_errors=True)
        raise
    return rewriter, bridge.to_dataframe(root.plan).toDF(*entry.output.stored, *[s.name for s in root.slots])


def close(x, y):
    """Whether floating-point columns ``x`` and ``y`` hold equal values (NULL equal to
    NULL) or values within ``FLOAT_TOLERANCE`` (relative; absolute below 1)."""
    near = F.abs(x - y) <= F.lit(FLOAT_TOLERANCE) * F.greatest(F.abs(x), F.abs(y), F.lit(1.0))
    return x.eqNullSafe(y) | F.coalesce(near, F.lit(False))


def _matched(spark, again: DataFrame, entry: CaptureEntry, slot_names: list[str], keep) -> DataFrame:
    """``(out_rid, slots...)``: the second run's rows ``again`` paired with the stored
    output rows of equal values; raises ``LineageNotBuilt`` unless every row of each
    side has its partner.

    Floating-point columns are compared within ``FLOAT_TOLERANCE`` (relative): a sum
    of doubles adds its terms in the order they arrive, which differs between runs.
    Rows are paired on the other columns and, among rows equal on those, in the order
    of their floating-point values."""
    schema = StructType.fromJson(json.loads(entry.output.schema))
    stored = entry.output.stored
    floats = [c for c in stored if isinstance(schema[c].dataType, DoubleType | FloatType)]
    exact = [c for c in stored if c not in floats]
    rank, found = "__sp_rank", "__sp_found"
    keys = [F.col(f"`{c}`") for c in exact]
    # equal rows are paired in order: any pairing of equal rows gives each stored row
    # the lineage of a row equal to it
    order = [F.col(f"`{c}`") for c in floats]
    again = again.withColumn(
        rank, F.row_number().over(Window.partitionBy(*keys).orderBy(*order, *(slot_names or [F.lit(0)])))
    )
    first = spark.read.schema(schema).parquet(entry.output.path).select(*[F.col(f"`{c}`") for c in stored], RID)
    first = first.withColumn(rank, F.row_number().over(Window.partitionBy(*keys).orderBy(*order, RID)))
    a, f = again.alias("a"), first.alias("f")
    cond = [F.col(f"a.`{c}`").eqNullSafe(F.col(f"f.`{c}`")) for c in exact]
    cond.append(F.col(f"a.{rank}") == F.col(f"f.{rank}"))
    differs = F.lit(False)
    for c in floats:
        differs = differs | ~close(F.col(f"a.`{c}`"), F.col(f"f.`{c}`"))
    joined = a.join(f, cond, "full_outer").select(
        F.col(f"f.{RID}").alias(OUT),
        F.col(f"a.{rank}").alias(found),
        differs.alias("__sp_differs"),
        *[F.col(f"a.{s}") for s in slot_names],
    )
    rows = keep(joined)
    missing, extra, changed = rows.agg(
        F.count_if(F.col(found).isNull()),
        F.count_if(F.col(OUT).isNull()),
        F.count_if(F.col(OUT).isNotNull() & F.col(found).isNotNull() & F.col("__sp_differs")),
    ).first()
    if missing or extra or changed:
        if missing:
            what = f"{missing} stored row(s) without an equal row"
        elif extra:
            what = f"{extra} row(s) not stored"
        else:
            what = f"{changed} row(s) with floating-point values further apart than {FLOAT_TOLERANCE:g}"
        raise LineageNotBuilt(
            f"capture {entry.name!r}: the query gave other rows when run again to build its lineage ({what}). "
            "Capture it with strategy='auto'"
        )
    return rows.select(OUT, *slot_names)
