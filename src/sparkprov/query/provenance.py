"""Why and how provenance of output rows, read from the witness structure a capture keeps.

``session.capture(df, name, witnesses=True)`` stores, beside the end-to-end pairs,
every side relation the output's slots lead to (``capture/run.py``): a grouping
operator's ``(handle, slots of its input rows)``, a window's rows by position, a
semi join's matches, a scalar subquery's result row. Reading them down from an
output row's slots gives its derivation.

A row's **how-provenance** is a provenance polynomial (Green et al.; groups as in
Lipstick, section 2.3): source rows are variables ``source#rid``, joint use (a join,
a row and its window frame) is ``·``, alternatives (a semi join's matches) are ``+``,
and a group (aggregate, DISTINCT, window frame, a Python function's group or
partition) is ``δ(p1 + ... + pn)``, δ marking duplicate elimination. A NULL-padded
side of an outer join, or a union branch a row did not come from, is absent (1).
Shared parts are shared objects: the polynomial is a graph, never expanded.

Its **why-provenance** is the set of witnesses: sets of source rows that together
derive the row, read from the polynomial. A product needs one witness of each
factor, a sum any one term. A group that only removes duplicates (DISTINCT,
``GROUP BY`` without aggregate functions) is derived by any one of its rows; a group
whose values are computed from its rows (aggregate functions, window frames,
Python functions over groups) needs all of them, since the row's values depend on
each. The union of a row's witnesses is its lineage (``backward``).

>>> x, y, z = Var("t", 1), Var("t", 2), Var("u", 7)
>>> p = Product((z, Group((x, y), values=True)))
>>> str(p)
'u#7 · δ(t#1 + t#2)'
>>> sorted(sorted(w) for w in p.witnesses())
[[('t', 1), ('t', 2), ('u', 7)]]
>>> sorted(sorted(w) for w in Product((z, Group((x, y), values=False))).witnesses())
[[('t', 1), ('u', 7)], [('t', 2), ('u', 7)]]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import LineageTooLarge, WitnessesNotKept
from ..store import fs, joined_pairs
from ..store.duck import connection
from ..store.entry import CaptureEntry
from ..store.files import parquet_files
from ..store.format import HANDLE, IN, OUT, POS, RID, parents_first, resolvable_by_joins
from ..store.parquet import files_sql, read_table, rid_array

WITNESS_LIMIT = 10_000  # witnesses one output row may have before why() refuses
SIDE_ROW_LIMIT = 2_000_000  # side rows one answer may read

Witness = frozenset  # of (source name, rid)


class Polynomial:
    """A provenance polynomial over source rows (a node of a shared graph)."""

    def witnesses(self, limit: int = WITNESS_LIMIT) -> set[Witness]:
        """The sets of ``(source, rid)`` that together derive this row (see the module)."""
        if not self._has_alternatives():  # joins and aggregates only: one witness, all of it
            return {Witness(self.variables())}
        return _witnesses(self, {}, limit)

    def _has_alternatives(self) -> bool:
        return any(
            len(p.parts) > 1 and (isinstance(p, Sum) or (isinstance(p, Group) and not p.values)) for p in self._nodes()
        )

    def variables(self) -> set[tuple[str, int]]:
        """Every ``(source, rid)`` the polynomial names: the row's lineage."""
        return {(p.source, p.rid) for p in self._nodes() if isinstance(p, Var)}

    def _nodes(self) -> Iterator[Polynomial]:
        # each shared node once: the graph is never expanded into a tree
        seen: set[int] = set()
        todo: list[Polynomial] = [self]
        while todo:
            p = todo.pop()
            if id(p) not in seen:
                seen.add(id(p))
                yield p
                todo.extend(p.parts)

    @property
    def parts(self) -> tuple[Polynomial, ...]:
        return ()


@dataclass(frozen=True, eq=False)
class Var(Polynomial):
    """Source row ``rid`` of ``source``."""

    source: str
    rid: int

    def __str__(self) -> str:
        return f"{self.source}#{self.rid}"


