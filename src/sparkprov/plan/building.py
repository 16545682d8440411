"""Building Catalyst expressions and plan nodes: aliases, literals, arithmetic,
structs, the aggregate expressions an injected aggregate collects rids with, and
Project, Aggregate, Deduplicate, Expand and Join nodes, most made like a node of the
plan being rewritten.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> seven = b.alias(b.int_literal(7), "seven")
>>> b.expr_sql(seven)
'7 AS seven'
>>> b.checked_dataframe(b.project([seven], b.analyzed(spark.range(2)))).collect()
[Row(seven=7), Row(seven=7)]
"""

from __future__ import annotations

from typing import Any

from . import rid_collector
from .handles import JExpr, JPlan

# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovPadding.java
_PADDING_CLASS = "SparkprovPadding"


class Building:
    """What ``Bridge`` builds of expressions and nodes (a mixin: ``Bridge.__init__``
    sets the ``spark``, ``jvm``, ``line``, ``_expr``, ``_logical``, ``_empty`` and
    ``_padding`` it uses)."""

    def alias(self, expr: JExpr, name: str, expr_id: Any | None = None) -> JExpr:
        eid = expr_id if expr_id is not None else self._expr.NamedExpression.newExprId()
        if self._empty is None:
            self._empty = self.seq([])  # immutable: one for every alias
        return self._expr.Alias(expr, name, eid, self._empty, self.none(), self._empty)

    def string_literal(self, value: str) -> JExpr:
        return self._expr.Literal.create(value, self.jvm.org.apache.spark.sql.types.DataTypes.StringType)

    def null_literal(self, data_type: Any) -> JExpr:
        return self._expr.Literal.create(None, data_type)

    def int_literal(self, value: int) -> JExpr:
        return self._expr.Literal.create(int(value), self.jvm.org.apache.spark.sql.types.DataTypes.IntegerType)

    def long_literal(self, value: int) -> JExpr:
        # py4j passes small Python ints as Integer, which a bigint Literal refuses: let SQL build it
        project = self.analyzed(self.spark.range(1).selectExpr(f"{int(value)}L AS v"))
        return self._listed(project, "projectList")[0].child()

    def coalesce(self, exprs: list[JExpr]) -> JExpr:
        """The first of ``exprs`` that is not null."""
        return self._expr.Coalesce(self.seq(exprs))

    def array(self, exprs: list[JExpr]) -> JExpr:
        """An array of ``exprs`` (of one type)."""
        return self._expr.CreateArray(self.seq(exprs))

    def arithmetic(self, op: str, left: JExpr, right: JExpr) -> JExpr:
        """``left + right`` or ``left - right`` on longs."""
        return {"+": self._expr.Add, "-": self._expr.Subtract}[op](left, right)

    def named_struct(self, fields: list[tuple[str, JExpr]]) -> JExpr:
        args = []
        for name, value in fields:
            args.extend([self.string_literal(name), value])
        return self._expr.CreateNamedStruct(self.seq(args))

    def struct(self, exprs: list[JExpr]) -> JExpr:
        """A struct of ``exprs`` with positional field names (``_0``, ``_1``...): the
        expressions' own names may repeat (two ``ca_city`` of two joined tables), and
        Parquet cannot read back a struct with repeated field names."""
        return self.named_struct([(f"_{i}", e) for i, e in enumerate(exprs)])

    def hash64(self, exprs: list[JExpr]) -> JExpr:
        """``xxhash64`` of ``exprs``' values, each beside whether it is NULL (the hash
        skips a NULL, so ``(NULL, 1)`` and ``(1, NULL)`` would hash alike): a long
        naming a combination of values, which two may share (callers check)."""
        e = self._expr
        flagged = [x for expr in exprs for x in (expr, e.IsNull(expr))]
        return e.XxHash64(self.seq(flagged))

    @staticmethod
    def new_instance(attr: JExpr) -> JExpr:
        """A copy of ``attr`` with a fresh id (same name and type)."""
        return attr.newInstance()

    @staticmethod
    def to_attribute(named: JExpr) -> JExpr:
        return named.toAttribute()

    def partition_id(self) -> JExpr:
        return self._expr.SparkPartitionID()

    def row_id(self) -> JExpr:
        """``monotonically_increasing_id()``: a number unique to each row of one run."""
        return self._expr.MonotonicallyIncreasingID()

    def collect_rids(self, attr: JExpr, nested: bool, repeats: bool) -> JExpr:
        """An aggregate expression collecting ``attr``'s values into one array per group,
        flattened when ``attr`` is itself an array (rids collected by an inner
        aggregate), without repeated values when the input may repeat a row
        (``repeats``). NULLs are skipped. Rids (longs) are collected by
        ``rid_collector``'s function, anything else by ``collect_list``."""
        made = rid_collector.collect_rids(self.spark, attr, nested, repeats)
        if made is not None:
            return made
        e = self._expr
        agg = self.collect_list(attr)
        if nested:
            agg = e.Flatten(agg)
        return e.ArrayDistinct(agg) if repeats else agg

    def collect_list(self, expr: JExpr) -> JExpr:
        """``collect_list(expr)`` as an aggregate expression: a group's values, one per
        row, NULLs skipped."""
        return self._expr.aggregate.CollectList(expr).toAggregateExpression()

    def any_value(self, attr: JExpr) -> JExpr:
        """``max(attr)`` as an aggregate expression: one of the group's values when
        they are all equal, NULL over no rows (or only NULLs)."""
        return self._expr.aggregate.Max(attr).toAggregateExpression()

    def first(self, attr: JExpr) -> JExpr:
        """``first(attr)`` as an aggregate expression, NULLs kept: the value of a group
        whose rows are all one row's copies (any type; ``max`` needs an ordered one)."""
        return self._expr.aggregate.First(attr, False).toAggregateExpression()

    def project(self, exprs: list[JExpr], child: JPlan) -> JPlan:
        return self._logical.Project(self.seq(exprs), child)

    def project_padded(self, first: list[JExpr], slots: list[tuple[JExpr, str, bool]], child: JPlan) -> JPlan:
        """``child``'s columns ``first``, then per slot ``(attribute, name, kept)`` its
        attribute where kept, else a NULL of its type named ``name`` (a union's branch
        padded with the slots of the other branches)."""
        names = [name for _, name, _ in slots]
        if self._java_helper("_padding", _PADDING_CLASS) and not any("\n" in name for name in names):
            own = "".join("1" if kept else "0" for _, _, kept in slots)
            listed = self._padding.padded(self.seq(first), self.seq([a for a, _, _ in slots]), "\n".join(names), own)
            return self._logical.Project(listed, child)
        extra = [a if kept else self.alias(self.null_literal(self.data_type(a)), name) for a, name, kept in slots]
        return self.project(first + extra, child)

    def aggregate_like(self, agg: JPlan, aggregate_exprs: list[JExpr], child: JPlan) -> JPlan:
        return self.line.aggregate(
            self._logical, agg.groupingExpressions(), self.seq(aggregate_exprs), child, agg, self.none()
        )

    def group_by(self, keys: list[JExpr], aggregate_exprs: list[JExpr], child: JPlan) -> JPlan:
        return self.line.aggregate(self._logical, self.seq(keys), self.seq(aggregate_exprs), child, None, self.none())

    def deduplicate(self, keys: list[JExpr], child: JPlan) -> JPlan:
        return self.line.deduplicate(self._logical, self.seq(keys), child, self.none())

    def expand_like(self, expand: JPlan, extra: list[JExpr], extra_output: list[JExpr], child: JPlan) -> JPlan:
        """``expand`` over ``child`` with ``extra`` appended to every projection and output."""
        projections = [self.seq(self.to_list(p) + extra) for p in self.to_list(expand.projections())]
        return expand.copy(self.seq(projections), self.seq(self.output(expand) + extra_output), child)

    def with_new_children(self, node: JPlan, children: list[JPlan]) -> JPlan:
        return node.withNewChildren(self.seq(children))

    def key_join(
        self, join: JPlan, left: JPlan, right: JPlan, left_keys: list, right_keys: list, kind: str = "inner"
    ) -> JPlan:
        """A join (``kind``: ``inner``, ``left_outer``) of ``left`` and ``right`` on
        ``left_keys[i] = right_keys[i]``, with ``join``'s hint."""
        cond = None
        for lk, rk in zip(left_keys, right_keys, strict=True):
            eq = self._expr.EqualTo(lk, rk)
            cond = eq if cond is None else self._expr.And(cond, eq)
        join_type = self.jvm.org.apache.spark.sql.catalyst.plans.JoinType.apply(kind)
        return self._logical.Join(left, right, join_type, self.jvm.scala.Option.apply(cond), join.hint())

    def is_not_null(self, expr: JExpr) -> JExpr:
        return self._expr.IsNotNull(expr)

    def inner_join_like(self, join: JPlan, left: JPlan, right: JPlan, broadcast_left: bool = False) -> JPlan:
        """An inner join with ``join``'s condition and hint over ``left`` and ``right``;
        ``broadcast_left`` hints Spark to broadcast ``left`` instead (for a left side
        that will be reduced to a few rows before the join runs)."""
        inner = self.jvm.org.apache.spark.sql.catalyst.plans.JoinType.apply("inner")
        hint = self._broadcast_hint(join.hint(), left=True) if broadcast_left else join.hint()
        return self._logical.Join(left, right, inner, join.condition(), hint)

    def broadcasting(self, join: JPlan, left: bool) -> JPlan:
        """``join`` with a hint to broadcast its left (else right) side."""
        hint = self._broadcast_hint(join.hint(), left)
        return join.copy(join.left(), join.right(), join.joinType(), join.condition(), hint)

    def _broadcast_hint(self, hint: JPlan, left: bool) -> JPlan:
        some = self.jvm.scala.Option.apply
        broadcast = some(self._logical.HintInfo(some(getattr(getattr(self._logical, "BROADCAST$"), "MODULE$"))))
        if left:
            return self._logical.JoinHint(broadcast, hint.rightHint())
        return self._logical.JoinHint(hint.leftHint(), broadcast)
