"""A pair table made by joins in DuckDB, in this process, from an output's slots
through side relations stored as files: each slot resolved through the sides it
names, parents before children, down to source rids. For side structures whose slots
each name one source row or an array of them (an injected aggregate's rids), one group
of a side or an array of them, or one range of a window's side
(``capture/writing.joins_resolve``).

The joins are those of a capture's own resolution with Spark (``capture/lineage``): a
group slot meets its side's rows on the handle, NULL-safe, from the distinct (output
row, handle) pairs that reach the side, so an output row that reaches one group along
many paths reads it once; a window slot ``(h, lo, hi)`` names the rows of partition
``h`` at positions ``lo..hi``, an output row's ranges in one partition made disjoint,
then its rows met by index from the side's rows ordered by (partition, position)
(``store/window_ranges``; where positions are not 1..n in a partition, each position
joined on (partition, position)): work in proportion to the pairs.
DuckDB compares and groups ``-0.0`` with ``0.0`` and NaN with NaN, as Spark's joins
and partitions do.

>>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> out = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"_sp_rid": [0, 1], "s": [7, None]}), f"{out}/part-0.parquet")
>>> found = pairs_by_source(out, {"output": [{"name": "s", "kind": "source", "ref": 0}], "sides": {}})
>>> found[0].to_pylist()
[{'out_rid': 0, 'in_rid': 7}]
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyarrow as pa

from .catalog import publish_written
from .duck import connection, quote
from .files import parquet_files
from .format import ARRAY_SLOTS, HANDLE, IN, OUT, POS, RID, ROW_SLOTS, parents_first
from .pair_order import ordered_pairs
from .parquet import files_sql, write_local_pairs
from .window_ranges import WEIGHED_MAX_POSITIONS, RangeSizes, flatten, row_weight

# Whether a window side's merged ranges are flattened here: (side, their sizes) -> bool;
# a capture declines where it keeps them as blocks
Accept = Callable[[int, RangeSizes], bool]


def pairs_by_source(output_path: str, structure: dict, accept: Accept | None = None) -> dict[int, pa.Table] | None:
    """Per source number, the distinct ``(out_rid, in_rid)`` pairs of the output rows in
    ``output_path`` through the sides of ``structure``, sorted; None
    when ``accept`` declines a window side's ranges (nothing is flattened then)."""
    sides = structure["sides"]
    found: dict[int, list[str]] = {}
    with connection() as con:
        # Spark writes a timestamp as INT96 (read as TIMESTAMP) and Arrow as one with a
        # zone (TIMESTAMP WITH TIME ZONE): both UTC instants, which DuckDB compares in
        # its session's zone (the machine's): in UTC, the same instant is equal
        con.execute("SET SESSION TimeZone = 'UTC'")
        files = parquet_files(output_path)
        if not files:
            return {}
        columns = ", ".join(quote(c) for c in [RID, *(s["name"] for s in structure["output"])])
        con.execute(f"CREATE TEMP TABLE rows_0 AS SELECT {columns} FROM read_parquet({files_sql(files)})")
        probes: dict[int, list[str]] = {}  # side -> queries of (out, h)
        _reach(con, "rows_0", RID, structure["output"], found, probes)

        def below(k: int) -> list[int]:
            return [int(s["ref"]) for s in sides[str(k)]["slots"] if s["kind"] not in ROW_SLOTS]

        for n, k in enumerate(parents_first(list(probes), below), 1):
            parts, side_files = probes.pop(k, []), parquet_files(sides[str(k)]["path"])
            if not parts or not side_files:
                continue
            side = f"read_parquet({files_sql(side_files)})"
            kept = ", ".join(f"s.{quote(s['name'])}" for s in sides[str(k)]["slots"])
            if sides[str(k)]["ranged"]:
                # (the merge groups the ranges: no distinct of the frontier first)
                slots = sides[str(k)]["slots"]
                frontier = " UNION ALL ".join(parts)
                taken = flatten(con, n, frontier, side, slots, _same, accept and partial(accept, k))
                if taken is False:
                    return None
                if taken:
                    _reach(con, f"rows_{n}", OUT, slots, found, probes)
                    continue
                # positions not 1..n in each partition: each position joined to the side
                if not _flattened(con, n, frontier, k, side, slots, accept):
                    return None
                on = _same("f.k", f"s.{HANDLE}", f"f.pos = s.{POS}")
                joined = f"SELECT f.{OUT}, {kept} FROM ({_positions(n)}) f JOIN {side} s ON {on}"
            else:
                frontier = " UNION ".join(parts)  # distinct (out, h): paths that repeat a group meet it once
                joined = f"SELECT f.{OUT}, {kept} FROM ({frontier}) f JOIN {side} s ON {_same('f.h', f's.{HANDLE}')}"
            con.execute(f"CREATE TEMP TABLE rows_{n} AS {joined}")
            _reach(con, f"rows_{n}", OUT, sides[str(k)]["slots"], found, probes)
        return {
            src: ordered_pairs(con.execute(" UNION ALL ".join(parts)).fetch_arrow_table(), distinct=True)
            for src, parts in found.items()
        }


