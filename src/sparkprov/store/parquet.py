"""Stored pair tables read in this process: row groups located by their statistics.

A capture writes its ``(out_rid, in_rid)`` pairs sorted by ``out_rid`` in small row
groups, so the Parquet min/max statistics of each row group say which rids it can
hold: looking up a few rids reads a few row groups. The forward direction needs the
pairs sorted by ``in_rid``; that copy (the *forward index*) is built from the stored
pairs the first time a forward trace asks for it, and kept beside them.

>>> import tempfile, pyarrow as pa, pyarrow.parquet as pq, numpy as np
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"out_rid": [0, 0, 1, 2], "in_rid": [5, 6, 5, 7]}), f"{d}/p.parquet", row_group_size=2)
>>> PairTable([f"{d}/p.parquet"], "out_rid").lookup(np.array([1, 2]))["in_rid"].to_pylist()
[5, 7]
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .catalog import publish_written
from .files import parquet_files
from .format import IN, OUT

FORWARD_ROW_GROUP = 128 * 1024  # rows per row group of a forward index


class PairTable:
    """Pair rows in Parquet files, searchable by ``key`` (``out_rid`` or ``in_rid``);
    ``columns`` are the ones read (an RDD capture's side files: handle and slots).

    Lookups are correct whatever the row order (statistics bound every row group);
    sorted files make them cheap.
    """

    def __init__(self, files: list[str], key: str, columns: tuple[str, ...] = (OUT, IN)) -> None:
        self.key = key
        self.columns = list(columns)
        self._files = {f: pq.ParquetFile(f) for f in files}
        first = next(iter(self._files.values()), None)
        self._empty = (
            pa.schema([first.schema_arrow.field(c) for c in self.columns])
            if first is not None
            else pa.schema([(c, pa.int64()) for c in self.columns])
        ).empty_table()
        lo, hi, where = [], [], []
        for f, pf in self._files.items():
            meta = pf.metadata
            column = meta.schema.names.index(key)
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                if group.num_rows == 0:
                    continue
                stats = group.column(column).statistics
                bounded = stats is not None and stats.has_min_max
                lo.append(stats.min if bounded else np.iinfo(np.int64).min)
                hi.append(stats.max if bounded else np.iinfo(np.int64).max)
                where.append((f, g, group.num_rows))
        order = np.argsort(np.array(lo, dtype=np.int64), kind="stable")
        self._lo = np.array(lo, dtype=np.int64)[order]
        self._hi = np.array(hi, dtype=np.int64)[order]
        self._where = [where[i] for i in order]
        self.rows = sum(n for _, _, n in where)

    def groups_for(self, keys: np.ndarray) -> list[int]:
        """Row groups that may hold one of ``keys`` (sorted, distinct)."""
        if not len(keys) or not len(self._lo):
            return []
        # a group may hold a key iff some key lies in [lo, hi]
        first = np.searchsorted(keys, self._lo, side="left")
        return [i for i in np.nonzero(first < len(keys))[0] if keys[first[i]] <= self._hi[i]]

    def rows_to_read(self, keys: np.ndarray) -> int:
        return sum(self._where[i][2] for i in self.groups_for(keys))

    def lookup(self, keys: np.ndarray) -> pa.Table:
        """The pair rows whose ``key`` is one of ``keys`` (sorted, distinct int64)."""
        parts = []
        wanted = pa.array(keys, pa.int64())
        for i in self.groups_for(keys):
            f, g, _ = self._where[i]
            part = self._files[f].read_row_group(g, columns=self.columns)
            parts.append(part.filter(pc.is_in(part[self.key], value_set=wanted)))
        return pa.concat_tables(parts) if parts else self._empty

    def read_all(self) -> pa.Table:
        parts = [pf.read(columns=self.columns) for pf in self._files.values()]
        return pa.concat_tables(parts) if parts else self._empty


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting: NumPy's hash-based unique is many times slower on big arrays."""
    values = np.sort(values.astype(np.int64, copy=False))
    if len(values) < 2:
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def spans(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions ``starts[i]`` to ``starts[i] + counts[i] - 1`` for every ``i``, in
    order: the items of some rows of a compressed sparse row layout, in one pass.

    >>> spans(np.array([10, 3]), np.array([2, 3])).tolist()
    [10, 11, 3, 4, 5]
    """
    total = int(counts.sum())
    # each position: its span's start plus its offset within the span
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + offsets


def column_chunk_sum(files: list[str], columns: set[str], attribute: str) -> int:
    """The sum of ``attribute`` (``total_compressed_size``, ``num_values``) over the
    column chunks of ``files`` whose top-level column is in ``columns``, read from the
    footers only."""
    total = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                if chunk.path_in_schema.split(".")[0] in columns:
                    total += getattr(chunk, attribute)
    return total


def build_forward_index(pairs: PairTable, directory: Path) -> list[str]:
    """Write ``pairs`` sorted by ``in_rid`` into ``directory`` (atomically); returns its files.

    Two processes may build the same index at once: each writes a private directory
    and renames it into place; the loser's rename fails and its copy is dropped.
    """
    table = pairs.read_all().sort_by([(IN, "ascending"), (OUT, "ascending")])

    def write(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        # sorted in_rids are mostly +1 steps: delta encoding stores them in a few bits each
        # (20 times smaller than plain values for TPC-H Q1, and faster to write)
        pq.write_table(
            table,
            tmp / "part-0.parquet",
            row_group_size=FORWARD_ROW_GROUP,
            use_dictionary=[OUT],
            column_encoding={IN: "DELTA_BINARY_PACKED"},
        )

    publish_written(directory, write)
    return parquet_files(directory)