@dataclass(frozen=True, eq=False)
class Product(Polynomial):
    """Joint use: the row needs every factor. No factors is 1."""

    factors: tuple[Polynomial, ...]

    @property
    def parts(self) -> tuple[Polynomial, ...]:
        return self.factors

    def __str__(self) -> str:
        if not self.factors:
            return "1"
        return " · ".join(f"({f})" if isinstance(f, Sum) and len(f.terms) > 1 else str(f) for f in self.factors)


@dataclass(frozen=True, eq=False)
class Sum(Polynomial):
    """Alternatives: any one term derives the row."""

    terms: tuple[Polynomial, ...]

    @property
    def parts(self) -> tuple[Polynomial, ...]:
        return self.terms

    def __str__(self) -> str:
        return " + ".join(str(t) for t in self.terms) if self.terms else "0"


@dataclass(frozen=True, eq=False)
class Group(Polynomial):
    """``δ(t1 + ... + tn)``: one row for a group of rows. With ``values``, the row's
    values are computed from every row of the group (an aggregate, a window frame)."""

    terms: tuple[Polynomial, ...]
    values: bool

    @property
    def parts(self) -> tuple[Polynomial, ...]:
        return self.terms

    def __str__(self) -> str:
        return "δ(" + " + ".join(str(t) for t in self.terms) + ")"


ONE = Product(())


def _witnesses(p: Polynomial, memo: dict[int, set[Witness]], limit: int) -> set[Witness]:
    found = memo.get(id(p))
    if found is not None:
        return found
    if isinstance(p, Var):
        found = {Witness([(p.source, p.rid)])}
    elif isinstance(p, Sum) or (isinstance(p, Group) and not p.values):
        found = set()
        for t in p.parts:
            found |= _witnesses(t, memo, limit)
            _check_count(len(found), limit)
    else:  # a product, or a group whose values need all its rows: one witness of each part
        common: set = set()  # parts with one witness add to every witness: gathered once
        choices = [Witness()]
        for f in p.parts:
            if isinstance(f, Var):  # the common case, millions of times in a big group
                common.add((f.source, f.rid))
                continue
            options = _witnesses(f, memo, limit)
            if len(options) == 1:
                common |= next(iter(options))
            else:
                _check_count(len(choices) * len(options), limit)
                choices = [w | o for w in choices for o in options]
        found = {Witness(common.union(w)) for w in choices}
    memo[id(p)] = found
    return found


def _check_count(count: int, limit: int) -> None:
    if count > limit:
        raise LineageTooLarge(
            f"this row has more than {limit:,} witnesses; how() gives its derivation factorized, backward() its rows"
        )


# ---- reading the stored structure --------------------------------------------------


