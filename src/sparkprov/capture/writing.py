"""Writing a capture's lineage into the store: the pair table, the shared lineage (of
scalar subqueries, of windows' whole partitions), the side relations kept for
why/how, and the settings of the jobs that write them. Used at capture (``run``) and
by lineage finished later (``later``, ``row_lineage``, an RDD capture's pairs).

>>> PAIR_WRITE_OPTIONS["parquet.writer.version"]
'v2'
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import UnsupportedOperation
from ..plan import small_writes
from ..plan.catalyst import Bridge
from ..plan.observed import WatchedJobs
from ..plan.small_writes import small_rows, write_parquet, write_table
from ..plan.threads import kept_pool, results
from ..plan.versions import arrow_dataframe, to_arrow
from ..plan.written import read_written
from ..store.catalog import publish_written
from ..store.format import (
    GRP,
    IN,
    OUT,
    PAIRS_SCHEMA,
    PAYLOADS,
    REF,
    SHARED_REF,
    SHARED_SCHEMA,
    SRC,
    Slot,
    ref_source,
)
from ..store.parquet import write_local_pairs, write_local_shared
from .context import CaptureContext
from .lineage import HANDLE, ROW_SLOTS, SideGraph, shared_pairs, union_pairs
from .reached_sides import write_reached_sides
from .shapes import SET_KEY


def names_rows(rewriter: CaptureContext) -> bool:
    """Whether every output slot names source rows (a rid, a rid array) or refers to a
    shared side's lineage (a scalar subquery's, a window's over the whole input): the
    output rows then hold the whole lineage."""
    return all(s.kind in ROW_SLOTS or rewriter.refers_to_shared(s) for s in rewriter.root.slots)


def in_output_slots(rewriter: CaptureContext) -> list[Slot]:
    """The output's slots as lineage kept in output rows records them: by source
    number, and references to shared sides by their pseudo-source number."""
    return [
        Slot(s.name, SHARED_REF, ref_source(s.ref))
        if rewriter.refers_to_shared(s)
        else Slot(s.name, s.kind, rewriter.instances[s.ref].source)
        for s in rewriter.root.slots
    ]


def side_graph(bridge, rewriter, work: Path, jobs: WatchedJobs | None = None) -> SideGraph:
    """The capture's side relations; ``jobs``: those that ran the query, if watched
    (the rows some sides gathered there are taken only if they ran once)."""

    def observed(k: int):
        seen = rewriter.sides[k].observed
        return seen.table(jobs) if seen is not None and jobs is not None else None

    return SideGraph(
        sides=rewriter.sides,
        relation=lambda k: bridge.to_dataframe(rewriter.sides[k].plan),
        narrow=lambda k: bridge.to_dataframe(rewriter.sides[k].narrow) if rewriter.sides[k].narrow else None,
        source_of=lambda i: rewriter.instances[i].source,
        keep=materializer(bridge.spark, work),
        observed=observed,
        sets=lambda k: bridge.to_dataframe(rewriter.sides[k].sets) if rewriter.sides[k].sets is not None else None,
        blocked=rewriter.blocked,
    )


def write_shared(spark, graph: SideGraph, referenced: set[int], path: str) -> None:
    """Store the lineage of the shared sides ``referenced`` (and those they reach) once,
    at ``path`` (a capture's ``shared/``); raises before it is published if two window
    partitions' keys hash to one set id."""
    # the check's small jobs beside the write's, all waiting more on Spark's scheduling
    # than on the cores (TPC-DS q12 at SF 1: 0.26 and 0.23 s one after the other)
    checked = checking_sets(graph)
    try:
        payloads = payload_sides(graph, referenced)
        # a payload side's sets are made at query time; the sets of its input rows are stored
        inputs = {i for k in payloads for i in graph.sides[k].payload.sides()}
        referenced = {k for k in referenced if k not in payloads} | inputs
        if not _write_shared_here(graph, referenced, path):
            shared, unique = shared_pairs(referenced, graph)
            # (a window's tree is most of its rows: not shuffled for a distinct)
            parts = ([union_pairs(shared)] if shared else []) + unique
            table = union_pairs(parts, distinct=False) if parts else spark.createDataFrame([], SHARED_SCHEMA)
            table.write.options(**PAIR_WRITE_OPTIONS).parquet(path)
        for k in payloads:
            _write_payloads(graph, k, Path(path) / PAYLOADS)
    finally:
        checked()


def payload_sides(graph: SideGraph, referenced: set[int]) -> list[int]:
    """The payload sides (``SideRelation.payload``) among the shared sides reachable from
    ``referenced``."""
    todo, seen = sorted(referenced), set()
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        side = graph.sides[k]
        if side.payload is not None:
            todo.extend(side.payload.sides())
        todo.extend(s.ref for s in side.slots if s.kind in ("group", "groups") and graph.sides[s.ref].shared)
    return sorted(k for k in seen if graph.sides[k].payload is not None)


def _write_payloads(graph: SideGraph, k: int, root: Path) -> None:
    # the function's output rows' set ids and payload columns; the declaration map_p runs
    # under, and what each id column names (a source's number, or a shared side's)
    payload = graph.sides[k].payload
    graph.relation(k).write.options(**PAIR_WRITE_OPTIONS).parquet(str(root / str(k)))
    (root / f"{k}.pickle").write_bytes(payload.declaration)
    srcs = [graph.source_of(ref) if kind == "source" else ref_source(ref) for kind, ref in payload.inputs]
    (root / f"{k}.json").write_text(json.dumps({"srcs": srcs}))


def checking_sets(graph: SideGraph) -> Callable[[], None]:
    """Start the check that refuses a capture in which two window partitions' (or
    aggregate groups') keys hash to one set id: their rows would each be given both
    sets' lineage. Returns the wait for it, which raises if it failed. (A job per such
    side over its rows as the query computed them, the sides' jobs at once: on small
    data each waits on Spark's scheduling more than on the cores. Two 64-bit hashes
    among a million keys meet with a chance of about one in 36 million.)"""
    pool = kept_pool("shared-checks", 4)
    checks = [pool.submit(_check_sets, graph, k) for k in range(len(graph.sides)) if graph.sides[k].has_sets]

    def result() -> None:
        results(checks)

    return result


def _check_sets(graph: SideGraph, k: int) -> None:
    sets = graph.sets(k)
    if sets is None:
        return
    clash = sets.groupBy(HANDLE).agg(F.min(SET_KEY).alias("lo"), F.max(SET_KEY).alias("hi"))
    if clash.where(~F.col("lo").eqNullSafe(F.col("hi"))).limit(1).collect():
        operator = graph.sides[k].operator
        what = "partitions'" if operator == "Window" else "groups'"
        raise UnsupportedOperation(
            operator,
            "",
            f"two of its {what} keys hash to the same set id, so their shared lineage cannot be "
            "told apart; capture with witnesses=True to keep it without shared sets",
        )


SHARED_HERE_MAX = 2_000_000  # rids a shared side's rows may hold to be written from this process


def _write_shared_here(graph: SideGraph, referenced: set[int], path: str) -> bool:
    """``write_shared`` in this process (pyarrow), when every referenced side's slots
    are rids or rid arrays (a scalar subquery computed with inject, a window's rows
    over a scan) and hold at most ``SHARED_HERE_MAX`` rids: its rows are read once,
    through Arrow, which spares the jobs that writing them with Spark takes. Returns
    whether it did."""
    import pyarrow.compute as pc

    sides = sorted(referenced)
    if any(graph.sides[k].ranged for k in sides):  # a window's blocks: a tree above its rows
        return False
    if not all(s.kind in ROW_SLOTS for k in sides for s in graph.sides[k].slots):
        return False
    parts = []
    for k in sides:
        slots = graph.sides[k].slots
        if not slots:
            continue
        # a NULL array holds no rid (size() of NULL is NULL or -1)
        sizes = [
            F.when(F.col(s.name).isNull(), 0).otherwise(F.size(s.name)) if s.kind == "rids" else F.lit(1) for s in slots
        ]
        count = sum(sizes[1:], sizes[0])
        # one job: each row's rid count, and its rids only when within the bound (a
        # scalar subquery's result is one row; a window's side, a row per input row)
        within = count <= SHARED_HERE_MAX
        names = [f"__sp_s{i}" for i in range(len(slots))]
        counted = graph.relation(k).select(
            count.alias("__sp_n"),
            F.col(HANDLE).cast("long").alias(GRP),
            *[F.when(within, F.col(s.name)).alias(n) for s, n in zip(slots, names)],
        )
        found = to_arrow(counted.limit(SHARED_HERE_MAX + 1))
        if found.num_rows > SHARED_HERE_MAX or (pc.sum(found.column("__sp_n")).as_py() or 0) > SHARED_HERE_MAX:
            return False
        for slot, name in zip(slots, names):
            column, sets = found.column(name).combine_chunks(), found.column(GRP).combine_chunks()
            if slot.kind == "rids":  # each rid beside its row's set
                sets, column = pc.take(sets, pc.list_parent_indices(column)), pc.list_flatten(column)
            held = pc.is_valid(column)
            rids, sets = column.filter(held).cast(pa.int64()), sets.filter(held)
            refs = pa.array(np.full(len(rids), k, dtype=np.int32))
            srcs = pa.array(np.full(len(rids), graph.source_of(slot.ref), dtype=np.int32))
            parts.append(pa.table({REF: refs, GRP: sets, SRC: srcs, IN: rids}))
    write_local_shared(Path(path), parts)
    return True


def store_lineage(spark, pairs: dict, graph: SideGraph, lineage: Path, shared: Path, distinct: bool) -> str | None:
    """Write the pair table (``source_pairs``) and the lineage of the shared sides
    its references name (stored once), each renamed into place, the pair table last:
    its presence says both are complete. Returns the shared lineage's path, if any."""
    referenced = {-src - 1 for src in pairs if src < 0}
    if referenced:
        narrowed = _referenced_sets(spark, pairs, graph, referenced)
        publish_written(shared, lambda tmp: write_shared(spark, narrowed, referenced, str(tmp)))
    publish_pairs(spark, pairs, lineage, distinct)
    return str(shared) if referenced else None


# set ids of one shared side that the output may refer to for that side's lineage to be
# stored for those sets alone
REFERENCED_SETS_MAX = 100_000


def _referenced_sets(spark, pairs: dict, graph: SideGraph, referenced: set[int]) -> SideGraph:
    """``graph`` with each shared side that has a set per window partition (or per
    row), and that no other shared side refers to, narrowed to the sets the output
    refers to (``pairs``' references), where they are at most ``REFERENCED_SETS_MAX``:
    a set no output row refers to is on no trace (TPC-DS q57 at SF 1: its 100 rows
    refer to 300 sets of three windows, whose 2.9 million pairs took 12 s to store)."""
    nested = {s.ref for side in graph.sides if side.shared for s in side.slots if s.kind in ("group", "groups")}
    nested |= {i for side in graph.sides if side.payload is not None for i in side.payload.sides()}
    wanted: dict[int, DataFrame] = {}
    for k in sorted(referenced):
        side = graph.sides[k]
        # a window's blocks refer to each other; a payload side's sets are made at query time
        if not side.has_sets or k in nested or side.ranged or side.payload is not None:
            continue
        refs = union_pairs(pairs[ref_source(k)], distinct=False).select(F.col(IN).alias(GRP))
        found = to_arrow(refs.where(F.col(GRP).isNotNull()).distinct().limit(REFERENCED_SETS_MAX + 1))
        if found.num_rows <= REFERENCED_SETS_MAX:
            wanted[k] = F.broadcast(arrow_dataframe(spark, found))
    if not wanted:
        return graph
    relation = graph.relation

    def narrowed(k: int) -> DataFrame:
        rows = relation(k)
        if k not in wanted:
            return rows
        return rows.join(wanted[k], rows[HANDLE].cast("long") == wanted[k][GRP], "left_semi")

    return replace(graph, relation=narrowed)


def unique_pairs(rewriter: CaptureContext) -> bool:
    """Whether every ``(output, input)`` pair is found once, so none need removing."""
    # one scan, no join and no window: every path is unique (a window's row reaches
    # itself twice, by its own slot and by its frame, and rows in overlapping frames)
    ranged = any(side.ranged for side in rewriter.sides)
    if len(rewriter.instances) == 1 and "Join" not in rewriter.operators and not ranged:
        return True
    # Rows and rid arrays (kept without repeats by inject) of distinct sources: one
    # pair per rid. A handle's side relation could reach a row along several paths.
    if not names_rows(rewriter):
        return False
    sources = [s.ref for s in in_output_slots(rewriter)]  # a reference: one (out_rid, 0) per row
    return len(set(sources)) == len(sources)


def materializer(spark, work: Path) -> Callable[[DataFrame], DataFrame]:
    """``keep`` for ``SideGraph``: each intermediate result written under ``work``
    (numbered steps) and read back, so later plans start from its rows."""
    kept = itertools.count()

    def keep(df: DataFrame) -> DataFrame:
        path = str(work / f"step{next(kept)}")
        # small rows through Arrow; an aggregate's side holds rid arrays (row groups bounded)
        small_writes.write_parquet(df, path, small_inputs=True)
        return read_written(spark, path, df.schema)

    return keep


# a pair's bytes collected (a source number and two rids): pairs collected to be written
# here, at most as many as fit in small_rows' bytes. A prefix of generic rows' 100,000
# turned away TPC-DS q57's 371,658 (with repeats), which Spark then computed again to
# write (4.5 s against 1.4 s collected)
PAIR_BYTES = 20


def write_pairs(spark, pairs: dict[int, list[DataFrame]], path: str, distinct: bool = True) -> None:
    """Write the pair table: every source's pairs (``source_pairs``) in one job,
    partitioned by source number, sorted by output rid in small row groups (a trace of
    a few output rows reads a few row groups: their min/max statistics locate them)."""
    parts = [part.withColumn(SRC, F.lit(index)) for index, found in pairs.items() for part in found]
    # few pairs: one job collects them (no shuffle for their distinct) and this process
    # writes them as Spark lays them out; Spark's write of a few rows costs a job, a
    # shuffle and a commit more (a join's pairs over 500 rows: 0.45 s against 0.1 s)
    local = parts and "://" not in path
    most = small_writes.SMALL_BYTES // PAIR_BYTES  # read when called, as small_rows reads it
    few = small_rows(union_pairs(parts, distinct=False), small_inputs=True, most_rows=most) if local else None
    if few is not None and few.num_rows:
        numbers = few.column(SRC).to_numpy()
        by_source = {n: [few.filter(pa.array(numbers == n)).select([OUT, IN])] for n in np.unique(numbers)}
        write_local_pairs(Path(path), by_source, distinct)
    elif few is None and parts:
        table = union_pairs(parts, distinct=distinct).sortWithinPartitions(SRC, OUT, IN)
        table.write.options(**PAIR_WRITE_OPTIONS).partitionBy(SRC).parquet(path)
    else:  # e.g. a global aggregate over an empty input: no pairs at all (through Arrow)
        write_parquet(spark.createDataFrame([], PAIRS_SCHEMA), path)


def publish_pairs(spark, pairs: dict[int, list[DataFrame]], path: Path, distinct: bool = True) -> None:
    """``write_pairs`` into a private directory beside ``path``, then renamed to it: a
    pair table built after the capture (on first use) appears whole or not at all, and
    two processes building it at once both end with one complete table."""
    publish_written(path, lambda tmp: write_pairs(spark, pairs, str(tmp), distinct))


def write_sides(graph: SideGraph, slots, root: Path, rows: DataFrame) -> dict:
    """Store every side relation the output's slots lead to, for the groups the
    output ``rows`` reach (``reached_sides``), and how they connect.

    The result is the catalog's ``witnesses`` entry: the output's slots and, per
    side, its rows' location and slots (a source slot names its source by number).
    """
    structure, paths = describe_sides(graph, slots, root)
    write_reached_sides(graph, slots, rows, paths)
    return structure


def joins_resolve(graph: SideGraph, slots, shared: bool = False) -> bool:
    """Whether every slot ``slots`` lead to names source rows (a rid, an injected
    aggregate's rids), groups of a side (a handle, an array of them), or one range of
    a window's side: what ``describe_sides`` describes and ``store/joined_pairs``
    resolves. A shared side's only with ``shared`` (its sets' lineage kept once) and
    not a Python function's payloads (made at query time)."""
    todo, seen = list(slots), set()
    while todo:
        s = todo.pop()
        if s.kind in ROW_SLOTS:
            continue
        if s.kind not in ("group", "groups", "window") or not 0 <= s.ref < len(graph.sides):
            return False
        side = graph.sides[s.ref]
        if side.shared and (not shared or side.payload is not None):
            return False
        if (s.kind == "window") != bool(side.ranged):
            return False
        if s.ref not in seen:
            seen.add(s.ref)
            todo.extend(side.slots)
    return True


def describe_sides(graph: SideGraph, slots, root: Path) -> tuple[dict, dict[int, str]]:
    """``write_sides``'s result, and the folder each side's rows go to (nothing written)."""

    def described(side_slots) -> list[dict]:
        return [
            {"name": s.name, "kind": s.kind, "ref": graph.source_of(s.ref) if s.kind in ROW_SLOTS else s.ref}
            for s in side_slots
        ]

    sides: dict[str, dict] = {}
    paths: dict[int, str] = {}
    todo = [s.ref for s in slots if s.kind not in ROW_SLOTS]
    while todo:
        k = todo.pop()
        if str(k) in sides:
            continue
        side = graph.sides[k]
        path = paths[k] = str(root / str(k))
        sides[str(k)] = {
            "operator": side.operator,
            "combine": side.combine,
            "ranged": side.ranged,
            **({"shared": True} if side.shared else {}),
            "path": path,
            "slots": described(side.slots),
        }
        todo.extend(s.ref for s in side.slots if s.kind not in ROW_SLOTS)
    return {"output": described(slots), "sides": sides}, paths


def write_side_rows(graph: SideGraph, paths: dict[int, str]) -> None:
    """Side ``k``'s rows written to ``paths[k]``: those the query's job gathered as it
    ran, else by running the side relation; the sides at once (on small data, each
    side's job waits on the driver's planning and Spark's scheduling more than on the
    cores: a 60-row query's three windows, 0.4 s one after the other)."""

    def write(k: int, path: str) -> None:
        table = graph.observed(k)
        if table is not None:
            write_table(table, graph.sides[k].observed.schema, path)
        else:
            write_parquet(graph.relation(k), path)

    results([kept_pool("side-writes", 4).submit(write, k, path) for k, path in paths.items()])


_INITIAL_PARTITIONS = "spark.sql.adaptive.coalescePartitions.initialPartitionNum"
PAIR_WRITE_OPTIONS = {
    # small row groups, so lookups by rid read little
    "parquet.block.size": str(1 << 20),
    # Parquet v2 pages delta-encode the sorted rids: TPC-H Q1's 5.9 million pairs take
    # 3.0 MB instead of 23.8 MB, written as fast
    "parquet.writer.version": "v2",
}
LINEAGE_PARTITIONS = 64  # at least this many shuffle partitions (before merging) for lineage jobs


def lineage_settings(bridge: Bridge):
    """Settings for jobs that make pairs: at least LINEAGE_PARTITIONS partitions to start."""
    initial = max(LINEAGE_PARTITIONS, int(bridge.spark.conf.get("spark.sql.shuffle.partitions")))
    return bridge.settings({_INITIAL_PARTITIONS: str(initial)})
