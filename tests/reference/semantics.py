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