def polynomials(entry: CaptureEntry, rids, row_limit: int = SIDE_ROW_LIMIT) -> dict[int, Polynomial]:
    """``{output rid: polynomial}`` for the output rows ``rids`` of a capture (its catalog
    ``entry``; None: every row), read from the side relations it kept. Unknown rids are
    left out."""
    structure = entry.witnesses
    if not structure:
        raise WitnessesNotKept(
            f"capture {entry.name!r} v{entry.version} was made without witness structure; "
            f"capture it again with session.capture(df, {entry.name!r}, witnesses=True) for why() and how()"
        )
    names = {i: n for n, i in entry.lineage.sources.items()}
    sides = {int(k): side for k, side in structure["sides"].items()}
    out_slots = structure["output"]
    files = parquet_files(entry.output.path)
    columns = [RID, *(s["name"] for s in out_slots)]
    if rids is None:
        rows = read_table(files, columns=columns).to_pylist() if files else []
    else:
        rids = rid_array(rids)
        rows = read_table(files, columns=columns, filters=[(RID, "in", rids.tolist())]).to_pylist() if len(rids) else []

    wanted: dict[int, dict[Any, Any]] = defaultdict(dict)  # side -> frozen slot value -> value
    for row in rows:
        _want(out_slots, row, wanted)
    members: dict[tuple[int, Any], list[dict]] = {}
    read = 0
    start = [s["ref"] for s in out_slots if s["kind"] != "source"]
    for k in parents_first(start, lambda k: [s["ref"] for s in sides[k]["slots"] if s["kind"] != "source"]):
        values = wanted.pop(k, None)
        if not values:
            continue
        side = sides[k]
        table = _side_rows(side, list(values.values()))
        read += table.num_rows
        if read > row_limit:  # checked before the rows become Python objects
            raise LineageTooLarge(
                f"capture {entry.name!r}: the derivations of these rows read more than {row_limit:,} rows of "
                "its operators' groups; ask for fewer rows, or use backward() for their lineage"
            )
        found = table.to_pylist()
        for r in found:
            _want(side["slots"], r, wanted)
        members.update(_members(side, k, values, found))

    built: dict[tuple[int, Any], Polynomial] = {}

    def group(k: int, key: Any) -> Polynomial:
        node = built.get((k, key))
        if node is None:
            side = sides[k]
            terms = tuple(product(side["slots"], r) for r in members.get((k, key), []))
            if not terms:  # an existence join's row without matches, a global aggregate over nothing
                node = ONE
            elif side["combine"] == "matches":
                node = terms[0] if len(terms) == 1 else Sum(terms)
            else:
                node = Group(terms, values=side["combine"] == "values")
            built[(k, key)] = node
        return node

    variables: dict[tuple[str, int], Var] = {}

    def product(slots: list[dict], row: dict) -> Polynomial:
        factors = []
        for s in slots:
            value = row[s["name"]]
            if value is None:  # a NULL-padded side, another union branch: absent
                continue
            if s["kind"] == "source":
                key = (names[s["ref"]], value)
                factors.append(variables.setdefault(key, Var(*key)))
            elif s["kind"] == "groups":  # a declared function's input rows: used together
                factors.extend(group(s["ref"], _frozen(h)) for h in value)
            else:
                factors.append(group(s["ref"], _frozen(value)))
        factors = [f for f in factors if f is not ONE]
        return factors[0] if len(factors) == 1 else Product(tuple(factors))

    return {row[RID]: product(out_slots, row) for row in rows}


def _want(slots: list[dict], row: dict, wanted: dict[int, dict]) -> None:
    for s in slots:
        value = row[s["name"]]
        if s["kind"] == "groups" and value is not None:
            for h in value:
                wanted[s["ref"]][_frozen(h)] = h
        elif s["kind"] != "source" and value is not None:
            wanted[s["ref"]][_frozen(value)] = value


def _side_rows(side: dict, values: list) -> pa.Table:
    """The side's rows that the wanted slot ``values`` name (handles, or for a window
    ``{h, lo, hi}`` position ranges), matched by DuckDB (handles are structs: equal
    when every field is, NULLs included)."""
    files = parquet_files(side["path"])
    if not files:
        return pa.table({})
    handle_type = pq.read_schema(files[0]).field(HANDLE).type
    if side["ranged"]:
        want = pa.table(
            {
                "h": pa.array([v["h"] for v in values], handle_type),
                "lo": pa.array([v["lo"] for v in values], pa.int64()),
                "hi": pa.array([v["hi"] for v in values], pa.int64()),
            }
        )
        match = f"s.{HANDLE} IS NOT DISTINCT FROM w.h AND s.{POS} BETWEEN w.lo AND w.hi"
    else:
        want = pa.table({"h": pa.array(values, handle_type)})
        match = f"s.{HANDLE} IS NOT DISTINCT FROM w.h"
    with connection() as con:
        con.register("w", want)
        return con.execute(
            f"SELECT * FROM read_parquet({files_sql(files)}) s WHERE EXISTS (SELECT 1 FROM w WHERE {match})"
        ).arrow()


