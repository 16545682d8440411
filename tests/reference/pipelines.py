"""Random pipelines of the in-scope operators, buildable both on Spark and on the reference.

A pipeline is a tree of nodes; each node knows its output columns (all unique names)
and which of them are integers, and can build itself as a PySpark DataFrame
(``spark(dfs)``) or evaluate itself with the reference semantics (``ref(tables)``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import semantics as R

BASE_COLUMNS = ["k", "a", "b", "c"]  # k: unique key, a/b: small ints with NULLs, c: string
BASE_INTS = {"k", "a", "b"}


@dataclass
class Node:
    columns: list[str]
    ints: set[str] = field(default_factory=set)


@dataclass
class Scan(Node):
    source: str = ""
    prefix: str = ""

    def spark(self, dfs: dict[str, DataFrame]) -> DataFrame:
        return dfs[self.source].select(*[F.col(c).alias(f"{self.prefix}{c}") for c in BASE_COLUMNS])

    def ref(self, tables: dict[str, list[tuple]]) -> R.Relation:
        rel = R.scan(self.source, BASE_COLUMNS, tables[self.source], "k")
        return R.project(rel, [(f"{self.prefix}{c}", (lambda e, c=c: e[c])) for c in BASE_COLUMNS])


@dataclass
class TopK(Node):
    child: Scan = None
    n: int = 1

    def spark(self, dfs):
        return self.child.spark(dfs).orderBy(F.col(self.columns[0]).asc_nulls_first()).limit(self.n)

    def ref(self, tables):
        return R.limit_sorted(self.child.ref(tables), [self.columns[0]], self.n)


@dataclass
class Filter(Node):
    child: Node = None
    column: str = ""
    op: str = "<"
    value: int = 0

    def spark(self, dfs):
        c = F.col(self.column)
        cond = {"<": c < self.value, ">=": c >= self.value, "=": c == self.value, "<>": c != self.value}[self.op]
        return self.child.spark(dfs).where(cond)

    def ref(self, tables):
        return R.filter_(self.child.ref(tables), lambda e: R.cmp(self.op, e[self.column], self.value))


@dataclass
class Project(Node):
    child: Node = None
    keep: list[str] = field(default_factory=list)
    derived: list[tuple[str, str, int]] = field(default_factory=list)  # (name, int column, addend)

    def spark(self, dfs):
        cols = [F.col(c) for c in self.keep] + [(F.col(src) + n).alias(name) for name, src, n in self.derived]
        return self.child.spark(dfs).select(*cols)

    def ref(self, tables):
        exprs = [(c, (lambda e, c=c: e[c])) for c in self.keep]
        exprs += [(name, (lambda e, s=src, n=n: R.plus(e[s], n))) for name, src, n in self.derived]
        return R.project(self.child.ref(tables), exprs)


@dataclass
class Repartition(Node):
    child: Node = None
    by: str | None = None

    def spark(self, dfs):
        df = self.child.spark(dfs)
        return df.repartition(3, self.by) if self.by else df.coalesce(1)

    def ref(self, tables):
        return self.child.ref(tables)  # 1:1


@dataclass
class Join(Node):
    left: Node = None
    right: Node = None
    on: tuple[str, str] | None = None  # None: cross join
    how: str = "inner"  # inner, left, right, full, semi, anti

    broadcast: bool = False

    def spark(self, dfs):
        left, right = self.left.spark(dfs), self.right.spark(dfs)
        if self.broadcast:
            right = F.broadcast(right)
        if self.on is None:
            return left.crossJoin(right)
        return left.join(right, F.col(self.on[0]) == F.col(self.on[1]), self.how)

    def ref(self, tables):
        cond = None if self.on is None else (lambda e: R.cmp("=", e[self.on[0]], e[self.on[1]]))
        return R.join(self.left.ref(tables), self.right.ref(tables), cond, self.how)


@dataclass
class Aggregate(Node):
    child: Node = None
    keys: list[str] = field(default_factory=list)
    aggs: list[tuple[str, str, str | None]] = field(default_factory=list)  # (name, count/sum/max, column)
    having: bool = False  # HAVING count(*) > 1, on the first aggregate which is count(*)

    def spark(self, dfs):
        exprs = []
        for name, kind, col in self.aggs:
            e = {"count": lambda c: F.count(F.lit(1)), "sum": F.sum, "max": F.max}[kind](col)
            exprs.append(e.alias(name))
        df = self.child.spark(dfs).groupBy(*self.keys).agg(*exprs)
        return df.where(F.col(self.aggs[0][0]) > 1) if self.having else df

    def ref(self, tables):
        fns = {"count": lambda c: R.agg_count_star, "sum": R.agg_sum, "max": R.agg_max}
        rel = R.aggregate(self.child.ref(tables), self.keys, [(n, fns[k](c)) for n, k, c in self.aggs])
        if self.having:
            rel = R.filter_(rel, lambda e: R.cmp(">=", e[self.aggs[0][0]], 2))
        return rel


@dataclass
class Distinct(Node):
    child: Node = None

    def spark(self, dfs):
        return self.child.spark(dfs).distinct()

    def ref(self, tables):
        return R.distinct(self.child.ref(tables))


@dataclass
class DropDuplicates(Node):
    child: Node = None

    def spark(self, dfs):
        return self.child.spark(dfs).dropDuplicates(self.columns).select(*self.columns)

    def ref(self, tables):
        return R.drop_duplicates(self.child.ref(tables), self.columns)


@dataclass
class Union(Node):
    left: Node = None
    right: Node = None
    left_cols: list[str] = field(default_factory=list)
    right_cols: list[str] = field(default_factory=list)
    distinct: bool = False

    def spark(self, dfs):
        left = self.left.spark(dfs).select(*[F.col(a).alias(n) for a, n in zip(self.left_cols, self.columns)])
        right = self.right.spark(dfs).select(*[F.col(a).alias(n) for a, n in zip(self.right_cols, self.columns)])
        out = left.union(right)  # positional UNION ALL
        return out.distinct() if self.distinct else out

    def ref(self, tables):
        def side(node, cols):
            return R.project(node.ref(tables), [(n, (lambda e, a=a: e[a])) for a, n in zip(cols, self.columns)])

        a, b = side(self.left, self.left_cols), side(self.right, self.right_cols)
        return R.union(a, b) if self.distinct else R.union_all(a, b)


SOURCES = ("t1", "t2")


@st.composite
def pipelines(draw, max_depth: int = 3) -> Node:
    counter = itertools.count()

    def fresh(stem: str) -> str:
        return f"{stem}{next(counter)}"

    def scan() -> Node:
        prefix = fresh("s") + "_"
        node = Scan(
            [prefix + c for c in BASE_COLUMNS], {prefix + c for c in BASE_INTS}, draw(st.sampled_from(SOURCES)), prefix
        )
        if draw(st.integers(0, 5)) == 0:
            return TopK(node.columns, node.ints, node, draw(st.integers(0, 3)))
        return node

    def ints_of(node: Node) -> list[str]:
        return [c for c in node.columns if c in node.ints]

    def gen(depth: int) -> Node:
        if depth >= max_depth or draw(st.integers(0, 3)) == 0:
            return scan()
        kind = draw(st.sampled_from(["filter", "project", "join", "agg", "distinct", "dedup", "union", "repartition"]))
        if kind == "join":
            left, right = gen(depth + 1), gen(depth + 1)
            if draw(st.integers(0, 3)) and ints_of(left) and ints_of(right):
                on = (draw(st.sampled_from(ints_of(left))), draw(st.sampled_from(ints_of(right))))
                how = draw(st.sampled_from(["inner", "left", "right", "full", "semi", "anti"]))
                broadcast = draw(st.booleans())
                if how in ("semi", "anti"):
                    return Join(left.columns, left.ints, left, right, on, how, broadcast)
                return Join(left.columns + right.columns, left.ints | right.ints, left, right, on, how, broadcast)
            return Join(left.columns + right.columns, left.ints | right.ints, left, right, None)
        if kind == "union":
            left, right = gen(depth + 1), gen(depth + 1)
            li, ri = ints_of(left), ints_of(right)
            if not li or not ri:
                return left
            width = draw(st.integers(1, min(2, len(li), len(ri))))
            lc = draw(st.permutations(li))[:width]
            rc = draw(st.permutations(ri))[:width]
            names = [fresh("u") for _ in range(width)]
            return Union(names, set(names), left, right, lc, rc, draw(st.booleans()))
        child = gen(depth + 1)
        ints = ints_of(child)
        if kind == "filter" and ints:
            return Filter(
                child.columns,
                child.ints,
                child,
                draw(st.sampled_from(ints)),
                draw(st.sampled_from(["<", ">=", "=", "<>"])),
                draw(st.integers(-1, 4)),
            )
        if kind == "project":
            keep = [c for c in child.columns if draw(st.booleans())] or child.columns[:1]
            derived = []
            if ints and draw(st.booleans()):
                derived.append((fresh("d"), draw(st.sampled_from(ints)), draw(st.integers(-2, 2))))
            return Project(
                keep + [d[0] for d in derived],
                {c for c in keep if c in child.ints} | {d[0] for d in derived},
                child,
                keep,
                derived,
            )
        if kind == "agg":
            keys = [c for c in child.columns if draw(st.integers(0, 3)) == 0][:2]
            aggs = [(fresh("n"), "count", None)]
            if ints:
                aggs.append((fresh("m"), draw(st.sampled_from(["sum", "max"])), draw(st.sampled_from(ints))))
            names = keys + [n for n, _, _ in aggs]
            return Aggregate(
                names,
                {k for k in keys if k in child.ints} | {n for n, _, _ in aggs},
                child,
                keys,
                aggs,
                draw(st.booleans()),
            )
        if kind == "distinct":
            return Distinct(child.columns, child.ints, child)
        if kind == "repartition":
            return Repartition(child.columns, child.ints, child, draw(st.sampled_from([None, *child.columns])))
        if kind == "dedup":
            subset = [c for c in child.columns if draw(st.booleans())] or child.columns[-1:]
            return DropDuplicates(subset, {c for c in subset if c in child.ints}, child)
        return child

    return gen(0)


def tables() -> st.SearchStrategy[dict[str, list[tuple]]]:
    def table(n_max: int):
        return st.integers(0, n_max).flatmap(
            lambda n: st.tuples(
                *[
                    st.tuples(
                        st.just(k),
                        st.one_of(st.none(), st.integers(0, 3)),
                        st.one_of(st.none(), st.integers(0, 2)),
                        st.sampled_from(["x", "y", None]),
                    )
                    for k in range(n)
                ]
            ).map(list)
        )

    return st.fixed_dictionaries({s: table(6) for s in SOURCES})