def publish(path: Path, output_path: str, structure: dict, accept: Accept | None = None) -> bool:
    """The pair table of the output in ``output_path`` through ``structure``'s sides
    (``pairs_by_source``), written to ``path`` whole (renamed into place); False,
    with nothing written, when ``accept`` declines a window side's ranges."""
    found = pairs_by_source(output_path, structure, accept)
    if found is None:
        return False
    publish_written(path, lambda tmp: write_local_pairs(tmp, {s: [t] for s, t in found.items()}, distinct=False))
    return True


def _flattened(con, n: int, frontier: str, k: int, side: str, slots: list[dict], accept: Accept | None) -> bool:
    """Side ``k``'s ranges reached by ``frontier`` as table ``ranges_{n}`` (out, k, lo,
    hi), an output row's ranges in one partition made disjoint: stacked windows reach a
    lower window's side through every row of an upper frame, each with a range of its
    own (the running totals of a month's rows, all from position 1), which flattened as
    they are repeat most pairs (the pipelines suite's running totals at 1M orders:
    19.3M positions for 9.7M). Those from one position are grouped to the longest, then
    each is cut to what the ranges before it (by first position) leave uncovered;
    whether ``accept`` takes them."""
    con.execute(
        f"CREATE TEMP TABLE ranges_{n} AS "
        f"WITH g AS (SELECT {OUT}, h.h AS k, h.lo AS lo, max(h.hi) AS hi FROM ({frontier}) "
        f"WHERE h.lo <= h.hi GROUP BY {OUT}, h.h, h.lo), "
        f"w AS (SELECT *, max(hi) OVER (PARTITION BY {OUT}, k ORDER BY lo "
        f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM g) "
        f"SELECT {OUT}, k, greatest(lo, coalesce(reach + 1, lo)) AS lo, hi FROM w WHERE reach IS NULL OR hi > reach"
    )
    if accept is None:
        return True
    total, ranges = con.execute(f"SELECT coalesce(sum(hi - lo + 1), 0), count(*) FROM ranges_{n}").fetchone()
    (rows,) = con.execute(f"SELECT count(*) FROM {side}").fetchone()
    sizes = RangeSizes.unweighed(int(total), int(ranges), int(rows))
    weight = row_weight(slots)
    if weight is not None and total <= WEIGHED_MAX_POSITIONS:
        on = _same("f.k", f"s.{HANDLE}", f"f.pos = s.{POS}")
        pairs, side_pairs = con.execute(
            f"SELECT (SELECT coalesce(sum({weight}), 0) FROM ({_positions(n)}) f JOIN {side} s ON {on}), "
            f"(SELECT coalesce(sum({weight}), 0) FROM {side} s)"
        ).fetchone()
        sizes = RangeSizes(sizes.positions, sizes.ranges, sizes.rows, int(pairs), int(side_pairs))
    return accept(k, sizes)


def _positions(n: int) -> str:
    """Rows ``(out, k, pos)``: each position of table ``ranges_{n}``'s ranges."""
    return (
        f"SELECT {OUT}, k, lo AS pos FROM ranges_{n} WHERE lo = hi UNION ALL "
        f"SELECT {OUT}, k, unnest(range(lo, hi + 1)) AS pos FROM ranges_{n} WHERE lo < hi"
    )


def _same(a: str, b: str, *more: str) -> str:
    """A join's condition: handles ``a`` and ``b`` equal, NULL-safe (and ``more``).
    DuckDB hashes and compares a struct key slowly (a window's partition: 2.4M
    positions joined in 6.5 s): the join is on the handles' hashes, the handles
    compared only where those meet."""
    return " AND ".join([f"hash({a}) = hash({b})", *more, f"{a} IS NOT DISTINCT FROM {b}"])


def _reach(con, table: str, out: str, slots: list[dict], found: dict, probes: dict) -> None:
    # a source slot gives pairs; a group or window slot, the handles or ranges its side
    # is then probed with; an array slot ("rids", "groups"), one of those per element
    # (an empty array: none)
    for s in slots:
        column = quote(s["name"])
        value = f"unnest({column})" if s["kind"] in ARRAY_SLOTS else column
        if s["kind"] in ROW_SLOTS:
            pairs = f"SELECT {out} AS {OUT}, {value} AS {IN} FROM {table} WHERE {column} IS NOT NULL"
            found.setdefault(int(s["ref"]), []).append(pairs)
        else:
            reach = f"SELECT {out} AS {OUT}, {value} AS h FROM {table} WHERE {column} IS NOT NULL"
            probes.setdefault(int(s["ref"]), []).append(reach)
