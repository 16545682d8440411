"""A window's large position ranges kept as blocks: sets of a shared side, never
flattened to pairs.

A window function reads, for each row, a range ``lo..hi`` of positions in its
partition (a running total: ``1..pos``; a rank: the rows before it). Flattened, a
partition of ``n`` rows gives up to ``n * n / 2`` pairs. Instead the window's side
relation (partition, position, input slots) is kept once, as a shared side whose sets
are the aligned blocks of positions of a binary tree over each partition: block
``(j, i)`` holds positions ``i * 2**j + 1 .. (i + 1) * 2**j``; a block of level 0
holds one row's lineage, a block of level ``j > 0`` its two halves (sets of the same
side). A range is the union of at most two blocks per level (the segment tree's
cover), so a row refers to ``O(log n)`` sets and the side's lineage is stored once,
with about ``2n`` tree rows beside it: linear in the partition.

A block's set id is its partition's id (a 64-bit hash of the handle, cut to the bits
below the level's) plus its index, with the level in its top bits
(``store.format.LEVEL_SHIFT``: readers on Spark count the tree's depth from it). The ids
of one partition never meet; those of two partitions could only if their ids are
closer than their sizes, which ``check`` rules out from one row a partition before the
lineage is stored: a capture where they are is refused, never a merged answer.

>>> cover(3, 13)  # positions 3..13: blocks as (level, index)
[(0, 12), (1, 1), (2, 1), (2, 2)]
>>> sorted(p for j, i in cover(3, 13) for p in range(i * 2**j + 1, (i + 1) * 2**j + 1))
[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]

Ranges from a partition's first row (a running total, a rank: ``1..pos``) are most of
a window's ranges and cover ``popcount(pos)`` blocks each. Where they are many, the
side also keeps a **prefix** set per position ``q`` that is not a power of two: its
own block ending at ``q`` beside the prefix of ``q`` less its lowest bit (a Fenwick
tree's chain), so each such range is one reference, and a window over a running total
holds one reference a row, not one per block. A prefix's level (its id's top bits) is
``bit_length(q) - 1 + popcount(q)``, above its block's and its shorter prefix's:
readers still reach level 0 within the largest level.

>>> prefix_chain(13)  # 1..13: the block 13..13, then 1..12, which is 9..12 and 1..8
[(13, (0, 12)), (12, (2, 2))]
>>> prefix_level(13), prefix_level(12), 8 .bit_length() - 1
(6, 5, 3)
"""

from __future__ import annotations

import math

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import UnsupportedOperation
from ..plan.versions import to_arrow
from ..store.format import GRP, IN, LEVEL_SHIFT, OUT, POS, REF, SRC, ref_source

_HASH_BITS = (1 << LEVEL_SHIFT) - 1
# Ranges flattening to at most this many pairs are always flattened: pairs cost less
# to write and answer than a tree to walk
MIN_PAIRS = 1_000_000
# Blocks are taken when the flattened pairs outnumber the rows blocks store by this
# much: set when their ids were hashes, which Parquet could not delta-encode as it does
# sorted rids (a running total over partitions of 20 rows: 10.5M pairs, against 5.4M
# references and 2.4M shared rows taking 1.6 times the bytes); not weighed again since
# ids became a partition's id plus an index (regional_running's lineage: 40% fewer bytes)
ADVANTAGE = 2


def worth_it(pairs: int, ranges: int, side_rows: int, side_pairs: int | None = None) -> bool:
    """Whether ``ranges`` ranges flattening to ``pairs`` pairs, over a window side of
    ``side_rows`` rows holding ``side_pairs`` rows of lineage (as many as its rows
    unless they hold arrays: an injected aggregate's groups), are kept as blocks: the
    side's lineage, its tree (about two rows a side row) and each range's cover
    (about a block a level) against the pairs.

    >>> worth_it(200_000_000, 20_000, 20_000)  # a running total over one partition of 20,000 rows
    True
    >>> worth_it(10_500_000, 882_061, 882_061)  # over 50,000 partitions of 20 rows
    False
    >>> worth_it(6_235_494, 100, 100, 1_600_000)  # a rank over 100 groups of 16,000 rows each
    True
    """
    if pairs <= MIN_PAIRS:
        return False
    cover = ranges * (1 + math.log2(pairs / max(ranges, 1) + 1))
    lineage = side_rows if side_pairs is None else side_pairs
    return pairs > ADVANTAGE * (lineage + 2 * side_rows + cover)


