"""A provenance graph shaped like the IBM paper's text-curation workflow (section V):
25 tables in a dependency graph whose longest path is 10, every row of a derived table
made from rows of its parent tables (fan-in mostly under 10, some between 10 and 100,
a few up to 450), rows grouped so that the graph has three large components (three quarters of
the nodes), 132 medium
ones and many small ones. Written as triples (``src_dataset, src_rid, dst_dataset,
dst_rid, op``) in Parquet files, for ``sparkprov graph import``; larger graphs are the
base graph replicated (each copy's rids shifted), as the paper scales its trace.

>>> tables = workflow_tables()
>>> len(tables), max(t.depth for t in tables)
(25, 10)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TABLES = 25
LONGEST = 10
LARGE, MEDIUM = 3, 132


@dataclass(frozen=True)
class Table:
    name: str
    depth: int
    parents: tuple[int, ...]


def workflow_tables(seed: int = 0) -> list[Table]:
    """The workflow's tables: a chain of 11 levels (the longest path), the other 14
    tables hung on it, each fed by one or two tables of lower levels."""
    rnd = np.random.default_rng(seed)
    tables = [Table(f"t{d:02d}", d, (d - 1,) if d else ()) for d in range(LONGEST + 1)]
    for i in range(LONGEST + 1, TABLES):
        depth = int(rnd.integers(1, LONGEST + 1))
        below = [j for j, t in enumerate(tables) if t.depth < depth]
        # one parent a level below (so the table is at that depth), sometimes one more
        level_below = [j for j in below if tables[j].depth == depth - 1]
        parents = {int(rnd.choice(level_below))}
        if rnd.random() < 0.4:
            parents.add(int(rnd.choice(below)))
        parents = tuple(sorted(parents))
        tables.append(Table(f"t{i:02d}", depth, parents))
    return tables


def _fan_in(rnd: np.random.Generator, n: int) -> np.ndarray:
    # mostly under 10, 3% between 10 and 100, one in a thousand up to 450
    k = rnd.integers(1, 10, n)
    some = rnd.random(n)
    k[some < 0.03] = rnd.integers(10, 100, int((some < 0.03).sum()))
    k[some < 0.001] = rnd.integers(100, 451, int((some < 0.001).sum()))
    return k


def _groups(rnd: np.random.Generator, rows: int) -> np.ndarray:
    """Group boundaries over ``rows`` row positions: three large groups (a quarter of the
    rows each, as the paper's three components of about a million nodes), 132 medium
    ones (15% of the rows together), the rest small (10 to 200 rows)."""
    large = rows // 4
    medium = max(1, rows * 15 // 100 // MEDIUM)
    sizes = [large] * LARGE + [medium] * MEDIUM
    rest = rows - sum(sizes)
    while rest > 0:
        size = int(min(rest, rnd.integers(10, 200)))
        sizes.append(size)
        rest -= size
    order = rnd.permutation(len(sizes))
    return np.concatenate([[0], np.cumsum(np.asarray(sizes)[order])])


def generate(out: Path, rows_per_table: int, copies: int = 1, seed: int = 0) -> dict:
    """Write the base graph (``rows_per_table`` rows in each table) ``copies`` times
    under ``out`` (one file per copy and table); returns its shape."""
    rnd = np.random.default_rng(seed)
    tables = workflow_tables(seed)
    bounds = _groups(rnd, rows_per_table)
    group_of = np.searchsorted(bounds, np.arange(rows_per_table), side="right") - 1
    out.mkdir(parents=True, exist_ok=True)
    edges = 0
    parts = []
    for t in tables:
        if not t.parents:
            continue
        dst = np.arange(rows_per_table, dtype=np.int64)
        k = _fan_in(rnd, rows_per_table)
        dst = np.repeat(dst, k)
        # each parent row from the same group of the parent table
        g = group_of[dst]
        lo, hi = bounds[g], bounds[g + 1]
        src = lo + (rnd.random(len(dst)) * (hi - lo)).astype(np.int64)
        parent = np.asarray(t.parents)[rnd.integers(0, len(t.parents), len(dst))]
        parts.append((t, src, dst, parent))
        edges += len(dst)
    names = np.asarray([t.name for t in tables])
    for copy in range(copies):
        shift = np.int64(copy) * rows_per_table
        for t, src, dst, parent in parts:
            table = pa.table({
                "src_dataset": pa.array(names[parent]),
                "src_rid": pa.array(src + shift),
                "dst_dataset": pa.array(np.full(len(dst), t.name)),
                "dst_rid": pa.array(dst + shift),
                "op": pa.array(np.full(len(dst), f"make_{t.name}")),
            })  # fmt: skip
            pq.write_table(table, out / f"copy{copy:03d}-{t.name}.parquet")
    return {"tables": len(tables), "rows_per_table": rows_per_table, "copies": copies, "edges": edges * copies,
            "longest_path": max(t.depth for t in tables)}  # fmt: skip


def one_capture(out: Path, rows_per_table: int, copies: int, pairs: int, seed: int = 0) -> dict:
    """The triples of one more capture over the graph ``generate`` wrote: a new table
    (``capture``) whose rows are each made from rows of one group of table ``t05``
    (fan-in as the workflow's), ``pairs`` triples in all, written as one file under
    ``out``; most of its source rows are in the graph already, and a row's sources lie
    in one component, as a filter or an aggregate by a key of the workflow keeps them."""
    rnd = np.random.default_rng(seed + 1)
    bounds = _groups(np.random.default_rng(seed), rows_per_table)  # the groups ``generate`` drew first
    k = _fan_in(rnd, pairs)
    k = k[: int(np.searchsorted(np.cumsum(k), pairs)) + 1]
    k[-1] -= int(k.sum()) - pairs
    dst = np.repeat(np.arange(len(k), dtype=np.int64), k)
    # each new row's sources from one group of one copy of t05
    row = rnd.integers(0, rows_per_table * copies, len(k))
    copy, at = row // rows_per_table, row % rows_per_table
    g = np.searchsorted(bounds, at, side="right") - 1
    lo, hi = (bounds[g] + copy * rows_per_table)[dst], (bounds[g + 1] + copy * rows_per_table)[dst]
    src = lo + (rnd.random(len(dst)) * (hi - lo)).astype(np.int64)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({
            "src_dataset": pa.array(np.full(len(dst), "t05")),
            "src_rid": pa.array(src),
            "dst_dataset": pa.array(np.full(len(dst), "capture")),
            "dst_rid": pa.array(dst),
            "op": pa.array(np.full(len(dst), "make_capture")),
        }),
        out / "capture.parquet",
    )  # fmt: skip
    return {"pairs": len(dst), "rows": len(k)}
