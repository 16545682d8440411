"""Random pipelines of the in-scope operators, buildable both on Spark and on the reference.

A pipeline is a tree of nodes; each node knows its output columns (all unique names)
and which of them are integers, and can build itself as a PySpark DataFrame
(``spark(dfs)``) or evaluate itself with the reference semantics (``ref(tables)``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import strategies as st
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from . import semantics as R

# PySpark 4's subqueries and lateral joins of DataFrames (Column.outer, DataFrame.scalar,
# exists, lateralJoin); without them (3.5) the same query is written in SQL over temporary
# views of the DataFrames (column names are unique across a pipeline, so none is qualified)
DATAFRAME_SUBQUERIES = hasattr(DataFrame, "scalar")
_views = itertools.count()


def _view(df: DataFrame) -> str:
    name = f"sp_ref_view_{next(_views)}"
    df.createOrReplaceTempView(name)
    return name


def _sql(child: DataFrame, other: DataFrame, text: str) -> DataFrame:
    """``text`` with ``{child}`` and ``{other}`` naming views of the two DataFrames."""
    return child.sparkSession.sql(text.format(child=_view(child), other=_view(other)))


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
    udf: bool = False  # compute the derived columns with a row-level Python UDF

    def spark(self, dfs):
        if self.udf:  # a lambda, so the workers get it by value, not by importing this module
            plus = F.udf(lambda x, n: None if x is None else x + n, "long")
            derived = [plus(F.col(src), F.lit(n)).alias(name) for name, src, n in self.derived]
        else:
            derived = [(F.col(src) + n).alias(name) for name, src, n in self.derived]
        return self.child.spark(dfs).select(*[F.col(c) for c in self.keep], *derived)

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
    pandas: bool = False  # the same aggregates computed by a Python function (applyInPandas)

    def spark(self, dfs):
        if self.pandas and self.keys:
            df = self._in_pandas(self.child.spark(dfs))
        else:
            exprs = []
            for name, kind, col in self.aggs:
                e = {"count": lambda c: F.count(F.lit(1)), "sum": F.sum, "max": F.max}[kind](col)
                exprs.append(e.alias(name))
            df = self.child.spark(dfs).groupBy(*self.keys).agg(*exprs)
        return df.where(F.col(self.aggs[0][0]) > 1) if self.having else df

    def _in_pandas(self, df: DataFrame) -> DataFrame:
        aggs, names = self.aggs, self.columns

        def per_group(key, pdf):  # a closure, so the workers get it by value
            import pandas as pd

            row = [None if pd.isna(v) else (v.item() if hasattr(v, "item") else v) for v in key]
            for _, kind, col in aggs:
                values = pdf[col].dropna() if col else pdf
                found = len(values) if kind == "count" else values.sum() if kind == "sum" else values.max()
                row.append(None if kind != "count" and values.empty else int(found))
            return pd.DataFrame([row], columns=names, dtype=object)

        key_types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        types = [key_types[k] for k in self.keys] + ["long"] * len(aggs)
        schema = ", ".join(f"`{n}` {t}" for n, t in zip(names, types))
        return df.groupBy(*self.keys).applyInPandas(per_group, schema)

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
class SetInputs(Node):
    """Two inputs projected positionally onto this node's column names."""

    left: Node = None
    right: Node = None
    left_cols: list[str] = field(default_factory=list)
    right_cols: list[str] = field(default_factory=list)

    def spark_sides(self, dfs):
        return tuple(
            node.spark(dfs).select(*[F.col(a).alias(n) for a, n in zip(cols, self.columns)])
            for node, cols in ((self.left, self.left_cols), (self.right, self.right_cols))
        )

    def ref_sides(self, tables):
        return tuple(
            R.project(node.ref(tables), [(n, (lambda e, a=a: e[a])) for a, n in zip(cols, self.columns)])
            for node, cols in ((self.left, self.left_cols), (self.right, self.right_cols))
        )


@dataclass
class Union(SetInputs):
    distinct: bool = False

    def spark(self, dfs):
        left, right = self.spark_sides(dfs)
        out = left.union(right)  # positional UNION ALL
        return out.distinct() if self.distinct else out

    def ref(self, tables):
        a, b = self.ref_sides(tables)
        return R.union(a, b) if self.distinct else R.union_all(a, b)


