"""Reading Catalyst plans and expressions: node names, children, outputs, tree-pattern
bits, one-line descriptions, the fields of the operators capture rewrites, expression
ids and names; a plan's whole tree in one round trip (``prefetch``, by a Java class
compiled with Janino) while ``Bridge.remembering``.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> plan = b.analyzed(spark.range(3).where("id > 0"))
>>> b.node_name(plan), [b.node_name(kid) for kid in b.children(plan)]
('Filter', ['Range'])
>>> [b.attr_name(attr) for attr in b.output(plan)]
['id']
"""

from __future__ import annotations

import json
from typing import Any

from py4j.java_gateway import JavaObject
from pyspark.sql.types import StructType

from .handles import CATALYST, JExpr, JPlan, memo_entry
from .references import compiled

# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovTree.java
_TREE_CLASS = "SparkprovTree"
# asked of the plan's nodes by the rules and checks (a pattern not here costs a round
# trip per node asked)
_TREE_PATTERNS = ("PLAN_EXPRESSION", "GENERATOR", "SCALAR_SUBQUERY", "PYTHON_UDF", "JOIN", "GENERATE", "LIMIT",
                  "EXCEPT", "FILTER")  # fmt: skip


class Reading:
    """What ``Bridge`` reads of plans and expressions (a mixin: ``Bridge.__init__`` sets
    the ``spark``, ``jvm``, ``line``, ``_walk``, ``_tree`` and ``_patterns`` it uses)."""

    def node_name(self, node: JPlan) -> str:
        """A plan node's operator name (its class's simple name: no operator sparkprov
        reads overrides Catalyst's ``nodeName``), as the newest Spark line names the
        operator; one round trip."""
        name = self._remembered(node, 1, node.nodeName)
        return self.line.operators.get(name, name)

    @staticmethod
    def class_name(obj: Any) -> str:
        """The simple class name of an expression (some override ``nodeName``)."""
        return obj.getClass().getSimpleName()

    def children(self, node: JPlan) -> list[JPlan]:
        # with their names, which every walk asks next
        kids = lambda: self._inheriting(node, self._listed(node, "children", "nodeName", 1))  # noqa: E731
        return list(self._remembered(node, 2, kids))

    def prefetch(self, root: JPlan) -> None:
        """While remembering: the names, children, one-line descriptions and common tree
        pattern bits of every node of ``root``'s tree, in one round trip (Py4J takes one
        per node and question). Nothing when ``root``'s children are already known."""
        memo = getattr(self._walk, "memo", None)
        if memo is None or memo_entry(memo, root)[2] is not None or not self._tree_walker():
            return
        answer = self._tree.walk(root, 8, ",".join(_TREE_PATTERNS))
        client = self.spark.sparkContext._gateway._gateway_client
        open_parents: list[list] = []  # [children list, how many are still to come]
        for part in answer.split("\x02")[:-1]:
            target, count, name, text, bits, leaf_output = part.split("\x01")
            node = JavaObject(target, client) if target else root
            if open_parents:  # preorder: a node follows its parent and older siblings' trees
                open_parents[-1][0].append(node)
                open_parents[-1][1] -= 1
                while open_parents and open_parents[-1][1] == 0:
                    open_parents.pop()
            entry = memo_entry(memo, node)
            entry[1] = entry[1] or name
            entry[10] = text
            if not int(count):
                entry[11] = leaf_output
            known = entry[4] if entry[4] is not None else {}
            known.update((p, flag == "1") for p, flag in zip(_TREE_PATTERNS, bits))
            entry[4] = known
            kids: list = []
            entry[2] = kids
            if int(count):
                open_parents.append([kids, int(count)])

    def _tree_walker(self) -> Any:
        if self._tree is None:
            gateway = self.spark.sparkContext._gateway.java_gateway_server.getGateway()
            self._tree = compiled(self.spark, _TREE_CLASS, self.line.java_source(_TREE_CLASS), gateway) or False
        return self._tree

    def _pattern(self, pattern: str) -> Any:
        if pattern not in self._patterns:
            self._patterns[pattern] = getattr(getattr(self.jvm, f"{CATALYST}.trees.TreePattern"), pattern)()
        return self._patterns[pattern]

    def _inheriting(self, node: JPlan, kids: list[JPlan]) -> list[JPlan]:
        # A tree pattern a node's bits lack is in none of its children (the bits cover
        # the subtree): the children are not asked again.
        bits = self._remembered(node, 4, dict)
        absent = [pattern for pattern, found in (bits or {}).items() if not found]
        for kid in kids if absent else ():
            known = self._remembered(kid, 4, dict)
            for pattern in absent:
                known.setdefault(pattern, False)
        return kids

    def output(self, node: JPlan) -> list[JExpr]:
        # with their expression ids, which the rules compare
        return list(self._remembered(node, 3, lambda: self._listed(node, "output", "exprId.id", 9)))

    def last_output(self, node: JPlan) -> JExpr:
        """The node's last output attribute: one round trip, not one per column."""
        memo = getattr(self._walk, "memo", None)
        entry = memo.get(id(node)) if memo else None
        if entry is not None and entry[3] is not None:
            return entry[3][-1]
        return node.output().last()

    def output_ids(self, node: JPlan) -> str:
        """The node's output attributes as one string (``name#id, ...``): a key for them."""
        return self._remembered(node, 11, lambda: node.output().mkString(","))

    def expressions(self, node: JPlan) -> list[JExpr]:
        return self._listed(node, "expressions")

    def has_pattern(self, tree: JPlan | JExpr, pattern: str) -> bool:
        """Whether ``tree`` or anything below it (for a plan: its expressions too, but not
        the plans of its subqueries) has Catalyst's tree pattern ``pattern``.

        One JVM call, against the bits Catalyst keeps on every node: the cheap way to
        skip walking parts of a plan that cannot contain what a walk looks for.
        """
        bits = self._remembered(tree, 4, dict)
        if bits is None or pattern not in bits:
            found = bool(tree.containsPattern(self._pattern(pattern)))
            if bits is None:
                return found
            bits[pattern] = found
        return bits[pattern]

    @staticmethod
    def is_plan_deterministic(plan: JPlan) -> bool:
        """Every expression of ``plan`` and its subtree is deterministic."""
        return bool(plan.deterministic())

    @staticmethod
    def tree_string(node: JPlan) -> str:
        return node.treeString()

    def simple_string(self, node: JPlan, max_chars: int = 120) -> str:
        """One line naming the operator and its main arguments."""
        text = self._remembered(node, 10, lambda: str(node.simpleString(8)))
        return text if len(text) <= max_chars else text[: max_chars - 3] + "..."

    @staticmethod
    def schema_json(plan: JPlan) -> str:
        """``plan``'s schema as PySpark spells it (``DataFrame.schema.json()``), read
        without making a Dataset of the plan."""
        return StructType.fromJson(json.loads(plan.schema().json())).json()

    def same_result(self, a: JPlan, b: JPlan) -> bool:
        return bool(a.sameResult(b))

    def project_list(self, project: JPlan) -> list[JExpr]:
        return self._listed(project, "projectList")

    def grouping_expressions(self, agg: JPlan) -> list[JExpr]:
        return self._listed(agg, "groupingExpressions")

    def aggregate_expressions(self, agg: JPlan) -> list[JExpr]:
        return self._listed(agg, "aggregateExpressions")

    def grouping_attributes(self, node: JPlan) -> list[JExpr]:
        return self.to_list(node.groupingAttributes())

    def dedup_keys(self, dedup: JPlan) -> list[JExpr]:
        return self.to_list(dedup.keys())

    def is_positional_union(self, union: JPlan) -> bool:
        return not union.byName() and not union.allowMissingCol()

    def is_except_all(self, node: JPlan) -> bool:
        return self.node_name(node) == "Except All"  # Except's name says whether it is ALL

    @staticmethod
    def is_empty(local_relation: JPlan) -> bool:
        return bool(local_relation.data().isEmpty())

    def global_sort_keys(self, node: JPlan) -> list[tuple[JExpr | None, bool, bool]] | None:
        """For a global Sort: per key, the attribute it sorts on (None for any other
        expression), whether ascending, whether NULLs first. None for any other node."""
        if self.node_name(node) != "Sort" or not getattr(node, "global")():  # a Python keyword
            return None
        keys = []
        for order in self.to_list(node.order()):
            child = order.child()
            attr = child if self.class_name(child) == "AttributeReference" else None
            keys.append((attr, bool(order.isAscending()), order.nullOrdering().sql() == "NULLS FIRST"))
        return keys

    def join_type(self, join: JPlan) -> str:
        """``Inner``, ``LeftSemi``, ... or ``ExistenceJoin(exists#12)``."""
        return join.joinType().toString()

    def condition_references(self, join: JPlan) -> list[JExpr]:
        """Attributes the join condition reads (none for a join without condition)."""
        cond = join.condition()
        if cond.isEmpty():
            return []
        return self.to_list(cond.get().references().toSeq())

    def equi_join_keys(self, join: JPlan) -> tuple[list[JExpr], list[JExpr]] | None:
        """``(left keys, right keys)`` when ``join``'s condition is equalities between
        its two sides and nothing else (as Spark's planner reads it: a null-safe
        equality becomes a coalesced key and an IS NULL key); None otherwise."""
        found = self.jvm.org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys.unapply(join)
        if found.isEmpty() or found.get()._4().isDefined():
            return None
        return self.to_list(found.get()._2()), self.to_list(found.get()._3())

    @staticmethod
    def outputs_overlap(a: JPlan, b: JPlan) -> bool:
        return not a.outputSet().intersect(b.outputSet()).isEmpty()

    @staticmethod
    def catalog_table_name(node: JPlan) -> str | None:
        table = node.catalogTable()
        if table.isDefined():
            return table.get().identifier().unquotedString()
        return None

    @staticmethod
    def subquery_alias(node: JPlan) -> str | None:
        """The name of a SubqueryAlias node (``df.alias(name)``), else None."""
        if node.nodeName() != "SubqueryAlias":
            return None
        return str(node.alias())

    @staticmethod
    def view_name(view: JPlan) -> str:
        return view.desc().identifier().unquotedString()

    def is_checkpoint(self, leaf: JPlan) -> bool:
        """Whether a leaf is the result of ``df.checkpoint()`` / ``localCheckpoint()``."""
        return self.node_name(leaf) == "LogicalRDD" and bool(leaf.rdd().isCheckpointed())

    @staticmethod
    def expr_sql(expr: JExpr) -> str:
        return expr.sql()

    @staticmethod
    def attr_name(attr: JExpr) -> str:
        return attr.name()

    def expr_id(self, attr: JExpr) -> int:
        return self._remembered(attr, 9, lambda: int(attr.exprId().id()))

    @staticmethod
    def jexpr_id(attr: JExpr) -> Any:
        """The ExprId object itself, to build an alias that keeps an attribute's identity."""
        return attr.exprId()

    @staticmethod
    def data_type(expr: JExpr) -> Any:
        return expr.dataType()

    @staticmethod
    def is_deterministic(expr: JExpr) -> bool:
        return bool(expr.deterministic())

    def _descendants(self, expr: JExpr) -> list[JExpr]:
        out, stack = [], [expr]
        while stack:
            e = stack.pop()
            out.append(e)
            stack.extend(self.to_list(e.children()))
        return out

    def expression_classes(self, expr: JExpr) -> list[str]:
        """Class names of ``expr`` and all its descendants."""
        return [self.class_name(e) for e in self._descendants(expr)]

    def conjuncts(self, expr: JExpr) -> list[JExpr]:
        """The top-level conjuncts of ``expr`` (itself when it is no ``And``)."""
        out, todo = [], [expr]
        while todo:
            e = todo.pop(0)
            if self.class_name(e) == "And":
                todo[:0] = [e.left(), e.right()]
            else:
                out.append(e)
        return out