def _members(side: dict, k: int, values: dict[Any, Any], rows: list[dict]) -> dict[tuple[int, Any], list[dict]]:
    """Side rows per wanted slot value: those with its handle (and, for a window, at
    the positions of its range)."""
    by_handle: dict[Any, list[dict]] = defaultdict(list)
    # in an order of their own, not the files': a polynomial reads the same however the
    # side was written (by its own job, or gathered by the query's, plan/observed.py)
    for r in sorted(rows, key=_row_order):
        by_handle[_frozen(r[HANDLE])].append(r)
    if not side["ranged"]:
        return {(k, key): by_handle.get(key, []) for key in values}
    found = {}
    for key, v in values.items():
        group = by_handle.get(_frozen(v["h"]), [])
        found[(k, key)] = [r for r in group if v["lo"] <= r[POS] <= v["hi"]]
    return found


_NAN = ("__sp_nan",)


def _row_order(row: dict) -> tuple:
    return tuple(_value_order(v) for k, v in row.items() if k != HANDLE)


def _value_order(value: Any) -> tuple:
    if value is None:
        return (0, 0)
    if isinstance(value, (bool, int, float)) and value == value:
        return (1, value)
    return (2, repr(_frozen(value)))


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a slot value as Arrow gives it (structs are dicts); NaN
    keys are equal, as Spark groups them."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, float) and value != value:
        return _NAN
    return value


PAIRS_CHUNK = 50_000  # output rows whose polynomials are read at once to make a pair table


def write_pairs(entry: CaptureEntry, every: dict[int, Polynomial] | None = None) -> None:
    """Make the pair table of a capture that left it to its witnesses (``lineage.later``
    is ``"witnesses"``: ``capture(..., witnesses=True, strategy="defer")``) from its
    rows' polynomials, whose variables are their lineage, in this process (no Spark);
    nothing if it is there. Rows are read ``PAIRS_CHUNK`` at a time, each chunk's
    derivations within ``SIDE_ROW_LIMIT`` side rows; ``every``: the polynomials of
    every output row, when the caller has them already (a workflow's graph is built
    from them)."""
    from ..capture.row_lineage import publish_local_pairs

    if fs.is_dir(entry.lineage.path):  # in the store (local or not), or built in the cache before
        return
    path = Path(entry.lineage.path)
    if every is None and resolvable_by_joins(entry.witnesses):
        # by joins, not as polynomials: their variables are all a pair table needs
        # (TPC-H Q13 at SF 1: 1.7M side rows, 91 s as polynomials)
        joined_pairs.publish(path, entry.output.path, entry.witnesses)
        return
    numbers = entry.lineage.sources
    tables: dict[int, list[pa.Table]] = defaultdict(list)
    for found in [every] if every is not None else _chunks(entry):
        outs: dict[int, list[int]] = defaultdict(list)
        ins: dict[int, list[int]] = defaultdict(list)
        for rid, p in found.items():
            for source, r in p.variables():
                outs[numbers[source]].append(rid)
                ins[numbers[source]].append(r)
        for n in outs:
            tables[n].append(pa.table({OUT: pa.array(outs[n], pa.int64()), IN: pa.array(ins[n], pa.int64())}))
    publish_local_pairs(path, tables, distinct=False)


def _chunks(entry: CaptureEntry):
    """The polynomials of a capture's output rows, ``PAIRS_CHUNK`` rows at a time."""
    files = parquet_files(entry.output.path)
    rids = read_table(files, columns=[RID]).column(RID).to_numpy() if files else np.array([], np.int64)
    for start in range(0, len(rids), PAIRS_CHUNK):
        try:
            yield polynomials(entry, rids[start : start + PAIRS_CHUNK])
        except LineageTooLarge as exc:
            raise LineageTooLarge(
                f"capture {entry.name!r} left its pair table to its witnesses (witnesses=True, strategy='defer'), "
                f"and they are too large to read in this process: {exc}. Capture it with strategy='auto'"
            ) from None
