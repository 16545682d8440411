"""A reference implementation of ../shared/lineage-semantics.md over plain Python rows.

Written from the semantics page alone, independently of the capture code: a relation
is a list of ``(values, lineage)`` where ``values`` is a tuple and ``lineage`` a
frozenset of ``(source name, source key)``. SQL NULL is ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Lineage = frozenset
Row = tuple  # (values: tuple, lineage: frozenset)


@dataclass
class Relation:
    columns: list[str]
    rows: list[Row]

    def index(self, column: str) -> int:
        return self.columns.index(column)


def scan(source: str, columns: list[str], rows: Sequence[tuple], key: str) -> Relation:
    """Each row's lineage is the row itself, named by its key column."""
    k = columns.index(key)
    return Relation(list(columns), [(tuple(r), frozenset({(source, r[k])})) for r in rows])


def filter_(rel: Relation, pred: Callable[[dict], bool | None]) -> Relation:
    """Rows where the predicate is TRUE (NULL and FALSE drop the row)."""
    return Relation(rel.columns, [(v, lin) for v, lin in rel.rows if pred(dict(zip(rel.columns, v))) is True])


def project(rel: Relation, exprs: list[tuple[str, Callable[[dict], object]]]) -> Relation:
    """1:1: the output row has its input row's lineage."""
    out = []
    for v, lin in rel.rows:
        env = dict(zip(rel.columns, v))
        out.append((tuple(f(env) for _, f in exprs), lin))
    return Relation([n for n, _ in exprs], out)


def join(left: Relation, right: Relation, cond: Callable[[dict], bool | None] | None, how: str = "inner") -> Relation:
    """Joins. inner/cross: the joined pair. Outer joins: matched rows as for inner, a
    NULL-padded row has only its preserved side's row. semi: the left row and every
    right row it matches. anti: the left row only."""
    cols = left.columns + right.columns

    def matches(lv, rv):
        return cond is None or cond(dict(zip(cols, lv + rv))) is True

    out = []
    right_matched = set()
    for lv, ll in left.rows:
        hits = [(i, rv, rl) for i, (rv, rl) in enumerate(right.rows) if matches(lv, rv)]
        right_matched.update(i for i, _, _ in hits)
        if how == "semi":
            if hits:
                out.append((lv, ll.union(*[rl for _, _, rl in hits])))
        elif how == "anti":
            if not hits:
                out.append((lv, ll))
        else:
            out.extend((lv + rv, ll | rl) for _, rv, rl in hits)
            if not hits and how in ("left", "full"):
                out.append((lv + (None,) * len(right.columns), ll))
    if how in ("right", "full"):
        for i, (rv, rl) in enumerate(right.rows):
            if i not in right_matched:
                out.append(((None,) * len(left.columns) + rv, rl))
    return Relation(left.columns if how in ("semi", "anti") else cols, out)


def aggregate(rel: Relation, keys: list[str], aggs: list[tuple[str, Callable[[list[dict]], object]]]) -> Relation:
    """Every row of the group; a global aggregate always yields one row (empty lineage on empty input)."""
    groups: dict[tuple, list[Row]] = {}
    for v, lin in rel.rows:
        env = dict(zip(rel.columns, v))
        groups.setdefault(tuple(env[k] for k in keys), []).append((env, lin))
    if not keys and not groups:
        groups[()] = []
    out = []
    for key, members in groups.items():
        envs = [e for e, _ in members]
        lin = frozenset().union(*[lin for _, lin in members])
        out.append((key + tuple(f(envs) for _, f in aggs), lin))
    return Relation(keys + [n for n, _ in aggs], out)


def distinct(rel: Relation) -> Relation:
    """Every input row equal to the output row."""
    return aggregate(rel, list(rel.columns), [])


def drop_duplicates(rel: Relation, subset: list[str]) -> Relation:
    """Every input row sharing the key; only the key columns are deterministic, so keep those."""
    return aggregate(rel, subset, [])


def union_all(a: Relation, b: Relation) -> Relation:
    """The row from its branch."""
    return Relation(a.columns, a.rows + b.rows)


def union(a: Relation, b: Relation) -> Relation:
    """UNION (distinct): every row of both branches equal to the output row."""
    return distinct(union_all(a, b))


def intersect(a: Relation, b: Relation, all_: bool) -> Relation:
    """INTERSECT [ALL]: every row of both inputs equal to the output row; ALL keeps
    min(count in a, count in b) copies."""
    out = []
    for values in dict.fromkeys(v for v, _ in a.rows):
        left = [lin for v, lin in a.rows if v == values]
        right = [lin for v, lin in b.rows if v == values]
        if right:
            lin = frozenset().union(*left, *right)
            out.extend([(values, lin)] * (min(len(left), len(right)) if all_ else 1))
    return Relation(a.columns, out)


def except_(a: Relation, b: Relation, all_: bool) -> Relation:
    """EXCEPT [ALL]: the left rows only (every left row equal to the output row; an
    absence of matches is not a dependency); ALL keeps count(a) - count(b) copies."""
    out = []
    for values in dict.fromkeys(v for v, _ in a.rows):
        left = [lin for v, lin in a.rows if v == values]
        n_right = sum(1 for v, _ in b.rows if v == values)
        copies = max(0, len(left) - n_right) if all_ else (0 if n_right else 1)
        out.extend([(values, frozenset().union(*left))] * copies)
    return Relation(a.columns, out)


