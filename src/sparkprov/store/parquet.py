"""Stored pair tables read in this process: row groups located by their statistics;
pair tables written in this process in the layout Spark writes (``write_local_pairs``).

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

from . import fs
from .catalog import publish_written
from .duck import reach_object_store
from .files import parquet_files
from .format import GRP, IN, OUT, REF, SRC
from .pair_order import ordered_pairs

FORWARD_ROW_GROUP = 128 * 1024  # rows per row group of a forward index
PAIR_ROW_GROUP = 64 * 1024  # rows per row group of a pair table written in this process
# the table of shared lineage (format.SHARED_SCHEMA) as Arrow holds it
SHARED_ARROW = pa.schema([(REF, pa.int32()), (GRP, pa.int64()), (SRC, pa.int32()), (IN, pa.int64())])


class PairTable:
    """Pair rows in Parquet files, searchable by ``key`` (``out_rid`` or ``in_rid``);
    ``columns`` are the ones read (an RDD capture's side files: handle and slots).

    Lookups are correct whatever the row order (statistics bound every row group);
    sorted files make them cheap. ``bound`` names a second column whose statistics
    narrow the row groups a lookup reads further (``lookup(keys, within=...)``): files
    sorted by it and then by ``key`` keep each value's rows in a few row groups even
    where the ``key`` values of different ones interleave. Rows are not filtered by it
    (a caller passes ``within`` that every row it wants satisfies), and a file without
    that column is read by ``key`` alone.
    """

    def __init__(
        self, files: list[str], key: str, columns: tuple[str, ...] = (OUT, IN), bound: str | None = None
    ) -> None:
        self.key = key
        self.columns = list(columns)
        self._files = {f: pq.ParquetFile(f) for f in files}
        first = next(iter(self._files.values()), None)
        self._empty = (
            pa.schema([first.schema_arrow.field(c) for c in self.columns])
            if first is not None
            else pa.schema([(c, pa.int64()) for c in self.columns])
        ).empty_table()
        ranges: list[tuple[int, int, int, int]] = []
        where = []
        for f, pf in self._files.items():
            meta = pf.metadata
            names = meta.schema.names
            column = names.index(key)
            other = names.index(bound) if bound in names else None
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                if group.num_rows == 0:
                    continue
                lo, hi = _range(group.column(column).statistics)
                blo, bhi = _range(group.column(other).statistics if other is not None else None)
                ranges.append((lo, hi, blo, bhi))
                where.append((f, g, group.num_rows))
        table = np.array(ranges, dtype=np.int64).reshape(-1, 4)
        order = np.argsort(table[:, 0], kind="stable")
        self._lo, self._hi, self._bound_lo, self._bound_hi = (table[order, i] for i in range(4))
        self._where = [where[i] for i in order]
        self.rows = sum(n for _, _, n in where)

    def groups_for(self, keys: np.ndarray, within: np.ndarray | None = None) -> list[int]:
        """Row groups that may hold one of ``keys`` (sorted, distinct), and whose ``bound``
        column may hold one of ``within`` (sorted, distinct) when given."""
        if not len(keys) or not len(self._lo):
            return []
        found = _intersecting(keys, self._lo, self._hi)
        if within is not None:
            found &= _intersecting(within, self._bound_lo, self._bound_hi)
        return np.nonzero(found)[0].tolist()

    def rows_to_read(self, keys: np.ndarray, within: np.ndarray | None = None) -> int:
        return sum(self._where[i][2] for i in self.groups_for(keys, within))

    def lookup(self, keys: np.ndarray, within: np.ndarray | None = None) -> pa.Table:
        """The pair rows whose ``key`` is one of ``keys`` (sorted, distinct int64), read
        from the row groups :meth:`groups_for` names (one read per file)."""
        per_file: dict[str, list[int]] = {}
        for i in self.groups_for(keys, within):
            f, g, _ = self._where[i]
            per_file.setdefault(f, []).append(g)
        if not per_file:
            return self._empty
        wanted = pa.array(keys, pa.int64())
        parts = [self._files[f].read_row_groups(sorted(gs), columns=self.columns) for f, gs in per_file.items()]
        table = pa.concat_tables(parts)
        return table.filter(pc.is_in(table[self.key], value_set=wanted))

    def read_all(self) -> pa.Table:
        parts = [pf.read(columns=self.columns) for pf in self._files.values()]
        return pa.concat_tables(parts) if parts else self._empty


def _range(stats) -> tuple[int, int]:
    # a row group's [min, max] of a column; unbounded where the file keeps no statistics
    if stats is None or not stats.has_min_max:
        return np.iinfo(np.int64).min, np.iinfo(np.int64).max
    return stats.min, stats.max


def _intersecting(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    # per range [lo, hi]: whether one of ``keys`` (sorted) lies in it
    first = np.searchsorted(keys, lo, side="left")
    inside = first < len(keys)
    inside[inside] = keys[first[inside]] <= hi[inside]
    return inside


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


def rid_array(rids) -> np.ndarray:
    """Sorted, distinct int64 rids from any iterable of ints or an Arrow/NumPy array.

    >>> rid_array([3, 1, 3]).tolist()
    [1, 3]
    """
    if isinstance(rids, (pa.Array, pa.ChunkedArray)):
        rids = rids.to_numpy()
    return distinct_sorted(np.asarray(list(rids) if not isinstance(rids, np.ndarray) else rids, dtype=np.int64))


def sql_literal(text: str) -> str:
    """``text`` as a DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


def files_sql(paths: list[str]) -> str:
    """A DuckDB list literal of file paths, for ``read_parquet`` (an object store's
    files as ``s3://`` URIs, which DuckDB then reads through pyarrow).

    >>> files_sql(["/a/x.parquet", "/b/it's.parquet"])
    "['/a/x.parquet', '/b/it''s.parquet']"
    """
    remote = [p for p in paths if fs.is_remote(p)]
    if remote:
        reach_object_store(remote[0])
    return "[" + ", ".join(sql_literal(fs.uri(p)) for p in paths) + "]"


def read_table(files: list[str] | str, **options) -> pa.Table:
    """``pq.read_table`` of a file, a directory or a list of files, wherever they are
    (pyarrow resolves one URI itself, not a list of them)."""
    first = files if isinstance(files, str) else (files[0] if files else "")
    if not fs.is_remote(first):
        return pq.read_table(files, **options)
    filesystem = fs.arrow(first)[0]
    where = fs.arrow(files)[1] if isinstance(files, str) else [fs.arrow(f)[1] for f in files]
    return pq.read_table(where, filesystem=filesystem, **options)


def write_local_shared(folder: Path, tables: list[pa.Table] | pa.Table) -> None:
    """Write a capture's shared lineage into the new folder ``folder`` from this process:
    rows ``(ref, grp, src, in_rid)`` (``SHARED_ARROW``), made distinct as Spark's
    writes of it are, in one file."""
    parts = [tables] if isinstance(tables, pa.Table) else tables
    table = pa.concat_tables([SHARED_ARROW.empty_table(), *(t.cast(SHARED_ARROW) for t in parts)])
    table = table.group_by([REF, GRP, SRC, IN]).aggregate([])
    folder.mkdir(parents=True)
    pq.write_table(table, folder / "part-0.parquet")


def write_local_pairs(folder: Path, by_source: dict, distinct: bool) -> None:
    """Write a pair table into the new folder ``folder`` from this process:
    ``by_source`` holds, per source number, pyarrow tables of ``(out_rid, in_rid)``;
    laid out as Spark writes one (a folder per source, sorted by output rid, small row
    groups)."""
    folder.mkdir(parents=True)
    for src, found in by_source.items():
        pairs = ordered_pairs(pa.concat_tables(found), distinct)
        (folder / f"{SRC}={src}").mkdir()
        pq.write_table(
            pairs,
            folder / f"{SRC}={src}" / "part-0.parquet",
            row_group_size=PAIR_ROW_GROUP,
            use_dictionary=False,
            column_encoding={OUT: "DELTA_BINARY_PACKED", IN: "DELTA_BINARY_PACKED"},
        )
