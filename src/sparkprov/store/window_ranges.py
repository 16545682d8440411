"""A window side's ranges flattened by indices, in this process: the side's rows
ordered by (partition, position), so that a partition's rows are contiguous and a
range ``(h, lo, hi)`` is the run of indices ``start(h) + lo - 1 .. start(h) + hi - 1``;
the ranges an output row reaches are merged in that index space (one partition's rows
are contiguous there, so merging an output row's ranges merges them per partition) and
its side rows met by index (``spans``, then an integer join), not by exploding
positions and joining them to the side on (partition, position).

Only where each partition's positions are exactly 1..n (a window side's positions are
row numbers); ``flatten`` says so otherwise and ``store/joined_pairs`` joins instead.
Over the pipelines suite's ``running_totals`` at 1M orders (9.5M pairs through a
partition key of 45,000 customers): the join of positions 2.0 s, by indices 0.35 s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .duck import quote
from .format import ARRAY_SLOTS, HANDLE, OUT, POS
from .parquet import spans

# Ranges over at most this many positions are weighed by the source rows each position
# holds in an array (an injected aggregate's rids): a rank over ROLLUP groups reads a few
# thousand positions, each group of up to 550,000 rows (TPC-DS q67 at SF 1: 55M pairs)
WEIGHED_MAX_POSITIONS = 1_000_000


@dataclass(frozen=True)
class RangeSizes:
    """What a window side's reached ranges come to: the ``positions`` they cover, how
    many ``ranges``, the side's ``rows``; and the (output row, source row) ``pairs`` they
    flatten to and the source rows the side's own rows hold (``side_pairs``), which
    exceed ``positions`` and ``rows`` where side rows hold arrays of rids.

    >>> RangeSizes.unweighed(5_050, 100, 1_100)
    RangeSizes(positions=5050, ranges=100, rows=1100, pairs=5050, side_pairs=1100)
    """

    positions: int
    ranges: int
    rows: int
    pairs: int
    side_pairs: int

    @classmethod
    def unweighed(cls, positions: int, ranges: int, rows: int) -> RangeSizes:
        """Sizes of a side whose rows each hold one row of lineage per slot's value."""
        return cls(positions, ranges, rows, positions, rows)


# Whether one window side's merged ranges are flattened here, from their sizes
# (``joined_pairs.Accept`` with the side given); a capture declines where it keeps them
# as blocks
AcceptSizes = Callable[[RangeSizes], bool]


def flatten(
    con,
    n: int,
    frontier: str,
    side: str,
    slots: list[dict],
    same: Callable[[str, str], str],
    accept: AcceptSizes | None,
) -> bool | None:
    """The rows of ``side`` that ``frontier``'s ranges (``out``, ``h``: a window slot)
    reach, with their output rows, registered on ``con`` as ``rows_{n}`` (``out_rid``
    then ``slots``' columns); False when ``accept(sizes)`` declines them (nothing
    registered); None when the side's positions are not 1..n in each partition.
    ``same(a, b)``: the NULL-safe condition that two handles are equal."""
    h, pos = f"s.{HANDLE}", f"s.{POS}"
    con.execute(
        f"CREATE TEMP TABLE keys_{n} AS SELECT h, rows, "
        f"CAST(sum(rows) OVER (ORDER BY hash(h), h ROWS UNBOUNDED PRECEDING) - rows AS BIGINT) AS start "
        f"FROM (SELECT {h} AS h, count(*) AS rows FROM {side} s GROUP BY {h})"
    )
    names = [s["name"] for s in slots]
    columns = ", ".join(f"s.{quote(c)}" for c in names)
    con.execute(
        f"CREATE TEMP TABLE side_{n} AS SELECT k.start + {pos} - 1 AS i, {columns} "
        f"FROM {side} s JOIN keys_{n} k ON {same('k.h', h)}"
    )
    check = f"SELECT count(*), min(i), max(i), count(DISTINCT i) FROM side_{n}"
    rows, low, high, distinct = con.execute(check).fetchone()
    if rows and (low, high, distinct) != (0, rows - 1, rows):
        con.execute(f"DROP TABLE keys_{n}; DROP TABLE side_{n}")
        return None
    # each range in index space, clipped to its partition's rows, merged per output row
    # (grouped from one index to the longest, then cut to what those before it leave)
    merged = con.execute(
        f"WITH f AS (SELECT {OUT}, h.h AS h, h.lo AS lo, h.hi AS hi FROM ({frontier}) WHERE h.lo <= h.hi), "
        f"m AS (SELECT f.{OUT}, k.start + greatest(f.lo, 1) - 1 AS lo, k.start + least(f.hi, k.rows) - 1 AS hi "
        f"FROM f JOIN keys_{n} k ON {same('f.h', 'k.h')} WHERE greatest(f.lo, 1) <= least(f.hi, k.rows)), "
        f"g AS (SELECT {OUT}, lo, max(hi) AS hi FROM m GROUP BY {OUT}, lo), "
        f"w AS (SELECT *, max(hi) OVER (PARTITION BY {OUT} ORDER BY lo "
        f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM g) "
        f"SELECT {OUT}, CAST(greatest(lo, coalesce(reach + 1, lo)) AS BIGINT) AS lo, CAST(hi AS BIGINT) AS hi "
        f"FROM w WHERE reach IS NULL OR hi > reach"
    ).fetch_arrow_table()
    con.execute(f"DROP TABLE keys_{n}")
    outs, lo, hi = (merged.column(c).to_numpy() for c in (OUT, "lo", "hi"))
    counts = hi - lo + 1
    total = int(counts.sum())
    if accept is not None:
        sizes = RangeSizes.unweighed(total, len(counts), rows)
        weigh = row_weight(slots)
        if weigh is not None and total <= WEIGHED_MAX_POSITIONS:
            weight = con.execute(f"SELECT {weigh} AS w FROM side_{n} s ORDER BY i").fetch_arrow_table()
            before = np.concatenate(([0], np.cumsum(weight.column(0).to_numpy())))  # weight before each index
            pairs = int((before[hi + 1] - before[lo]).sum())
            sizes = RangeSizes(total, len(counts), rows, pairs, int(before[-1]))
        if not accept(sizes):
            con.execute(f"DROP TABLE side_{n}")
            return False
    # the side's rows met by index in DuckDB: only integer columns cross to it from
    # Arrow (the side's struct columns taken by Arrow and registered read as other rows
    # in DuckDB than in Arrow: the pipelines' sessionize at 1M orders, 2.4M rows)
    picks = pa.table({OUT: np.repeat(outs, counts), "i": spans(lo, counts)})
    con.register(f"picks_{n}", picks)
    con.execute(
        f"CREATE TEMP TABLE rows_{n} AS SELECT p.{OUT}, {columns} FROM picks_{n} p JOIN side_{n} s ON p.i = s.i"
    )
    con.unregister(f"picks_{n}")
    con.execute(f"DROP TABLE side_{n}")
    return True


def row_weight(slots: list[dict]) -> str | None:
    """SQL of the source rows a side row ``s`` holds: its arrays' lengths and one per
    other slot; None where no slot is an array (each row then weighs its slots).

    >>> row_weight([{"name": "r", "kind": "rids"}, {"name": "g", "kind": "window"}])
    'coalesce(len(s."r"), 0) + 1'
    """
    arrays = [quote(s["name"]) for s in slots if s["kind"] in ARRAY_SLOTS]
    if not arrays:
        return None
    return " + ".join([*(f"coalesce(len(s.{a}), 0)" for a in arrays), str(len(slots) - len(arrays))])