@dataclass
class SetOp(SetInputs):
    """INTERSECT / EXCEPT, distinct or ALL."""

    kind: str = "intersect"
    all_: bool = False

    def spark(self, dfs):
        left, right = self.spark_sides(dfs)
        if self.kind == "intersect":
            return left.intersectAll(right) if self.all_ else left.intersect(right)
        return left.exceptAll(right) if self.all_ else left.subtract(right)

    def ref(self, tables):
        a, b = self.ref_sides(tables)
        return R.intersect(a, b, self.all_) if self.kind == "intersect" else R.except_(a, b, self.all_)


@dataclass
class WithSubquery(Node):
    """``child`` with a subquery over ``other``, relating ``column`` and ``other_col``."""

    child: Node = None
    column: str = ""
    other: Node = None
    other_col: str = ""


@dataclass
class ScalarFilter(WithSubquery):
    """WHERE column op (SELECT max(other_col) FROM other): an uncorrelated scalar subquery."""

    op: str = "<"

    def spark(self, dfs):
        if not DATAFRAME_SUBQUERIES:
            return _sql(
                self.child.spark(dfs),
                self.other.spark(dfs),
                f"SELECT * FROM {{child}} WHERE `{self.column}` {self.op} "
                f"(SELECT max(`{self.other_col}`) FROM {{other}})",
            )
        sub = self.other.spark(dfs).select(F.max(self.other_col)).scalar()
        c = F.col(self.column)
        return self.child.spark(dfs).where({"<": c < sub, ">=": c >= sub, "=": c == sub, "<>": c != sub}[self.op])

    def ref(self, tables):
        sub = R.aggregate(self.other.ref(tables), [], [("m", R.agg_max(self.other_col))])
        return R.scalar_subquery_filter(self.child.ref(tables), self.column, self.op, sub)


@dataclass
class Exists(WithSubquery):
    """WHERE [NOT] EXISTS (SELECT * FROM other WHERE other_col = column): semi / anti join."""

    negate: bool = False

    def spark(self, dfs):
        if not DATAFRAME_SUBQUERIES:
            where = f"EXISTS (SELECT * FROM {{other}} WHERE `{self.other_col}` = `{self.column}`)"
            return _sql(
                self.child.spark(dfs),
                self.other.spark(dfs),
                f"SELECT * FROM {{child}} WHERE {'NOT ' * self.negate}{where}",
            )
        sub = self.other.spark(dfs).where(F.col(self.other_col) == F.col(self.column).outer()).exists()
        return self.child.spark(dfs).where(~sub if self.negate else sub)

    def ref(self, tables):
        cond = lambda e: R.cmp("=", e[self.column], e[self.other_col])  # noqa: E731
        return R.join(self.child.ref(tables), self.other.ref(tables), cond, "anti" if self.negate else "semi")


@dataclass
class CorrelatedCount(WithSubquery):
    """SELECT *, (SELECT count(*) FROM other WHERE other_col = column): a correlated scalar subquery."""

    def spark(self, dfs):
        other = self.other.spark(dfs)
        if not DATAFRAME_SUBQUERIES:
            count = f"(SELECT count(1) FROM {{other}} WHERE `{self.other_col}` = `{self.column}`)"
            return _sql(self.child.spark(dfs), other, f"SELECT *, {count} AS `{self.columns[-1]}` FROM {{child}}")
        sub = other.where(F.col(self.other_col) == F.col(self.column).outer()).select(F.count(F.lit(1))).scalar()
        return self.child.spark(dfs).select("*", sub.alias(self.columns[-1]))

    def ref(self, tables):
        return R.correlated_count(
            self.child.ref(tables), self.column, self.other.ref(tables), self.other_col, self.columns[-1]
        )


@dataclass
class Explode(Node):
    child: Node = None
    sources: list[str] = field(default_factory=list)
    udtf: bool = False  # the same rows from a Python UDTF called on each row (a lateral join)

    def spark(self, dfs):
        df = self.child.spark(dfs)
        if self.udtf:

            class Each:  # defined here, so the workers get it by value
                def eval(self, *xs):
                    for x in xs:
                        yield (x,)

            each = F.udtf(Each, returnType=f"{self.columns[-1]} long")
            if not DATAFRAME_SUBQUERIES:
                name = f"sp_ref_each_{next(_views)}"
                df.sparkSession.udtf.register(name, each)
                args = ", ".join(f"`{c}`" for c in self.sources)
                return df.sparkSession.sql(f"SELECT * FROM {_view(df)}, LATERAL {name}({args})")
            return df.lateralJoin(each(*[F.col(c).outer() for c in self.sources]))
        arr = F.array(*[F.col(c) for c in self.sources])
        return df.select("*", F.explode(arr).alias(self.columns[-1]))

    def ref(self, tables):
        return R.explode(self.child.ref(tables), self.sources, self.columns[-1])


