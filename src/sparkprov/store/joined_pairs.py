"""A pair table made by joins in DuckDB, in this process, from an output's slots
through side relations stored as files: each slot resolved through the sides it
names, parents before children, down to source rids. For side structures whose slots
each name one source row or an array of them (an injected aggregate's rids), one group
of a side or an array of them, or one range of a window's side
(``capture/writing.joins_resolve``). A shared side's sets (a window's over whole
partitions) are not resolved into the pairs: an output row refers to its set, and the
lineage of each set referred to (by the output, or by the sets of another shared side)
is kept once, beside the pairs, as ``capture/lineage.shared_pairs`` keeps it.

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

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa

from .catalog import publish_written
from .duck import connection, quote
from .files import parquet_files
from .format import ARRAY_SLOTS, GRP, HANDLE, IN, OUT, POS, REF, RID, ROW_SLOTS, SRC, parents_first, ref_source
from .pair_order import ordered_pairs
from .parquet import SHARED_ARROW, files_sql, write_local_pairs, write_local_shared
from .window_ranges import WEIGHED_MAX_POSITIONS, RangeSizes, flatten, row_weight

# Whether a window side's merged ranges are flattened here: (side, their sizes) -> bool;
# a capture declines where it keeps them as blocks
Accept = Callable[[int, RangeSizes], bool]


@dataclass(frozen=True)
class Resolved:
    """What ``resolved`` makes: per source number, the distinct ``(out_rid, in_rid)``
    pairs, sorted (references to a shared side's sets under its pseudo-source number);
    and the shared sides' lineage, rows ``(ref, grp, src, in_rid)`` for the sets the
    output refers to (directly or through other sets), repeats not yet removed, or None
    where no side is shared."""

    pairs: dict[int, pa.Table]
    shared: pa.Table | None


def pairs_by_source(output_path: str, structure: dict, accept: Accept | None = None) -> dict[int, pa.Table] | None:
    """Per source number, the distinct ``(out_rid, in_rid)`` pairs of the output rows in
    ``output_path`` through the sides of ``structure``, sorted; None
    when ``accept`` declines a window side's ranges (nothing is flattened then)."""
    found = resolved(output_path, structure, accept)
    return None if found is None else found.pairs


def resolved(
    output_path: str, structure: dict, accept: Accept | None = None, keep_shared: bool = True
) -> Resolved | None:
    """The pairs of the output rows in ``output_path`` through the sides of
    ``structure``, and the lineage of the shared sides they refer to (a side marked
    ``"shared"``: its rows' handles are set ids, each set's lineage kept once, as
    ``capture/lineage.shared_pairs`` keeps it; without ``keep_shared``, resolved into
    the pairs as other sides are); None when ``accept`` declines a window side's
    ranges (nothing is flattened then)."""
    sides = structure["sides"]
    if not keep_shared:
        sides = {k: {**side, "shared": False} for k, side in sides.items()}
    with connection() as con:
        # Spark writes a timestamp as INT96 (read as TIMESTAMP) and Arrow as one with a
        # zone (TIMESTAMP WITH TIME ZONE): both UTC instants, which DuckDB compares in
        # its session's zone (the machine's): in UTC, the same instant is equal
        con.execute("SET SESSION TimeZone = 'UTC'")
        files = parquet_files(output_path)
        if not files:
            return Resolved({}, SHARED_ARROW.empty_table() if _any_shared(sides) else None)
        columns = ", ".join(quote(c) for c in [RID, *(s["name"] for s in structure["output"])])
        con.execute(f"CREATE TEMP TABLE rows_0 AS SELECT {columns} FROM read_parquet({files_sql(files)})")
        tables = itertools.count(1)
        found: dict[int, list[str]] = {}
        if not _resolve(con, "rows_0", RID, structure["output"], sides, found, tables, accept):
            return None
        shared = _shared_lineage(con, sides, found, tables, accept)
        if shared is False:
            return None
        pairs = {src: ordered_pairs(con.execute(" UNION ALL ".join(parts)).fetch_arrow_table(), distinct=True)
                 for src, parts in found.items()}  # fmt: skip
        return Resolved(pairs, shared)


def _any_shared(sides: dict) -> bool:
    return any(side.get("shared") for side in sides.values())


def _shared_lineage(con, sides: dict, found: dict, tables, accept: Accept | None) -> pa.Table | None | bool:
    """The lineage of the shared sides' sets that ``found``'s references name, each
    side's sets resolved once and only those referred to: a side after every shared
    side whose sets may refer to it. None where no side is shared; False when
    ``accept`` declines a window side's ranges."""
    if not _any_shared(sides):
        return None
    shared = [int(k) for k, side in sides.items() if side.get("shared")]
    wanted = {k: list(found.get(ref_source(k), [])) for k in shared}
    rows: list[str] = []
    for k in parents_first(shared, lambda k: _shared_below(sides, k)):
        side_files = parquet_files(sides[str(k)]["path"])
        if not wanted[k] or not side_files:
            continue
        slots = sides[str(k)]["slots"]
        kept = ", ".join(f"s.{quote(s['name'])}" for s in slots)
        n = next(tables)
        refs = " UNION ALL ".join(wanted[k])
        con.execute(
            f"CREATE TEMP TABLE rows_{n} AS SELECT CAST(s.{HANDLE} AS BIGINT) AS {OUT}, {kept} "
            f"FROM read_parquet({files_sql(side_files)}) s "
            f"WHERE CAST(s.{HANDLE} AS BIGINT) IN (SELECT {IN} FROM ({refs}))"
        )
        own: dict[int, list[str]] = {}
        if not _resolve(con, f"rows_{n}", OUT, slots, sides, own, tables, accept):
            return False
        for src, parts in own.items():
            if src < 0:  # sets of another shared side
                wanted[-src - 1].extend(parts)
            rows.extend(f"SELECT {k} AS {REF}, {OUT} AS {GRP}, {src} AS {SRC}, {IN} FROM ({q})" for q in parts)
    if not rows:
        return SHARED_ARROW.empty_table()
    # (made distinct and typed as the store keeps it when written: write_local_shared)
    return con.execute(" UNION ALL ".join(rows)).fetch_arrow_table()


def _shared_below(sides: dict, k: int) -> list[int]:
    """The shared sides whose sets side ``k``'s rows may refer to, directly or through
    sides that are not shared."""
    below, todo, seen = [], [k], set()
    while todo:
        for s in sides[str(todo.pop())]["slots"]:
            ref = int(s["ref"])
            if s["kind"] in ROW_SLOTS or ref in seen:
                continue
            seen.add(ref)
            (below if sides[str(ref)].get("shared") else todo).append(ref)
    return below


def _resolve(con, table: str, out: str, slots: list[dict], sides: dict, found: dict, tables, accept) -> bool:
    """The rows of ``table`` (their id in column ``out``) resolved through ``slots``:
    per source number, queries of ``(out_rid, in_rid)`` added to ``found`` (a shared
    side's references under its pseudo-source number, not resolved); False when
    ``accept`` declines a window side's ranges. Tables ``rows_{n}`` are numbered by
    ``tables``."""
    probes: dict[int, list[str]] = {}  # side -> queries of (out, h)
    _reach(con, table, out, slots, sides, found, probes)

    def below(k: int) -> list[int]:  # shared sides are not probed: referred to
        return [
            int(s["ref"])
            for s in sides[str(k)]["slots"]
            if s["kind"] not in ROW_SLOTS and not sides[str(s["ref"])].get("shared")
        ]

    for k in parents_first(list(probes), below):
        parts, side_files = probes.pop(k, []), parquet_files(sides[str(k)]["path"])
        if not parts or not side_files:
            continue
        n = next(tables)
        side = f"read_parquet({files_sql(side_files)})"
        kept = ", ".join(f"s.{quote(s['name'])}" for s in sides[str(k)]["slots"])
        if sides[str(k)]["ranged"]:
            # (the merge groups the ranges: no distinct of the frontier first)
            slots = sides[str(k)]["slots"]
            frontier = " UNION ALL ".join(parts)
            taken = flatten(con, n, frontier, side, slots, _same, accept and partial(accept, k))
            if taken is False:
                return False
            if taken:
                _reach(con, f"rows_{n}", OUT, slots, sides, found, probes)
                continue
            # positions not 1..n in each partition: each position joined to the side
            if not _flattened(con, n, frontier, k, side, slots, accept):
                return False
            on = _same("f.k", f"s.{HANDLE}", f"f.pos = s.{POS}")
            joined = f"SELECT f.{OUT}, {kept} FROM ({_positions(n)}) f JOIN {side} s ON {on}"
        else:
            frontier = " UNION ".join(parts)  # distinct (out, h): paths that repeat a group meet it once
            joined = f"SELECT f.{OUT}, {kept} FROM ({frontier}) f JOIN {side} s ON {_same('f.h', f's.{HANDLE}')}"
        con.execute(f"CREATE TEMP TABLE rows_{n} AS {joined}")
        _reach(con, f"rows_{n}", OUT, sides[str(k)]["slots"], sides, found, probes)
    return True


def publish(
    path: Path,
    output_path: str,
    structure: dict,
    accept: Accept | None = None,
    shared_path: Path | None = None,
    check: Callable[[], None] | None = None,
) -> bool:
    """The pair table of the output in ``output_path`` through ``structure``'s sides
    (``resolved``), written to ``path`` whole (renamed into place), after the shared
    sides' lineage, if any, to ``shared_path`` (``check()`` first: it raises if that
    lineage may not be stored); False, with nothing written, when ``accept`` declines
    a window side's ranges. Without ``shared_path``, shared sides are resolved into the
    pairs."""
    found = resolved(output_path, structure, accept, keep_shared=shared_path is not None)
    if found is None:
        return False
    if found.shared is not None:
        if check is not None:
            check()
        publish_written(shared_path, lambda tmp: write_local_shared(tmp, found.shared))
    pairs = {s: [t] for s, t in found.pairs.items()}
    publish_written(path, lambda tmp: write_local_pairs(tmp, pairs, distinct=False))
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


def _reach(con, table: str, out: str, slots: list[dict], sides: dict, found: dict, probes: dict) -> None:
    # a source slot gives pairs; a slot of a shared side, references to its sets (pairs
    # under its pseudo-source number); a group or window slot, the handles or ranges its
    # side is then probed with; an array slot ("rids", "groups"), one of those per
    # element (an empty array: none)
    for s in slots:
        column = quote(s["name"])
        value = f"unnest({column})" if s["kind"] in ARRAY_SLOTS else column
        if s["kind"] in ROW_SLOTS:
            pairs = f"SELECT {out} AS {OUT}, {value} AS {IN} FROM {table} WHERE {column} IS NOT NULL"
            found.setdefault(int(s["ref"]), []).append(pairs)
        elif sides[str(s["ref"])].get("shared"):
            held = f"SELECT {out} AS {OUT}, {value} AS v FROM {table} WHERE {column} IS NOT NULL"
            refs = f"SELECT {OUT}, CAST(v AS BIGINT) AS {IN} FROM ({held}) WHERE v IS NOT NULL"
            found.setdefault(ref_source(int(s["ref"])), []).append(refs)
        else:
            reach = f"SELECT {out} AS {OUT}, {value} AS h FROM {table} WHERE {column} IS NOT NULL"
            probes.setdefault(int(s["ref"]), []).append(reach)
