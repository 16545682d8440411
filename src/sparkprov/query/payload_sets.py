"""The sets of functions' kept payloads (``sp.lineage(..., keep="payload")``), made in
this process from a capture's ``shared/_payloads/``: a payload side's set is one
output row of the function, and holds what the ids of the input rows its ``map_p``
names refer to (a source's rows, or sets of the shared side of the kept input).

In this process (the embedded engine), only the calls (groups, partitions) a trace
reaches run their ``map_p``: a backward trace the calls of the sets it reached, a
forward trace the calls whose input rows include its rows (SubZero's PayOne). On
Spark (``payload_sets_on_spark``), every call's, in parallel, as the trace's job needs them.

>>> bool(KeptPayloads(None, "capture 'x'"))
False
"""

from __future__ import annotations

import functools
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..functions.declare import Declaration
from ..functions.payloads import loaded_declaration, resolve
from ..store import fs
from ..store.files import parquet_files
from ..store.format import GRP, HANDLE, IN, PAY_GROUP, PAY_IDS, PAY_START, PAYLOADS, REF, RID, SHARED_SCHEMA, SRC
from ..store.parquet import SHARED_ARROW, read_table

_SETS = pa.schema([SHARED_ARROW.field(REF), SHARED_ARROW.field(GRP)])


@dataclass
class _Side:
    """One function's kept payloads: its rows, its declaration and what each of its
    id columns names (``srcs``: a source's number, or a shared side's pseudo-source)."""

    ref: int
    decl: Declaration
    srcs: list[int]
    rows: pa.Table
    _calls_of: dict[int, pa.Table] = field(default_factory=dict)  # per id column: (call, id)

    def made(self, rows: pa.Table) -> list[pa.Table]:
        """Per id column, ``(set, id)`` of ``rows`` (with their calls' rows that carry ids)."""
        calls = pc.unique(rows[PAY_GROUP])
        carrying = self.rows.filter(pc.and_(pc.is_in(self.rows[PAY_GROUP], calls), pc.is_valid(self.rows[PAY_START])))
        carrying = carrying.filter(pc.invert(pc.is_in(carrying[HANDLE], rows[HANDLE])))
        return resolve(self.decl, pa.concat_tables([rows, carrying]), HANDLE, len(self.srcs))

    def calls_holding(self, column: int, ids: pa.Array) -> pa.Array:
        """The calls among whose input rows some have ``ids`` in id column ``column``."""
        index = self._calls_of.get(column)
        if index is None:
            carrying = self.rows.filter(pc.is_valid(self.rows[PAY_START]))
            listed = carrying[f"{PAY_IDS}{column}"].combine_chunks()
            calls = pc.take(carrying[PAY_GROUP].combine_chunks(), pc.list_parent_indices(listed))
            index = self._calls_of[column] = pa.table({PAY_GROUP: calls, "id": pc.list_flatten(listed)})
        return pc.unique(index.filter(pc.is_in(index["id"], ids))[PAY_GROUP])


class KeptPayloads:
    """The kept payloads of the capture whose shared lineage is at ``path`` (None: it
    has none); ``where`` names the capture in errors."""

    def __init__(self, path: str | None, where: str) -> None:
        self.sides: list[_Side] = []
        root = fs.join(path, PAYLOADS) if path else None  # a store's, local or in an object store
        kept = sorted(n for n in fs.names(root) if n.endswith(".pickle")) if root is not None else []
        for k in [int(n.removesuffix(".pickle")) for n in kept]:
            srcs = json.loads(fs.read_bytes(fs.join(root, f"{k}.json")))["srcs"]
            rows = read_table(parquet_files(fs.join(root, str(k))))
            declared = loaded_declaration(fs.read_bytes(fs.join(root, f"{k}.pickle")), where)
            self.sides.append(_Side(k, declared, srcs, rows))

    def __bool__(self) -> bool:
        return bool(self.sides)

    def rows_of(self, reached: pa.Table) -> pa.Table:
        """The rows (``SHARED_ARROW``) of the payload sets among the sets ``reached``."""
        parts = [SHARED_ARROW.empty_table()]
        for side in self.sides:
            grps = reached.filter(pc.equal(reached[REF], side.ref))[GRP]
            if len(grps):
                asked = side.rows.filter(pc.is_in(side.rows[HANDLE], grps))
                for src, found in zip(side.srcs, side.made(asked)):
                    parts.append(_shared_rows(side.ref, src, found.filter(pc.is_in(found[HANDLE], grps))))
        return pa.concat_tables(parts)

    def holding(self, src: int, ids) -> pa.Table:
        """The payload sets (``ref``, ``grp``) that hold ``ids`` of ``src`` (a source's
        number, or a shared side's pseudo-source: sets of that side)."""
        ids = pa.array(ids, pa.int64())
        parts = [_SETS.empty_table()]
        for side in self.sides:
            for column in (j for j, s in enumerate(side.srcs) if s == src):
                calls = side.calls_holding(column, ids)
                if not len(calls):
                    continue
                found = side.made(side.rows.filter(pc.is_in(side.rows[PAY_GROUP], calls)))[column]
                grps = pc.unique(found.filter(pc.is_in(found["id"], ids))[HANDLE])
                parts.append(pa.table([pa.array(np.full(len(grps), side.ref, np.int32)), grps], schema=_SETS))
        return pa.concat_tables(parts)