def scalar_subquery_filter(rel: Relation, column: str, op: str, sub: Relation) -> Relation:
    """WHERE column op (SELECT ...): the row's lineage plus the subquery's result row's
    lineage. ``sub`` has one column and at most one row (an empty one gives NULL)."""
    value, sub_lin = (sub.rows[0][0][0], sub.rows[0][1]) if sub.rows else (None, frozenset())
    out = [(v, lin | sub_lin) for v, lin in rel.rows if cmp(op, v[rel.index(column)], value) is True]
    return Relation(rel.columns, out)


def correlated_count(rel: Relation, column: str, other: Relation, other_column: str, name: str) -> Relation:
    """SELECT *, (SELECT count(*) FROM other WHERE other_column = column): planned as a
    left outer join with the aggregate per key, so the row plus the matching rows."""
    out = []
    for v, lin in rel.rows:
        hits = [ol for ov, ol in other.rows if cmp("=", ov[other.index(other_column)], v[rel.index(column)]) is True]
        out.append((v + (len(hits),), lin.union(*hits)))
    return Relation(rel.columns + [name], out)


def explode(rel: Relation, columns: list[str], name: str) -> Relation:
    """explode(array(columns)): one row per element, each with its input row's lineage."""
    out = [(v + (v[rel.index(c)],), lin) for v, lin in rel.rows for c in columns]
    return Relation(rel.columns + [name], out)


def rollup(rel: Relation, keys: list[str], aggs: list[tuple[str, Callable[[list[dict]], object]]]) -> Relation:
    """ROLLUP: one aggregate per grouping set (prefixes of ``keys``), the missing keys
    NULL; the lineage is the group within its grouping set."""
    out = []
    for n in range(len(keys), -1, -1):
        part = aggregate(rel, keys[:n], aggs)
        if n == 0 and not rel.rows:
            part = Relation(part.columns, [])  # Spark's grand total over no rows: no row
        pad = (None,) * (len(keys) - n)
        out.extend((v[:n] + pad + v[n:], lin) for v, lin in part.rows)
    return Relation(keys + [a for a, _ in aggs], out)


def window(rel: Relation, partition: list[str], order: str, fn: str, target: str, name: str) -> Relation:
    """One window function per row, over partitions (NULL keys group together), ordered
    ascending by ``order`` with NULLs first.

    rank, dense_rank and a running sum (the default RANGE frame): the row and every row
    of its partition that sorts before it or ties with it. cume_dist and a
    partition-wide avg: the row and every row of its partition.
    """
    part_idx = [rel.index(c) for c in partition]
    o, t = rel.index(order), rel.index(target)

    def sort_key(v):
        return (v[o] is not None, v[o])

    out = []
    for v, lin in rel.rows:
        members = [(mv, ml) for mv, ml in rel.rows if all(mv[i] == v[i] for i in part_idx)]
        upto = [(mv, ml) for mv, ml in members if sort_key(mv) <= sort_key(v)]
        if fn == "rank":
            value = 1 + sum(1 for mv, _ in members if sort_key(mv) < sort_key(v))
            deps = upto
        elif fn == "dense_rank":
            value = 1 + len({sort_key(mv) for mv, _ in members if sort_key(mv) < sort_key(v)})
            deps = upto
        elif fn == "running_sum":
            vals = [mv[t] for mv, _ in upto if mv[t] is not None]
            value = sum(vals) if vals else None
            deps = upto
        elif fn == "cume_dist":
            value = len(upto) / len(members)
            deps = members
        elif fn == "avg":
            vals = [mv[t] for mv, _ in members if mv[t] is not None]
            value = sum(vals) / len(vals) if vals else None
            deps = members
        else:
            raise ValueError(fn)
        out.append((v + (value,), lin.union(*[ml for _, ml in deps])))
    return Relation(rel.columns + [name], out)


def limit_sorted(rel: Relation, sort_cols: list[str], n: int) -> Relation:
    """Top-k over a unique ordering: the kept rows only."""
    idx = [rel.index(c) for c in sort_cols]
    rows = sorted(rel.rows, key=lambda r: tuple((r[0][i] is not None, r[0][i]) for i in idx))
    return Relation(rel.columns, rows[:n])


# ---- SQL-like scalar helpers (NULL-propagating) --------------------------------------
def cmp(op: str, a, b) -> bool | None:
    if a is None or b is None:
        return None
    return {"<": a < b, ">=": a >= b, "=": a == b, "<>": a != b}[op]


def plus(a, b):
    return None if a is None or b is None else a + b


def agg_count_star(envs: list[dict]) -> int:
    return len(envs)


def agg_sum(col: str) -> Callable[[list[dict]], object]:
    def f(envs):
        vals = [e[col] for e in envs if e[col] is not None]
        return sum(vals) if vals else None

    return f


def agg_max(col: str) -> Callable[[list[dict]], object]:
    def f(envs):
        vals = [e[col] for e in envs if e[col] is not None]
        return max(vals) if vals else None

    return f
