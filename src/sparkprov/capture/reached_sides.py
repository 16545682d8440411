"""Side relations kept with witnesses, written for the groups the output reaches.

Why and how read a capture's side relations from its output rows down: an output
row's slots name groups of a side, whose rows name groups of the sides below, and a
group no output row reaches is on no answer. So each side is written, parents first,
for the handles its parents' written rows (or the output's) name, where they are at
most ``REACHED_MAX_HANDLES``: a top-n query keeps the groups of its n rows, not every
group of its aggregates (TPC-H Q18 at SF 1: 57 of the 1.5 million orders its inner
aggregate groups, whose 6 million witness rows took several seconds to write).

A side is written whole where it cannot be narrowed: shared (a scalar subquery's row,
stored once for every row), with a set per window partition or payloads (made at
query time), small, or reached through a side written whole that is not small.
"""

from __future__ import annotations

from collections import defaultdict
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..plan.small_writes import SMALL_BYTES, estimated_bytes, write_parquet, write_table
from ..plan.written import read_written
from ..store.format import parents_first
from .lineage import HANDLE, ROW_SLOTS, SideGraph

REACHED_MAX_HANDLES = 100_000  # handles of one side the output may reach for it to be narrowed
_REACHED = "__sp_reached"


def write_reached_sides(graph: SideGraph, slots, rows: DataFrame, paths: dict[int, str]) -> None:
    """Side ``k``'s rows written to ``paths[k]`` (every side ``slots`` lead to), each
    for the handles the output ``rows`` (with the columns of ``slots``) reach through
    the sides above it, where it can be narrowed; else whole, as ``write_side_rows``."""
    spark = rows.sparkSession
    reached: dict[int, list[DataFrame]] = defaultdict(list)
    whole: set[int] = set()  # sides reached through a side written whole: not narrowed

    def children(k: int) -> list[int]:
        return [s.ref for s in graph.sides[k].slots if s.kind not in ROW_SLOTS]

    _reach(rows, slots, graph, reached)
    for k in parents_first([s.ref for s in slots if s.kind not in ROW_SLOTS], children):
        side, path = graph.sides[k], paths[k]
        table = graph.observed(k)
        if table is not None:  # gathered by the query's job: few rows, written as they are
            write_table(table, side.observed.schema, path)
            few = True
        else:
            relation = graph.relation(k)
            few = estimated_bytes(relation) <= SMALL_BYTES  # read whole for less than finding its handles
            handles = None if few or k in whole or not _narrowable(side) else _handles(reached.pop(k, []))
            if handles is not None:
                narrow = graph.narrow(k)  # the form for few handles (a semi join's matches)
                relation = narrow if narrow is not None else relation
                relation = relation.join(handles, relation[HANDLE].eqNullSafe(handles[_REACHED]), "left_semi")
                few = True
            write_parquet(relation, path)
        if few:  # the handles its rows name narrow the sides below
            _reach(read_written(spark, path), side.slots, graph, reached)
        else:
            whole.update(children(k))


def _narrowable(side) -> bool:
    return not side.shared and not side.has_sets and side.payload is None


def _reach(rows: DataFrame, slots, graph: SideGraph, reached: dict[int, list[DataFrame]]) -> None:
    # the handles ``rows`` name, per side: a group's, a list of groups', a window
    # range's partition (all its rows kept: a superset of the range)
    for s in slots:
        if s.kind in ROW_SLOTS or graph.sides[s.ref].shared:
            continue
        value = F.col(s.name)
        if s.kind == "groups":
            value = F.explode(value)
        elif s.kind == "window":
            value = value.getField("h")
        handles = rows.select(value.alias(_REACHED))
        reached[s.ref].append(handles.where(F.col(_REACHED).isNotNull()))


def _handles(parts: list[DataFrame]) -> DataFrame | None:
    """The distinct handles ``parts`` reach, broadcast, if at most
    ``REACHED_MAX_HANDLES``; computed by Spark both times (a handle read back into
    Python could come back as another value: a time in the hour a clock turns back)."""
    if not parts:
        return None
    handles = reduce(DataFrame.unionAll, parts).distinct()
    if handles.limit(REACHED_MAX_HANDLES + 1).count() > REACHED_MAX_HANDLES:
        return None
    return F.broadcast(handles)
