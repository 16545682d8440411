"""Subquery expressions: found in an expression (walking only the branches whose tree
pattern bits hold one), their plans replaced, and EXISTS and IN subqueries made
semi joins and filters.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> plan = b.analyzed(spark.sql("SELECT (SELECT max(id) FROM range(3)) AS m"))
>>> (found,) = b.scalar_subqueries(b.project_list(plan)[0])
>>> b.is_correlated(found), b.node_name(b.subquery_plan(found))
(False, 'Aggregate')
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InvalidArgument
from .handles import CATALYST, JExpr, JPlan


class Subqueries:
    """What ``Bridge`` reads and rewrites of subquery expressions (a mixin:
    ``Bridge.__init__`` sets the ``jvm``, ``line``, ``_expr``, ``_logical`` and ``_classes`` it
    uses)."""

    def contains_subquery(self, expr: JExpr) -> bool:
        return bool(self.jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(expr))

    def scalar_subqueries(self, expr: JExpr) -> list[JExpr]:
        """The ScalarSubquery expressions in ``expr`` (not inside their own plans)."""
        return self._found(expr, "SCALAR_SUBQUERY", "ScalarSubquery")

    def count_subqueries(self, expr: JExpr) -> int:
        """Subquery expressions of any kind in ``expr`` (scalar, IN, EXISTS, lateral...)."""
        return len(self._found(expr, "PLAN_EXPRESSION", "SubqueryExpression"))

    def _found(self, expr: JExpr, pattern: str, cls: str) -> list[JExpr]:
        # expr and the expressions below it that are instances of Catalyst's
        # expressions.<cls>; only branches whose pattern bits say one is there are walked
        # (an expression tree of hundreds of nodes may hold one subquery)
        if not self.has_pattern(expr, pattern):
            return []
        if cls not in self._classes:
            self._classes[cls] = self.jvm.java.lang.Class.forName(f"{CATALYST}.expressions.{cls}")
        wanted = self._classes[cls]
        found, stack = [], [expr]
        while stack:
            e = stack.pop()
            if wanted.isInstance(e):
                found.append(e)
            stack.extend(k for k in self.to_list(e.children()) if self.has_pattern(k, pattern))
        return found

    @staticmethod
    def is_correlated(subquery: JExpr) -> bool:
        return not subquery.outerAttrs().isEmpty()

    @staticmethod
    def subquery_plan(subquery: JExpr) -> JPlan:
        return subquery.plan()

    def replace_subquery(self, node: JPlan, subquery: JExpr, plan: JPlan) -> JPlan:
        """``node`` (Filter, Project or Aggregate) with ``subquery`` reading ``plan`` instead."""
        target = self.expr_id(subquery)
        replacement = subquery.withNewPlan(plan)

        def swap(e: JExpr) -> JExpr | None:
            if self.class_name(e) == "ScalarSubquery" and self.expr_id(e) == target:
                return replacement
            return None

        return self._map_expressions(node, swap, "SCALAR_SUBQUERY")

    def map_subquery_plans(self, node: JPlan, fn: Callable[[JPlan], JPlan]) -> JPlan:
        """``node`` (Filter, Project or Aggregate) with every subquery expression's plan
        ``p`` replaced by ``fn(p)`` (``fn`` returns ``p`` itself to keep it)."""
        cls = self.jvm.java.lang.Class.forName(f"{CATALYST}.expressions.SubqueryExpression")

        def swap(e: JExpr) -> JExpr | None:
            if not cls.isInstance(e):
                return None
            plan = e.plan()
            new = fn(plan)
            return e if new is plan else e.withNewPlan(new)

        return self._map_expressions(node, swap, "PLAN_EXPRESSION")

    def _map_expressions(self, node: JPlan, swap: Callable[[JExpr], JExpr | None], pattern: str) -> JPlan:
        # the expressions of node, rebuilt where swap(e) gives a replacement (None: look
        # inside e); swap only ever replaces expressions with tree pattern bit `pattern`
        def walk(e: JExpr) -> JExpr:
            if not self.has_pattern(e, pattern):
                return e
            found = swap(e)
            if found is not None:
                return found
            kids = self.to_list(e.children())
            new = [walk(k) for k in kids]
            return e.withNewChildren(self.seq(new)) if any(n is not k for n, k in zip(new, kids)) else e

        op = self.node_name(node)
        if op == "Filter":
            return node.copy(walk(node.condition()), node.child())
        if op == "Project":
            return node.copy(self.seq([walk(e) for e in self.project_list(node)]), node.child())
        if op == "Aggregate":
            exprs = [walk(e) for e in self.aggregate_expressions(node)]
            return self.line.aggregate(
                self._logical, node.groupingExpressions(), self.seq(exprs), node.child(), node, self.none()
            )
        raise InvalidArgument(f"cannot replace a subquery in {op}")

    def uncorrelated_exists_conjuncts(self, node: JPlan) -> tuple[list[JPlan], list[JExpr]]:
        """For a Filter: the plans of its top-level ``EXISTS`` conjuncts without outer
        references, and its other conjuncts."""
        if self.node_name(node) != "Filter" or not self.has_pattern(node.condition(), "EXISTS_SUBQUERY"):
            return [], []
        plans, rest = [], []
        for e in self.conjuncts(node.condition()):
            if self.class_name(e) == "Exists" and e.outerAttrs().isEmpty():
                plans.append(e.plan())
            else:
                rest.append(e)
        return plans, rest

    def filter_semi_joins(self, node: JPlan, plans: list[JPlan], rest: list[JExpr]) -> JPlan:
        """``node`` (a Filter) as left semi joins with ``plans`` (no condition), then a
        Filter on the ``rest`` of its conjuncts."""
        child = node.child()
        semi = self.jvm.org.apache.spark.sql.catalyst.plans.JoinType.apply("leftsemi")
        for plan in plans:
            child = self._logical.Join(child, plan, semi, self.none(), self._logical.JoinHint.NONE())
        if not rest:
            return child
        cond = rest[0]
        for e in rest[1:]:
            cond = self._expr.And(cond, e)
        return self._logical.Filter(cond, child)

    def in_subquery_filter(self, keys: list[JExpr], values: list[JExpr], plan: JPlan, child: JPlan) -> JPlan:
        """``child`` filtered by ``(keys) IN (SELECT values FROM plan)``: an uncorrelated
        IN subquery, which Spark's optimizer turns into a left semi join (broadcast
        when ``plan`` is small). ``plan`` may share attribute ids with ``child``'s
        subtree: Spark gives a subquery's plan its own when it makes the join."""
        e = self._expr
        listed = self.project([self.alias(v, f"__sp_key{i}") for i, v in enumerate(values)], plan)
        query = e.ListQuery(listed, self.seq([]), e.NamedExpression.newExprId(), len(values), self.seq([]), self.none())
        return self._logical.Filter(e.InSubquery(self.seq(keys), query), child)
