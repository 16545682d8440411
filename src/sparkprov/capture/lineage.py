"""End-to-end lineage: from slot columns and side relations to per-source rid pairs.

The rewritten query leaves, per output row, source slots (rids) and group slots
(handles). A handle is resolved by joining it with its operator's side relation,
whose rows carry the slots of the operator's input, recursively down to the
sources. Only the resulting end-to-end pairs ``(out_rid, in_rid)`` are stored, one
table per source (Smoke's propagation: no per-operator lineage is kept).

>>> sorted(PAIR_COLUMNS)
['in_rid', 'out_rid']
>>> [(s.name, s.kind, s.ref) for s in slots_from_json([["__sp_s0", "source", 0]])]
[('__sp_s0', 'source', 0)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import UnsupportedOperation
from ..plan.small_writes import SMALL_BYTES, estimated_bytes
from ..store.format import (  # noqa: F401 - the store's names, used here and by modules that import them from here
    ARRAY_SLOTS,
    GRP,
    HANDLE,
    IN,
    LEVEL_SHIFT,
    OUT,
    PAIR_COLUMNS,
    PAIRS_SCHEMA,
    POS,
    REF,
    ROW_SLOTS,
    SHARED_REF,
    SHARED_SCHEMA,
    SRC,
    Slot,
    parents_first,
    ref_source,
    slots_from_json,
    slots_json,
)
from ..store.window_ranges import WEIGHED_MAX_POSITIONS, RangeSizes
from . import window_blocks

_PROBE = "__sp_probe"
_TOP = "__sp_top"
_KEY = "__sp_key"
_LO, _HI = "__sp_lo", "__sp_hi"
_RUN = "__sp_run"
_W = "__sp_w"


@dataclass(frozen=True)
class SideGraph:
    """A capture's side relations, as resolving needs them.

    ``sides[k]`` has ``slots``, ``shared`` and ``ranged`` (a ``SideRelation``);
    ``relation(k)`` gives its rows (column ``__sp_h`` plus its slots);
    ``source_of(i)`` the source of slot instance ``i``; ``keep(df)`` materializes an
    intermediate result (written once, read back) so it is neither recomputed nor
    repeated in the plans built on it. ``narrow(k)``, if not None, gives the same rows
    with the join inside the relation broadcasting its left side (a semi join's
    matches): the plan for a few handles, which leave few left rows to broadcast.
    ``observed(k)``, if not None, is side k's rows as the query's job gathered them
    (``SideRelation.observed``), to be written without running the side again.
    ``sets(k)``, if not None, is a shared side's set ids beside the keys they hash
    (``SideRelation.sets``).
    """

    sides: Sequence
    relation: Callable[[int], DataFrame]
    source_of: Callable[[int], int]
    keep: Callable[[DataFrame], DataFrame] = lambda df: df
    narrow: Callable[[int], DataFrame | None] = lambda k: None
    # the rows of side k as the query's own job gathered them, if it did (an Arrow table)
    observed: Callable[[int], object | None] = lambda k: None
    sets: Callable[[int], DataFrame | None] = lambda k: None
    # a window's large ranges may be kept as blocks (references to a shared side),
    # where the caller stores shared lineage (not a blackbox function's run again)
    factorize: bool = True
    # the sides whose ranges were kept as blocks (added to as they are resolved), and
    # those of them that keep prefix sets too (window_blocks.prefixes)
    blocked: set = field(default_factory=set)
    prefixed: set = field(default_factory=set)


def source_pairs(rows: DataFrame, slots: list[Slot], graph: SideGraph) -> dict[int, list[DataFrame]]:
    """Pair DataFrames ``(out_rid, in_rid)`` per source index.

    ``rows`` has column ``out_rid`` and the columns of ``slots``. A group slot of a
    shared side ``k`` is not resolved: the row gets a reference ``(out_rid, set)``
    under source number ``ref_source(k)`` (the slot's value: 0, or a window
    partition's id; a slot of kind ``groups`` holds several), and the side's own
    lineage is stored once (``shared_pairs``). A slot of a ranged side (a window's)
    holds ``(h, lo, hi)`` and stands for the side rows with handle ``h`` at positions
    ``lo..hi``.

    Sides are resolved one at a time, parents before children, each from the
    distinct ``(out_rid, handle)`` pairs that reach it: an output row that reaches an
    inner group along many paths (every row of a semi join's left side meeting the
    same aggregated right row) is joined with that group once, not once per path.
    """
    found: dict[int, list[DataFrame]] = defaultdict(list)
    # side -> parts of (out_rid, probe), each with whether it is cheap to read again
    # (stored rows, not a join that would re-run a side relation's plan)
    probes: dict[int, list[tuple[DataFrame, bool]]] = defaultdict(list)
    derived: set[int] = set()  # sides reached through another side: paths may repeat a probe
    _visit(rows, slots, graph, found, probes, cheap=True)

    def inner(k: int) -> list[int]:  # shared sides are not resolved here: stored once (shared_pairs)
        return [s.ref for s in graph.sides[k].slots if s.kind not in ROW_SLOTS and not graph.sides[s.ref].shared]

    for k in parents_first(probes, inner):
        parts = probes.pop(k, [])
        if not parts:
            continue
        distinct = len(parts) > 1 or k in derived
        cheap = all(c for _, c in parts)
        if graph.sides[k].ranged:
            joined = _range_join(parts, distinct, cheap, graph, k, found)
        else:
            frontier = union_pairs([p for p, _ in parts], distinct=distinct)
            if k in derived and not cheap:
                frontier, cheap = graph.keep(frontier), True
            if getattr(graph.sides[k], "combine", None) == "matches":
                # A semi join's matches: its left rows the output reached, first, as a
                # semi join on the handle, which Catalyst pushes down to the left input
                # the handle is made on (rules/semi_join.py), below the side's own
                # join: that join then runs for those rows only (TPC-H Q21 at SF 1: a
                # few thousand of 3.8M lineitem rows). Spark cannot know they are few
                # before both sides of that join have been shuffled, so for a few
                # handles the form broadcasting them is taken: the right side is then
                # read once, not shuffled.
                reached = frontier.select(_PROBE)
                narrow = graph.narrow(k) if cheap else None
                few = narrow is not None and reached.limit(NARROW_MAX_HANDLES + 1).count() <= NARROW_MAX_HANDLES
                side_df = narrow if few else graph.relation(k)  # each built only when read
                side_df = side_df.join(reached, side_df[HANDLE].eqNullSafe(reached[_PROBE]), "left_semi")
            else:
                side_df = graph.relation(k)
                if cheap:
                    side_df = _prefiltered(side_df, frontier)
            joined = frontier.join(side_df, frontier[_PROBE].eqNullSafe(side_df[HANDLE])).drop(_PROBE, HANDLE)
        side_slots = graph.sides[k].slots
        kept = len(side_slots) > 1  # read once per slot: compute it once
        if kept:
            joined = graph.keep(joined)
        _visit(joined, side_slots, graph, found, probes, cheap=kept)
        derived.update(s.ref for s in side_slots if s.kind not in ROW_SLOTS)
    return found


def _visit(rows: DataFrame, slots: list[Slot], graph: SideGraph, found, probes, cheap: bool) -> None:
    for slot in slots:
        # an injected aggregate over no rows has an empty array: no lineage, not even
        # a reference to a shared side
        kept = F.size(slot.name) > 0 if slot.kind in ARRAY_SLOTS else F.col(slot.name).isNotNull()
        present = rows.where(kept)
        if slot.kind in ROW_SLOTS:
            rid = F.explode(slot.name) if slot.kind == "rids" else F.col(slot.name)
            found[graph.source_of(slot.ref)].append(present.select(F.col(OUT), rid.alias(IN)))
        elif slot.kind == SHARED_REF or graph.sides[slot.ref].shared:
            number = slot.ref if slot.kind == SHARED_REF else ref_source(slot.ref)
            held = F.explode(slot.name) if slot.kind == "groups" else F.col(slot.name).cast("long")
            found[number].append(present.select(F.col(OUT), held.alias(IN)))
        else:
            # "groups": a list of handles (an RDD record's partial groups, one per input
            # partition; an injected aggregate's input groups, which may repeat one)
            if slot.kind == "groups":
                probe = present.select(F.col(OUT), F.explode(slot.name).alias(_PROBE)).distinct()
            else:
                probe = present.select(F.col(OUT), F.col(slot.name).alias(_PROBE))
            probes[slot.ref].append((probe, cheap))


MAX_WINDOW_PAIRS = 50_000_000
# reached handles of a semi join's matches resolved with their left rows broadcast
# (each handle names one left row, or copies of one)
NARROW_MAX_HANDLES = 100_000


# reached handles of a group side whose key values are pushed into its relation's plan
PREFILTER_MAX_HANDLES = 1_000
_ATOMIC = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
    T.StringType,
    T.DateType,
    T.TimestampNTZType,
)


def _prefiltered(side_df: DataFrame, frontier: DataFrame) -> DataFrame:
    """``side_df`` restricted to rows whose handle could be one ``frontier`` reached,
    when it reached few: each key of the handle (a struct of a group's key values)
    must be one of the values the reached handles hold for it. Spark pushes these
    filters through the relation's plan down to its scans, where a Parquet source
    skips the row groups whose statistics rule them out (a top-n query's few groups:
    TPC-H Q3's ten orders of lineitem's 53 row groups). A superset: the exact join on
    the handle follows. (Not a key with a time zone: read into Python as a local time,
    a value in the hour a clock turns back could come back as another.)"""
    fields = side_df.schema[HANDLE].dataType
    if not isinstance(fields, T.StructType):  # a global aggregate's constant handle
        return side_df
    if estimated_bytes(side_df) <= SMALL_BYTES:  # read whole at less than the job finding the keys costs
        return side_df
    keys = [f.name for f in fields.fields if isinstance(f.dataType, _ATOMIC)]
    if not keys:
        return side_df
    reached = frontier.select(*[F.col(f"{_PROBE}.{k}").alias(k) for k in keys]).distinct()
    rows = reached.limit(PREFILTER_MAX_HANDLES + 1).collect()
    if len(rows) > PREFILTER_MAX_HANDLES:
        return side_df
    kept = F.lit(True)
    for i, k in enumerate(keys):
        values = {r[i] for r in rows}
        column = F.col(f"{HANDLE}.{k}")
        # IN never holds for NULL: a NULL key is asked for by name
        cond = column.isin(sorted(v for v in values if v is not None)) if values - {None} else F.lit(False)
        kept = kept & (cond | column.isNull() if None in values else cond)
    return side_df.where(kept)


def _merged_ranges(frontier: DataFrame) -> DataFrame:
    """``frontier``'s window ranges with those of one output row in one partition merged
    where they overlap or touch: the same positions, each reached once. Stacked windows
    reach a lower window's side through every row of an upper frame, each with a range
    of its own (a running total under a 30-day frame: the running totals of the month's
    rows, all from position 1), so their pairs were made many times over and then made
    distinct (the pipelines suite's running totals at 1M orders: 27M made for 9.5M
    kept). Takes the place of the frontier's distinct: the same one shuffle."""
    flat = _ranges(frontier)
    ordered = Window.partitionBy(OUT, _KEY).orderBy(_LO, _HI)
    reach = F.max(_HI).over(ordered.rowsBetween(Window.unboundedPreceding, -1))  # of the ranges before
    starts = flat.withColumn(_RUN, F.when(reach.isNull() | (F.col(_LO) > reach + 1), 1).otherwise(0))
    runs = starts.withColumn(_RUN, F.sum(_RUN).over(ordered.rowsBetween(Window.unboundedPreceding, 0)))
    merged = runs.groupBy(OUT, _KEY, _RUN).agg(F.min(_LO).alias("lo"), F.max(_HI).alias("hi"))
    return merged.select(OUT, F.struct(F.col(_KEY).alias("h"), "lo", "hi").alias(_PROBE))


def _ranges(frontier: DataFrame) -> DataFrame:
    """``frontier``'s window ranges as columns ``(out_rid, key, lo, hi)``, empty ones
    (``lo > hi``: a frame with no rows) left out."""
    lo, hi = F.col(f"{_PROBE}.lo"), F.col(f"{_PROBE}.hi")
    return frontier.where(lo <= hi).select(OUT, F.col(f"{_PROBE}.h").alias(_KEY), lo.alias(_LO), hi.alias(_HI))


def _range_join(
    parts: list[tuple[DataFrame, bool]], distinct: bool, cheap: bool, graph: SideGraph, k: int, found
) -> DataFrame:
    """The rows of window side ``k`` at the positions the ranges in ``parts`` name (each
    part's rows ``(out_rid, probe)``, with whether it is cheap to read again).

    Where they would flatten to many pairs, ranges of more than one position become
    references to blocks of the side, kept once (``window_blocks``; added to ``found``
    under the side's pseudo-source number), and only single positions are joined.
    """
    frontier = union_pairs([p for p, _ in parts], distinct=False)
    if distinct:  # a row's ranges in one partition overlap when windows are stacked
        frontier = _merged_ranges(frontier)
    if distinct or not cheap:  # counted, then read again
        frontier = graph.keep(frontier)
    total, count, spared = _sizes(frontier)
    arrays = [s.name for s in graph.sides[k].slots if s.kind in ARRAY_SLOTS]
    weighed = arrays and total <= WEIGHED_MAX_POSITIONS
    # (the side is counted only where blocks could be taken)
    if _factorable(graph, k) and (weighed or total > window_blocks.MIN_PAIRS):
        if weighed:
            sizes = _weighed(frontier, graph.relation(k), arrays, total, count)
        else:
            sizes = _unweighed(graph, k, total, count)
        if _worth_blocks(sizes):
            if window_blocks.prefixes_worth_it(spared, sizes.rows):
                graph.prefixed.add(k)
            ranges = _ranges(frontier)
            many = ranges.where(F.col(_LO) < F.col(_HI))
            found[ref_source(k)].append(window_blocks.references(many, _KEY, _LO, _HI, k in graph.prefixed))
            graph.blocked.add(k)
            return _joined(ranges.where(F.col(_LO) == F.col(_HI)), graph.relation(k))
    if total > MAX_WINDOW_PAIRS:
        # flattened window lineage grows with the frames' sizes: refuse what would not
        # fit rather than fill the disk
        raise UnsupportedOperation(
            "Window",
            "",
            f"its lineage has {total:,} (row, input row) pairs, more than {MAX_WINDOW_PAIRS:,}, and is not "
            "kept as blocks here (with witnesses, or run again for a blackbox function)",
        )
    return _joined(_ranges(frontier), graph.relation(k))


# flattened rows through one window side that a capture's joins in DuckDB make
# (store/joined_pairs); more are resolved by Spark
JOINED_MAX_PAIRS = 20_000_000


def flattened_here(graph: SideGraph) -> Callable[[int, RangeSizes], bool]:
    """Whether the ranges of window side ``k`` (of sizes ``RangeSizes``) are flattened
    by joins in this process (``store/joined_pairs``): not where ``_range_join`` would
    keep them as blocks, nor beyond ``JOINED_MAX_PAIRS`` positions."""

    def accept(k: int, sizes: RangeSizes) -> bool:
        return not (_factorable(graph, k) and _worth_blocks(sizes)) and sizes.positions <= JOINED_MAX_PAIRS

    return accept


def _factorable(graph: SideGraph, k: int) -> bool:
    """Whether window side ``k``'s ranges may be kept as blocks, references to a shared side."""
    return graph.factorize and getattr(graph.sides[k], "factorable", False)


def _worth_blocks(sizes: RangeSizes) -> bool:
    # Ranges over positions that hold arrays (an injected aggregate's groups) are kept
    # as blocks only beyond what joins in DuckDB flatten: blocks are resolved by Spark's
    # jobs, slower below that (TPC-DS at SF 1: q36's 6.2M pairs flattened in 1.8 s, as
    # blocks 8.7 s; q70, 3.3 s against 15.6 s; q67's 55M pairs 23.6 s against 8.5 s)
    # (more pairs than positions: some position holds more than one row's lineage)
    least = window_blocks.MIN_PAIRS if sizes.pairs == sizes.positions else JOINED_MAX_PAIRS
    return sizes.pairs > least and window_blocks.worth_it(sizes.pairs, sizes.ranges, sizes.rows, sizes.side_pairs)


def _unweighed(graph: SideGraph, k: int, positions: int, ranges: int) -> RangeSizes:
    return RangeSizes.unweighed(positions, ranges, graph.relation(k).count())


def _weighed(frontier: DataFrame, side: DataFrame, arrays: list[str], positions: int, ranges: int) -> RangeSizes:
    """The sizes of ``frontier``'s ranges (``positions`` of them in ``ranges`` ranges)
    over a window side's rows ``side``, each position weighed by the source rows its
    ``arrays`` hold (an injected aggregate's rids) and its other slots, a row each."""
    others = len([c for c in side.columns if c not in (HANDLE, POS)]) - len(arrays)
    # (a NULL array's size is -1 or NULL, by the session's settings)
    weight = sum((F.greatest(F.size(a), F.lit(0)) for a in arrays), F.lit(others))
    rows = side.select(HANDLE, POS, weight.alias(_W))
    total = F.coalesce(F.sum(_W), F.lit(0))
    (pairs,) = _joined(_ranges(frontier), rows).select(total).first()
    side_rows, side_pairs = rows.select(F.count(F.lit(1)), total).first()
    return RangeSizes(positions, ranges, side_rows, int(pairs), int(side_pairs))


def _sizes(frontier: DataFrame) -> tuple[int, int, int]:
    """How many pairs ``frontier``'s ranges flatten to, how many ranges there are, and
    how many references to blocks prefix sets would spare (``window_blocks.prefixes``:
    a range from position 1 one reference, not one a block of its cover)."""
    ranges = _ranges(frontier)
    lo, hi = F.col(_LO), F.col(_HI)
    spared = F.sum(F.when((lo == 1) & (lo < hi), F.bit_count(hi) - 1))
    total, count, spared = ranges.select(F.sum(hi - lo + 1), F.count(F.lit(1)), spared).first()
    return total or 0, count, spared or 0


def _joined(ranges: DataFrame, side_df: DataFrame) -> DataFrame:
    """``_ranges``' rows joined with the side rows at each of their positions."""
    # Each probe made one row per position it reads, then joined on (partition, position):
    # work in proportion to the pairs. A join on the partition alone with the range as
    # its condition compares every row of a partition with every other (a lag or a
    # three-row frame paid a partition's square).
    # (empty ranges are left out first: sequence(3, 1) counts down)
    p = ranges.select(OUT, _KEY, F.explode(F.sequence(_LO, _HI)).alias(_LO))
    cond = p[_KEY].eqNullSafe(side_df[HANDLE]) & (p[_LO] == side_df[POS])
    return p.join(side_df, cond).drop(_KEY, _LO, HANDLE, POS)


def shared_pairs(referenced: set[int], graph: SideGraph) -> tuple[list[DataFrame], list[DataFrame]]:
    """The lineage of every shared side reachable from ``referenced``, once each: parts
    that may repeat rows, and parts whose rows are unique and found in no other part
    (a window's tree and prefix sets: each set made once, their ids checked apart).

    Rows ``(ref, grp, src, in_rid)``: set ``grp`` of shared side ``ref`` (its
    rows' handle: 0, or a window partition's id) depends on row ``in_rid`` of source
    ``src`` (or, for ``src < 0``, on set ``in_rid`` of another shared side).
    """
    parts, unique, todo, done = [], [], sorted(referenced), set()
    windows: dict[int, DataFrame] = {}  # the rows of the window sides kept as blocks
    while todo:
        k = todo.pop()
        if k in done:
            continue
        done.add(k)
        if graph.sides[k].payload is not None:  # its sets are made at query time, of its input's sets
            todo.extend(graph.sides[k].payload.sides())
            continue
        side_slots = graph.sides[k].slots
        rows = graph.relation(k)
        if graph.sides[k].ranged:  # a window's side kept as blocks: a leaf per row, the tree above
            windows[k] = rows
            unique.append(window_blocks.tree(rows, HANDLE, k))
            rows = rows.withColumn(OUT, window_blocks.leaves(rows, HANDLE))
        else:
            rows = rows.withColumn(OUT, F.col(HANDLE).cast("long"))
        if len(side_slots) > 1:
            rows = graph.keep(rows)
        for src, found in source_pairs(rows, side_slots, graph).items():
            parts.extend(
                p.select(F.lit(k).alias(REF), F.col(OUT).alias(GRP), F.lit(src).alias(SRC), F.col(IN)) for p in found
            )
            if src < 0:
                todo.append(-src - 1)
    # a window's partitions are checked apart; its prefix sets are kept if ranges took
    # them: known once every side above it is resolved (a window over a running total)
    for k, rows in sorted(windows.items()):
        window_blocks.check(rows, HANDLE)
        if k in graph.prefixed:
            unique.append(window_blocks.prefixes(rows, HANDLE, k))
    return parts, unique


def union_pairs(parts: list[DataFrame], distinct: bool = True) -> DataFrame:
    """One pair table from several parts; ``distinct`` unless the caller knows pairs are unique."""
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df.distinct() if distinct else df


def expand_shared(pairs: DataFrame, shared: DataFrame, source: int, now: bool = False) -> DataFrame:
    """Pairs ``(out_rid, in_rid)`` of ``source`` that output rows get through references.

    ``pairs`` is the stored pair table (references ``(out_rid, set)`` have ``src < 0``)
    and ``shared`` the shared lineage (``shared_pairs``' rows). References between
    shared sides (a subquery inside a subquery, a window over a window) are followed
    a step per level of nesting, the levels counted on the driver from the sides'
    few distinct references to each other. ``now`` (``pairs`` restricted to the output
    rows of a trace): the levels are computed here, one at a time (``_followed``);
    otherwise the answer stays one lazy plan, which a filter on its output rows narrows.
    """
    nested = shared.where(F.col(SRC) < 0).select(REF, GRP, (-F.col(SRC) - 1).alias(_TOP), IN)
    rows = shared.where(F.col(SRC) == source).select(REF, GRP, IN)

    def down(reached: DataFrame, nested: DataFrame) -> DataFrame:
        step = reached.join(nested, [REF, GRP])
        return step.select(OUT, F.col(_TOP).alias(REF), F.col(IN).alias(GRP))

    reached = _followed(_references(pairs), nested, down, _depth(shared), now)
    return reached.join(rows, [REF, GRP]).select(OUT, IN)


def expand_shared_forward(pairs: DataFrame, shared: DataFrame, held: DataFrame) -> DataFrame:
    """``expand_shared``'s pairs of the source rows in ``held`` (the shared lineage's rows
    ``(ref, grp, in_rid)`` that hold them), found upwards: from the sets holding them to
    the sets holding those, then the output rows referring to any. A forward trace of
    a few rows so reads the sets above them, not every reference's expansion (a
    window's blocks: every row's whole range)."""
    inner = shared.where(F.col(SRC) < 0).select(
        F.col(REF).alias(_TOP), F.col(GRP).alias(_KEY), (-F.col(SRC) - 1).alias(REF), F.col(IN).alias(GRP)
    )

    def up(reached: DataFrame, inner: DataFrame) -> DataFrame:
        step = reached.join(inner, [REF, GRP])
        return step.select(F.col(_TOP).alias(REF), F.col(_KEY).alias(GRP), IN)

    every = _followed(held.select(REF, GRP, IN).distinct(), inner, up, _depth(shared), now=True)
    return _references(pairs).join(every, [REF, GRP]).select(OUT, IN)


# a level of sets reached with at most this many rows is broadcast to the next level's join
_BROADCAST_LEVEL_ROWS = 1_000_000


def _followed(
    start: DataFrame, edges: DataFrame, step: Callable[[DataFrame, DataFrame], DataFrame], depth: int, now: bool
) -> DataFrame:
    """``start``'s rows and those ``step`` reaches from them through ``edges``, a level
    at a time (at most ``depth`` levels). ``now``: each level computed here, once, and
    the edges read once, stopping at a level that reaches nothing: a plan built of
    every level's joins read the edges again for each and ran the levels below again
    in each (a backward trace through a window's blocks over 176,000-row partitions,
    17 levels: 165 s). Otherwise that plan, for the caller to narrow and run."""
    if not now:
        levels, reached = [start], start
        for _ in range(depth):
            reached = step(reached, edges).distinct()
            levels.append(reached)
        return union_pairs(levels, distinct=False)
    edges = edges.persist()
    try:
        levels, reached, few = [start], start, False
        for _ in range(depth):
            reached = step(F.broadcast(reached) if few else reached, edges).distinct().localCheckpoint()
            count = reached.count()
            if not count:
                break
            levels.append(reached)
            few = count <= _BROADCAST_LEVEL_ROWS
    finally:
        edges.unpersist()
    return union_pairs(levels, distinct=False)


def _references(pairs: DataFrame) -> DataFrame:
    """The pair table's references to shared sets, as ``(out_rid, ref, grp)``."""
    return pairs.where(F.col(SRC) < 0).select(OUT, (-F.col(SRC) - 1).alias(REF), F.col(IN).alias(GRP))


def _depth(shared: DataFrame) -> int:
    """How many steps from a set referenced by an output row reach every set it holds."""
    edges: dict[int, set[int]] = defaultdict(set)
    tops: dict[int, int] = {}  # a window side's blocks: the largest level (its tree's depth)
    level = F.max(F.shiftrightunsigned(GRP, LEVEL_SHIFT)).alias("level")
    for r in shared.where(F.col(SRC) < 0).groupBy(REF, SRC).agg(level).collect():
        if r[SRC] == ref_source(r[REF]):
            tops[r[REF]] = r["level"]
        else:
            edges[r[REF]].add(-r[SRC] - 1)
    return _levels(edges, tops)


def _levels(edges: dict[int, set[int]], tops: dict[int, int]) -> int:
    """The longest chain of references between shared sides (acyclic: a side refers
    only to sides inside its own plan), a window's blocks counting the levels of their
    tree (``tops``) on the way down to their rows.

    >>> _levels({0: {1}}, {1: 3})  # side 0's sets hold blocks of side 1, up to level 3
    4
    """
    depth: dict[int, int] = {}

    def of(k: int) -> int:
        if k not in depth:
            depth[k] = tops.get(k, 0) + 1 + max((of(n) for n in edges.get(k, ())), default=-1)
        return depth[k]

    return max((of(k) for k in {*edges, *tops}), default=0)