@dataclass
class Rollup(Node):
    child: Node = None
    keys: list[str] = field(default_factory=list)

    def spark(self, dfs):
        return self.child.spark(dfs).rollup(*self.keys).agg(F.count(F.lit(1)).alias(self.columns[-1]))

    def ref(self, tables):
        return R.rollup(self.child.ref(tables), self.keys, [(self.columns[-1], R.agg_count_star)])


@dataclass
class Win(Node):
    """One window function over ``partition`` ordered by ``order`` (see semantics.window)."""

    child: Node = None
    partition: list[str] = field(default_factory=list)
    order: str = ""
    fn: str = "rank"
    target: str = ""

    def spark(self, dfs):
        spec = Window.partitionBy(*self.partition)
        ordered = spec.orderBy(F.col(self.order).asc_nulls_first())
        expr = {
            "rank": lambda: F.rank().over(ordered),
            "dense_rank": lambda: F.dense_rank().over(ordered),
            "running_sum": lambda: F.sum(self.target).over(ordered),
            "cume_dist": lambda: F.cume_dist().over(ordered),
            "avg": lambda: F.avg(self.target).over(spec),
        }[self.fn]()
        return self.child.spark(dfs).select("*", expr.alias(self.columns[-1]))

    def ref(self, tables):
        return R.window(self.child.ref(tables), self.partition, self.order, self.fn, self.target, self.columns[-1])


SOURCES = ("t1", "t2")


KINDS = [
    "filter",
    "project",
    "join",
    "agg",
    "distinct",
    "dedup",
    "union",
    "repartition",
    "setop",
    "scalar",
    "exists",
    "correlated",
    "explode",
    "rollup",
    "window",
]


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
        kind = draw(st.sampled_from(KINDS))
        if kind in ("setop", "scalar", "exists", "correlated"):
            left, right = gen(depth + 1), gen(depth + 1)
            li, ri = ints_of(left), ints_of(right)
            if not li or not ri:
                return left
            if kind == "setop":
                width = draw(st.integers(1, min(2, len(li), len(ri))))
                names = [fresh("x") for _ in range(width)]
                lc, rc = draw(st.permutations(li))[:width], draw(st.permutations(ri))[:width]
                op = draw(st.sampled_from(["intersect", "except"]))
                return SetOp(names, set(names), left, right, lc, rc, op, draw(st.booleans()))
            column, other_col = draw(st.sampled_from(li)), draw(st.sampled_from(ri))
            if kind == "scalar":
                op = draw(st.sampled_from(["<", ">=", "=", "<>"]))
                return ScalarFilter(left.columns, left.ints, left, column, right, other_col, op)
            if kind == "exists":
                return Exists(left.columns, left.ints, left, column, right, other_col, draw(st.booleans()))
            name = fresh("cnt")
            return CorrelatedCount(left.columns + [name], left.ints | {name}, left, column, right, other_col)
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
                bool(derived) and draw(st.booleans()),
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
                draw(st.integers(0, 3)) == 0,
            )
        if kind == "distinct":
            return Distinct(child.columns, child.ints, child)
        if kind == "repartition":
            return Repartition(child.columns, child.ints, child, draw(st.sampled_from([None, *child.columns])))
        if kind == "explode" and ints:
            name = fresh("e")
            sources = draw(st.permutations(ints))[:2]
            return Explode(child.columns + [name], child.ints | {name}, child, sources, draw(st.booleans()))
        if kind == "rollup" and child.columns:
            keys = draw(st.permutations(child.columns))[: draw(st.integers(1, 2))]
            name = fresh("n")
            return Rollup(keys + [name], {k for k in keys if k in child.ints} | {name}, child, keys)
        if kind == "window" and ints:
            fn = draw(st.sampled_from(["rank", "dense_rank", "running_sum", "cume_dist", "avg"]))
            partition = [c for c in child.columns if draw(st.integers(0, 2)) == 0][:1]
            name = fresh("w")
            ints_out = child.ints | ({name} if fn in ("rank", "dense_rank", "running_sum") else set())
            order, target = draw(st.sampled_from(ints)), draw(st.sampled_from(ints))
            return Win(child.columns + [name], ints_out, child, partition, order, fn, target)
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
