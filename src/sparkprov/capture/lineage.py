"""End-to-end lineage: from slot columns and side relations to per-source rid pairs.

The rewritten query leaves, per output row, source slots (rids) and group slots
(handles). A handle is resolved by joining it with its operator's side relation,
whose rows carry the slots of the operator's input, recursively down to the
sources. Only the resulting end-to-end pairs ``(out_rid, in_rid)`` are stored, one
table per source (Smoke's propagation: no per-operator lineage is kept).

>>> sorted(PAIR_COLUMNS)
['in_rid', 'out_rid']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .rewrite import Slot

OUT = "out_rid"
IN = "in_rid"
PAIR_COLUMNS = (OUT, IN)
SRC = "src"  # source number: the partition column of the stored pair table
PAIRS_SCHEMA = f"{OUT} long, {IN} long, {SRC} int"
HANDLE = "__sp_h"
_PROBE = "__sp_probe"


def source_pairs(
    rows: DataFrame,
    slots: list[Slot],
    side: Callable[[int], tuple[DataFrame, list[Slot]]],
    source_of: Callable[[int], int],
) -> dict[int, list[DataFrame]]:
    """Pair DataFrames ``(out_rid, in_rid)`` per source index.

    ``rows`` has column ``out_rid`` and the columns of ``slots``; ``side(k)`` gives
    side relation ``k`` (column ``__sp_h`` plus its slots) and ``source_of(i)`` the
    source of slot instance ``i``.
    """
    found: dict[int, list[DataFrame]] = defaultdict(list)
    for slot in slots:
        present = rows.where(F.col(slot.name).isNotNull())
        if slot.kind == "source":
            found[source_of(slot.ref)].append(present.select(F.col(OUT), F.col(slot.name).alias(IN)))
            continue
        side_df, side_slots = side(slot.ref)
        handles = present.select(F.col(OUT), F.col(slot.name).alias(_PROBE))
        joined = handles.join(side_df, handles[_PROBE].eqNullSafe(side_df[HANDLE])).drop(_PROBE, HANDLE)
        for src, parts in source_pairs(joined, side_slots, side, source_of).items():
            found[src].extend(parts)
    return found


def union_pairs(parts: list[DataFrame], distinct: bool = True) -> DataFrame:
    """One pair table from several parts; ``distinct`` unless the caller knows pairs are unique."""
    df = parts[0]
    for p in parts[1:]:
        df = df.unionByName(p)
    return df.distinct() if distinct else df