FEW_SETS = 100_000  # payload sets a Spark trace makes in this process, for the rows it asks


def payload_sets(spark, path: str, where: str, table, pairs, source: int, outs, ins):
    """The rows (``SHARED_SCHEMA``) of the payload sets a Spark trace needs, if the
    capture at ``path`` keeps payloads (else None): ``table`` is its stored shared
    lineage, ``pairs`` its pair table (restricted to ``outs``, if given), ``source``
    the traced source's number and ``ins`` its traced rows, if given. The few sets a
    trace of a list of rows reaches are made in this process, as the embedded engine
    makes them; every set otherwise, by Spark's tasks, computed once for the trace."""
    kept = KeptPayloads(path, where)
    if not kept:
        return None
    few = _few(kept, table, pairs, source, outs, ins)
    if few is not None:
        return spark.createDataFrame(few.to_pylist(), SHARED_SCHEMA)
    return payload_sets_on_spark(spark, path, where).localCheckpoint(eager=True)


def _few(kept: KeptPayloads, table, pairs, source: int, outs, ins) -> pa.Table | None:
    # None where the sets a trace needs are not known from its rows alone: sets reached
    # through other shared sets, many sets or rows, sets of a kept input's rows forward
    # Spark's functions load here, not at the top: the embedded engine imports this module
    # and a trace without Spark must not load pyspark
    from pyspark.sql import functions as F

    refs = [-(side.ref + 1) for side in kept.sides]
    if table.where(F.col(SRC).isin(refs)).limit(1).count():
        return None
    if outs is not None:  # the pairs are those of the traced rows
        found = pairs.where(F.col(SRC).isin(refs)).select(SRC, IN).limit(FEW_SETS + 1).collect()
        if len(found) > FEW_SETS:
            return None
        refs_, grps = [-r[SRC] - 1 for r in found], [r[IN] for r in found]
        return kept.rows_of(pa.table([pa.array(refs_, pa.int32()), pa.array(grps, pa.int64())], schema=_SETS))
    if ins is None or any(s < 0 for side in kept.sides for s in side.srcs):
        return None
    if not isinstance(ins, list):  # rows named by a predicate: a few, collected
        ins = [r[RID] for r in ins.limit(FEW_SETS + 1).collect()]
        if len(ins) > FEW_SETS:
            return None
    return kept.rows_of(kept.holding(source, ins))


def payload_sets_on_spark(spark, path: str, where: str):
    """Every payload set's rows (``SHARED_SCHEMA``) of the capture whose shared lineage
    is at ``path``, as a Spark DataFrame whose tasks run map_p (a partition of calls
    each); None: it keeps no payloads."""
    root = Path(path) / PAYLOADS
    frames = []
    for kept in sorted(root.glob("*.pickle")) if root.is_dir() else []:
        k, data = int(kept.stem), kept.read_bytes()
        loaded_declaration(data, where)  # said here if it cannot be loaded, not by a task
        srcs = json.loads((root / f"{k}.json").read_text())["srcs"]
        rows = spark.read.parquet(str(root / str(k)))
        calls = rows.repartition(max(spark.sparkContext.defaultParallelism, 1), PAY_GROUP)
        made = functools.partial(_made_in_worker, ref=k, declaration=data, srcs=srcs)
        frames.append(calls.mapInArrow(made, SHARED_SCHEMA))
    return functools.reduce(lambda a, b: a.unionByName(b), frames) if frames else None


def _made_in_worker(batches, ref: int, declaration: bytes, srcs: list[int]):
    # a partition's calls, whole (repartitioned by call): their sets' rows
    batches = list(batches)
    if not batches:  # a partition without calls
        return
    table = pa.Table.from_batches(batches)
    decl = pickle.loads(declaration)
    for src, found in zip(srcs, resolve(decl, table, HANDLE, len(srcs))):
        yield from _shared_rows(ref, src, found).to_batches()


def _shared_rows(ref: int, src: int, found: pa.Table) -> pa.Table:
    n = found.num_rows
    refs, srcs = pa.array(np.full(n, ref, np.int32)), pa.array(np.full(n, src, np.int32))
    return pa.table([refs, found[HANDLE], srcs, found["id"]], schema=SHARED_ARROW)