def prefixes_worth_it(spared: int, side_rows: int) -> bool:
    """Whether a blocked side keeps prefix sets (two rows a position of its
    ``side_rows``, once) for ranges from position 1 that would otherwise refer to
    ``spared`` more blocks than one each.

    >>> prefixes_worth_it(882_061 * 7, 882_061)  # a running total over five regions
    True
    >>> prefixes_worth_it(5_050 * 4, 1_000_000)  # a partition's top 40 ranked, of many rows
    False
    """
    return spared > 2 * side_rows


def cover(lo: int, hi: int) -> list[tuple[int, int]]:
    """The blocks ``(level, index)`` whose union is positions ``lo..hi`` (from 1): what
    :func:`references` computes in Spark, in Python (for tests and readers)."""
    found, left, right, level = [], lo - 1, hi, 0
    while left < right:
        if left % 2:
            found.append((level, left))
            left += 1
        if right % 2:
            right -= 1
            found.append((level, right))
        left, right, level = left // 2, right // 2, level + 1
    return found


def prefix_level(q: int) -> int:
    """The level of prefix set ``1..q`` (``q`` not a power of two)."""
    return q.bit_length() - 1 + q.bit_count()


def prefix_chain(q: int) -> list[tuple[int, tuple[int, int]]]:
    """The prefix sets ``1..q`` is made of, as ``(q', block (level, index))``: each holds
    the block ending at ``q'`` and the next, down to a power of two (a block itself)."""
    chain = []
    while q & (q - 1):
        low = q & -q
        chain.append((q, (low.bit_length() - 1, q // low - 1)))
        q &= q - 1
    return chain


def set_of(handle: Column, handle_type: T.DataType) -> Column:
    """A partition's id from its handle (a struct of its key values, or a constant):
    each value hashed beside whether it is NULL (a hash skips NULLs)."""
    if isinstance(handle_type, T.StructType):
        values = [handle.getField(f.name) for f in handle_type.fields]
        return F.xxhash64(*[x for v in values for x in (v, v.isNull())])
    return F.xxhash64(handle)


def block_id(partition: Column, level: Column, index: Column) -> Column:
    """The set id of block ``(level, index)`` of a partition: the partition's id plus
    the index (a prefix set's is negative), below the level in its top bits."""
    # the id cut first, so the sum cannot overflow (indexes are positions: far below 2**57)
    offset = partition.bitwiseAND(F.lit(_HASH_BITS)) + index.cast("long")
    return offset.bitwiseAND(F.lit(_HASH_BITS)).bitwiseOR(F.shiftleft(level.cast("long"), LEVEL_SHIFT))


def _power(level: Column) -> Column:
    return F.pow(F.lit(2.0), level)  # exact: positions are far below 2**53


def _bit_length(q: Column) -> Column:
    # exact: the floor of a double's log2 is not, for every power of two
    return F.length(F.bin(q))


def _prefix(partition: Column, q: Column) -> Column:
    """The set holding positions ``1..q`` (``q >= 1``): its block where ``q`` is a power
    of two, else its prefix set (index ``-q``: no block has a negative index)."""
    block = block_id(partition, _bit_length(q) - 1, F.lit(0))
    prefix = block_id(partition, _bit_length(q) - 1 + F.bit_count(q), -q)
    return F.when(F.bit_count(q) == 1, block).otherwise(prefix)


def references(ranges: DataFrame, key: str, lo: str, hi: str, prefixed: bool = False) -> DataFrame:
    """``(out_rid, in_rid)``: each range's blocks (``cover``), ``in_rid`` the block's set
    id; ``ranges`` has ``out_rid``, the partition's handle ``key`` and the bounds. With
    ``prefixed`` (the side keeps ``prefixes``), a range from position 1 is its prefix set."""
    partition = set_of(F.col(key), ranges.schema[key].dataType)
    if prefixed:
        first = F.col(lo) == 1
        whole = ranges.where(first).select(OUT, _prefix(partition, F.col(hi)).alias(IN))
        return whole.unionByName(references(ranges.where(~first), key, lo, hi))
    start, end = F.col(lo) - 1, F.col(hi)  # positions start..end-1, counted from 0

    def at(level: Column) -> Column:
        # the cover's bounds at this level: ceil(start / 2**level), floor(end / 2**level)
        left, right = F.ceil(start / _power(level)), F.floor(end / _power(level))
        inside = left < right
        return F.array(
            F.when(inside & (left % 2 == 1), block_id(partition, level, left)),
            F.when(inside & (right % 2 == 1), block_id(partition, level, right - 1)),
        )

    levels = F.sequence(F.lit(0), F.floor(F.log2(end)).cast("int") + 1)
    blocks = F.filter(F.flatten(F.transform(levels, at)), lambda b: b.isNotNull())
    return ranges.select(F.col(OUT), F.explode(blocks).alias(IN))


def leaves(side: DataFrame, handle: str) -> Column:
    """A side row's own set: the block of level 0 at its position."""
    partition = set_of(F.col(handle), side.schema[handle].dataType)
    return block_id(partition, F.lit(0), F.col(POS) - 1)


def _parents(side: DataFrame, handle: str) -> DataFrame:
    """Every block of level ``j > 0`` once, from the row at its last position, with its
    partition's id: columns ``(p, j, i)``."""
    partition = set_of(F.col(handle), side.schema[handle].dataType)
    levels = F.sequence(F.lit(1), F.greatest(F.lit(1), F.floor(F.log2(F.col(POS))).cast("int")))
    ends = F.filter(levels, lambda j: F.col(POS) % _power(j) == 0)
    rows = side.select(partition.alias("p"), F.col(POS), F.explode(ends).alias("j"))
    return rows.select("p", "j", (F.col(POS) / _power(F.col("j")) - 1).cast("long").alias("i"))


def tree(side: DataFrame, handle: str, k: int) -> DataFrame:
    """Shared lineage rows ``(ref, grp, src, in_rid)`` of side ``k``'s tree: each block
    of level ``j > 0`` holds its two halves (sets of the same side)."""
    parents = _parents(side, handle)
    parent = block_id(F.col("p"), F.col("j"), F.col("i"))
    halves = F.array(
        block_id(F.col("p"), F.col("j") - 1, F.col("i") * 2), block_id(F.col("p"), F.col("j") - 1, F.col("i") * 2 + 1)
    )
    return parents.select(
        F.lit(k).alias(REF), parent.alias(GRP), F.lit(ref_source(k)).alias(SRC), F.explode(halves).alias(IN)
    )


def _prefixed_rows(side: DataFrame, handle: str) -> DataFrame:
    """The side's rows at positions that are not powers of two, with their partition's
    id ``p`` and their prefix set's id ``grp``."""
    partition = set_of(F.col(handle), side.schema[handle].dataType)
    rows = side.where(F.bit_count(POS) > 1).select(partition.alias("p"), F.col(POS))
    return rows.withColumn(GRP, _prefix(F.col("p"), F.col(POS)))


def prefixes(side: DataFrame, handle: str, k: int) -> DataFrame:
    """Shared lineage rows ``(ref, grp, src, in_rid)`` of side ``k``'s prefix sets: the
    set of ``1..q`` holds the block ending at ``q`` and the set of ``1..q'``, ``q'``
    being ``q`` less its lowest bit."""
    rows = _prefixed_rows(side, handle)
    q = F.col(POS)
    low = q.bitwiseAND(-q)
    own = block_id(F.col("p"), F.bit_count(low - 1), (q / low).cast("long") - 1)
    held = F.array(own, _prefix(F.col("p"), q.bitwiseAND(q - 1)))
    return rows.select(F.lit(k).alias(REF), GRP, F.lit(ref_source(k)).alias(SRC), F.explode(held).alias(IN))


def check(side: DataFrame, handle: str) -> None:
    """Refuse a window two of whose partitions' blocks could share a set id. A
    partition of ``n`` rows offsets its id by less than ``n`` either way (a block's
    index, a prefix set's ``-q``), so two partitions' ids meet only where those ranges
    overlap: checked here from each partition's id and size (one small aggregate)."""
    sizes = side.groupBy(handle).agg(F.max(POS).alias("n"))
    partition = set_of(F.col(handle), side.schema[handle].dataType).bitwiseAND(F.lit(_HASH_BITS))
    found = to_arrow(sizes.select(partition.alias("p"), F.col("n").cast("long").alias("n")))
    if not apart(found.column("p").to_numpy(), found.column("n").to_numpy()):
        raise UnsupportedOperation(
            "Window",
            "",
            "two of its partitions' ids hash to within their sizes of each other, so their blocks' set ids "
            "could meet and their shared lineage could not be told apart; capture with witnesses=True to keep "
            "it as ranges",
        )


def apart(ids: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the ranges ``id - size .. id + size - 1`` (modulo ``2**LEVEL_SHIFT``, where
    they may wrap) are disjoint.

    >>> apart(np.array([100, 200]), np.array([50, 50])), apart(np.array([100, 199]), np.array([50, 50]))
    (True, False)
    >>> top = 1 << LEVEL_SHIFT  # a range from top - 15 wraps to 4
    >>> apart(np.array([10, top - 5]), np.array([10, 10])), apart(np.array([30, top - 5]), np.array([10, 10]))
    (False, True)
    """
    space = 1 << LEVEL_SHIFT
    starts = (ids.astype(np.int64) - sizes) % space
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], starts[order] + 2 * sizes[order]
    if len(starts) and ends[-1] - space > starts[0]:  # the last range wraps onto the first
        return False
    return bool(np.all(starts[1:] >= ends[:-1]))
