"""The names and shapes of what the store keeps, in one place: the columns of its files,
the slots a catalog entry lists, what it keeps of each source, and where an entry's
shared lineage is. Everything here is plain Python, so the answers read in this process
(the embedded engine, the command line) need no Spark to use it.

>>> slots_from_json([["__sp_r0", "rids", 1]])
[Slot(name='__sp_r0', kind='rids', ref=1, attr=None)]
>>> parents_first([0], {0: [2, 1], 1: [2], 2: []}.get)
[0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from .entry import LineageInfo

RID = "_sp_rid"  # a row's id in a source or an output: file number << ROW_BITS | row
ROW_BITS = 40
OUT = "out_rid"
IN = "in_rid"
PAIR_COLUMNS = (OUT, IN)
SRC = "src"  # source number: the partition column of the stored pair table
REF = "ref"  # shared side relation number, in the table of shared lineage
# which of a shared side's sets (a window partition's id; 0 for a side with one set: a
# scalar subquery's row, a window over the whole input, and every side of a store
# written before sides had many sets, whose files have no such column)
GRP = "grp"
PAIRS_SCHEMA = f"{OUT} long, {IN} long, {SRC} int"
SHARED_SCHEMA = f"{REF} int, {GRP} long, {SRC} int, {IN} long"
# A window's large position ranges are kept as blocks of a binary tree over each
# partition (capture/window_blocks.py), sets of a shared side whose ids carry the
# block's level in their top bits; a block of level j > 0 holds its two halves, sets of
# the same side, and a prefix set (positions 1..q) holds sets of lower levels too:
# reading sets ends in level 0 after at most the largest such level.
LEVEL_SHIFT = 58
# Forms of lineage a sparkprov written before them would misread (read a window's sets
# as one, a block as no rows, skip a function's kept payloads), named in the catalog
# entry of a capture that keeps them (``features``): a reader refuses an entry naming a
# form it does not know, and the entry's format version keeps readers from before
# features away (store/catalog.py).
WINDOW_SETS = "window-sets"  # a shared side with a set per window partition (GRP)
WINDOW_BLOCKS = "window-blocks"  # a window's ranges kept as blocks (LEVEL_SHIFT)
KEPT_PAYLOADS = "kept-payloads"  # a Python function's payloads kept for the query (PAYLOADS)
FEATURES = (WINDOW_SETS, WINDOW_BLOCKS, KEPT_PAYLOADS)
# A reference to a shared side's lineage is a pair (out_rid, set) under the side's
# pseudo-source number (ref_source): in the pair table, and in lineage kept in the
# output rows, where its slot has this kind.
SHARED_REF = "shared"


ROW_SLOTS = ("source", "rids")  # slots naming source rows directly (a rid, or an array of rids)
ARRAY_SLOTS = ("rids", "groups")  # slots holding an array (collected by inject; an RDD record's groups)


@dataclass
class Slot:
    """One lineage column of a rewritten operator's output."""

    name: str  # column name, unique in the whole capture
    # "source" (a rid), "group" or "window" (a handle), or collected by inject (an
    # aggregate's input rows): "rids" (an array of rids of one source occurrence) or
    # "groups" (an array of handles)
    kind: str
    ref: int  # index into CaptureContext.instances (source) or .sides (group)
    attr: Any = None  # the attribute in the rewritten plan (a Catalyst expression, at capture)


def slots_json(slots: list[Slot]) -> list[list]:
    """Slots as a catalog entry keeps them: ``[name, kind, ref]``."""
    return [[s.name, s.kind, s.ref] for s in slots]


def slots_from_json(data: list[list]) -> list[Slot]:
    return [Slot(name, kind, ref) for name, kind, ref in data]


HANDLE = "__sp_h"  # an RDD side file's column: the handle of a record or partial group
POS = "__sp_pos"  # a window side's column: a row's position in its partition, from 1

# A Python function's payloads kept for the query (``sp.lineage(..., keep="payload")``):
# a row per output row of the function, beside its set id (HANDLE), in
# ``shared/PAYLOADS/<side>/``; map_p runs over them when a trace reaches the set.
PAYLOADS = "_payloads"  # under shared/: Spark and the shared table's readers skip "_" names
PAYLOAD_DECLARATION = "declaration.pickle"  # the declaration map_p is run under (cloudpickle)
# the call (group or partition) that made the row: its task's partition << 32 | its number
# in the Python worker (functions/payloads.py's CALL_BITS)
PAY_GROUP = "__sp_pg"
PAY_POSITION = "__sp_pp"  # the row's position among the call's output rows
PAY_RECEIVED = "__sp_pr"  # the input rows the call had received when it made the row (meta's input_rows)
PAY_VALUE = "__sp_pv"  # the payload, pickled
# on a call's first row after new input rows (else NULL): the first one's position, the
# call's key (its group's, pickled), and per id column (PAY_IDS + j) their ids
PAY_START = "__sp_ps"
PAY_KEY = "__sp_pk"
PAY_IDS = "__sp_pi"


def pay_columns(width: int) -> list[str]:
    """The payload columns of a function whose input rows carry ``width`` ids each."""
    return [PAY_GROUP, PAY_POSITION, PAY_RECEIVED, PAY_VALUE, PAY_START, PAY_KEY] + [
        f"{PAY_IDS}{j}" for j in range(width)
    ]


def slot_type(kind: str) -> pa.DataType:
    """An RDD side file's slot column type: a source row's rid, or a record's list of group handles."""
    import pyarrow as pa  # here: listing a store's captures imports no Arrow

    return pa.int64() if kind == "source" else pa.list_(pa.int64())


def ref_source(side: int) -> int:
    """The pseudo-source number under which references to shared side ``side`` are stored."""
    return -(side + 1)


def parents_first(start: Iterable[int], children: Callable[[int], Iterable[int]]) -> list[int]:
    """Every node reachable from ``start`` through ``children`` (a DAG of side
    relations), each after all the nodes that lead to it."""
    order: list[int] = []
    seen: set[int] = set()

    def visit(k: int) -> None:
        seen.add(k)
        for c in children(k):
            if c not in seen:
                visit(c)
        order.append(k)

    for k in sorted(set(start)):
        if k not in seen:
            visit(k)
    return order[::-1]


def resolvable_by_joins(witnesses: dict | None) -> bool:
    """Whether kept ``witnesses`` (an entry's) give their pairs by joins on handles alone
    (``store/joined_pairs``): every slot names one source row or one group, of a side
    that is not a window's ranges.

    >>> resolvable_by_joins({"output": [{"name": "s", "kind": "source", "ref": 0}], "sides": {}})
    True
    >>> resolvable_by_joins({"output": [{"name": "w", "kind": "window", "ref": 0}], "sides": {}})
    False
    """
    if not witnesses:
        return False
    sides = witnesses["sides"].values()
    slots = [*witnesses["output"], *(s for side in sides for s in side["slots"])]
    return all(s["kind"] in ("source", "group") for s in slots) and not any(side["ranged"] for side in sides)


def shared_path(lineage: LineageInfo) -> str | None:
    """Where a capture's shared lineage (scalar subqueries', whole-input windows') is, if
    it has any: one finished later has it only once built, and only if its query has
    such subqueries or windows."""
    path = lineage.shared
    return path if path and (not lineage.later or Path(path).is_dir()) else None
