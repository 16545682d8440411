"""Shared lineage (a capture's ``shared/``) traced in this process: the source rows
behind the sets output rows refer to, and the sets that hold given source rows.

A set is ``(ref, grp)``: set ``grp`` of shared side ``ref`` (0 for a scalar
subquery's row or a window over the whole input, a partition's id for a window with
PARTITION BY). A row with ``src < 0`` says the set holds set ``in_rid`` of side
``-src - 1`` (a subquery inside a subquery, a window over a window): followed a level
at a time.

>>> import pyarrow as pa
>>> shared = pa.table({
...     "ref": pa.array([0, 0, 0, 1], pa.int32()), "grp": pa.array([5, 5, 7, 0], pa.int64()),
...     "src": pa.array([0, 0, 0, -1], pa.int32()), "in_rid": pa.array([10, 11, 12, 7], pa.int64())})
>>> rows_of_sets(shared, sets_of(0, [5]), 0).tolist()
[10, 11]
>>> rows_of_sets(shared, sets_of(1, [0]), 0).tolist()
[12]
>>> sorted(sets_holding(shared, 0, [12]).to_pylist(), key=lambda s: s["ref"])
[{'ref': 0, 'grp': 7}, {'ref': 1, 'grp': 0}]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..store.format import GRP, IN, REF, SRC, ref_source
from ..store.parquet import SHARED_ARROW, distinct_sorted

if TYPE_CHECKING:
    from .payload_sets import KeptPayloads

_SETS = pa.schema([SHARED_ARROW.field(REF), SHARED_ARROW.field(GRP)])


def read_shared(files: list) -> pa.Table:
    """The shared lineage in ``files`` (``SHARED_ARROW``); files written before sides
    had many sets have no set column: every row is set 0."""
    parts = [SHARED_ARROW.empty_table()]
    for f in files:
        table = pq.read_table(f)
        if GRP not in table.column_names:
            table = table.append_column(GRP, pa.array(np.zeros(table.num_rows, dtype=np.int64)))
        parts.append(table.select(SHARED_ARROW.names).cast(SHARED_ARROW))
    return pa.concat_tables(parts)


def sets_of(ref: int, grps) -> pa.Table:
    """Sets ``grps`` of shared side ``ref``, as a table of sets."""
    grps = pa.array(grps, pa.int64())
    return pa.table([pa.array(np.full(len(grps), ref, dtype=np.int32)), grps], schema=_SETS)


def rows_of_sets(shared: pa.Table, reached: pa.Table, source: int, made: KeptPayloads | None = None) -> np.ndarray:
    """Rids of ``source``'s rows that the sets ``reached`` hold, through nested sets too
    (sorted, distinct); ``made``: the sets of functions' kept payloads, made when reached."""
    found = [np.empty(0, dtype=np.int64)]
    reached = _distinct(reached)
    while reached.num_rows:
        hit = shared.join(reached, keys=[REF, GRP], join_type="left semi")
        if made:
            hit = pa.concat_tables([hit.select(SHARED_ARROW.names).cast(SHARED_ARROW), made.rows_of(reached)])
        found.append(hit.filter(pc.equal(hit[SRC], source))[IN].to_numpy())
        reached = _distinct(_inner_sets(hit.filter(pc.less(hit[SRC], 0))))
    return distinct_sorted(np.concatenate(found))


def sets_holding(shared: pa.Table, source: int, in_rids, made: KeptPayloads | None = None) -> pa.Table:
    """The sets that hold any of ``source``'s rows ``in_rids``, directly or through the
    sets they hold; ``made``: the sets of functions' kept payloads, made when reached."""
    direct = shared.filter(pc.and_(pc.equal(shared[SRC], source), pc.is_in(shared[IN], pa.array(in_rids, pa.int64()))))
    held = _distinct(direct.select([REF, GRP]))
    if made:
        held = _distinct(pa.concat_tables([held, made.holding(source, in_rids)]))
    nested = shared.filter(pc.less(shared[SRC], 0))
    inner = _inner_sets(nested).rename_columns(["__sp_ref", "__sp_grp"])
    outer = nested.select([REF, GRP])
    edges = pa.table([*outer.columns, *inner.columns], names=[REF, GRP, "__sp_ref", "__sp_grp"])
    frontier = held
    while frontier.num_rows:
        step = edges.join(
            frontier.rename_columns(["__sp_ref", "__sp_grp"]), keys=["__sp_ref", "__sp_grp"], join_type="left semi"
        )
        new = _distinct(step.select([REF, GRP]))
        if made:  # the payload sets holding the frontier's sets
            above = [made.holding(ref_source(ref), frontier.filter(pc.equal(frontier[REF], ref))[GRP])
                     for ref in pc.unique(frontier[REF]).to_pylist()]  # fmt: skip
            new = _distinct(pa.concat_tables([new, *above]))
        new = new.join(held, keys=[REF, GRP], join_type="left anti")
        held = pa.concat_tables([held, new.select([REF, GRP]).cast(_SETS)])
        frontier = new
    return held


def _inner_sets(nested: pa.Table) -> pa.Table:
    """The sets that rows with ``src < 0`` name: side ``-src - 1``, set ``in_rid``."""
    refs = pc.subtract(pc.negate(nested[SRC]), pa.scalar(1, pa.int32()))
    return pa.table([refs.cast(pa.int32()), nested[IN]], schema=_SETS)


def _distinct(sets: pa.Table) -> pa.Table:
    return sets.group_by([REF, GRP]).aggregate([]).select([REF, GRP]).cast(_SETS)
