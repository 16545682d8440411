"""The bridge to Catalyst through py4j.

Everything that names a Spark JVM class or relies on a constructor signature lives
here, so that a new Spark line needs changes in this module only. Plans and
expressions cross the boundary as opaque py4j handles (``JPlan``/``JExpr``); the
helpers below read and build them.

Supported: PySpark 4.3 in classic mode (not Spark Connect).

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> b.node_name(b.analyzed(spark.range(3)))
'Range'
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import DataFrame, SparkSession

JPlan = Any
JExpr = Any

_CAT = "org.apache.spark.sql.catalyst"

SUPPORTED_SPARK = (4, 3)  # the verified line: Catalyst constructors differ between lines
_EMPTY_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):///")


def _uri(hadoop_path: Any) -> str:
    # Scans report "file:/x" where listings may say "file:///x": one spelling for both.
    return _EMPTY_AUTHORITY.sub(r"\1:/", hadoop_path.toUri().toString())


def spark_version(spark: SparkSession) -> tuple[int, int]:
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


class Bridge:
    """Reads and builds Catalyst plans for one SparkSession."""

    def __init__(self, spark: SparkSession) -> None:
        if not hasattr(spark, "_jsparkSession"):
            raise TypeError(
                "sparkprov needs a classic SparkSession with a JVM; Spark Connect sessions do not expose Catalyst plans"
            )
        if spark_version(spark) != SUPPORTED_SPARK:
            raise RuntimeError(f"sparkprov supports Spark 4.3 (verified), found {spark.version}")
        self.spark = spark
        self.jvm = spark._jvm
        self.jsession = spark._jsparkSession
        self._expr = getattr(self.jvm, f"{_CAT}.expressions")
        self._logical = getattr(self.jvm, f"{_CAT}.plans.logical")

    # ---- scala values -------------------------------------------------------------
    def seq(self, items: list) -> Any:
        jlist = self.jvm.java.util.ArrayList()
        for item in items:
            jlist.add(item)
        return self.jvm.org.apache.spark.api.python.PythonUtils.toSeq(jlist)

    @staticmethod
    def to_list(jseq: Any) -> list:
        it = jseq.iterator()
        out = []
        while it.hasNext():
            out.append(it.next())
        return out

    def none(self) -> Any:
        return self.jvm.scala.Option.apply(None)

    # ---- reading plans ----------------------------------------------------------
    @staticmethod
    def analyzed(df: DataFrame) -> JPlan:
        return df._jdf.queryExecution().analyzed()

    @staticmethod
    def node_name(node: JPlan) -> str:
        return node.getClass().getSimpleName()

    def children(self, node: JPlan) -> list[JPlan]:
        return self.to_list(node.children())

    def output(self, node: JPlan) -> list[JExpr]:
        return self.to_list(node.output())

    def expressions(self, node: JPlan) -> list[JExpr]:
        return self.to_list(node.expressions())

    @staticmethod
    def tree_string(node: JPlan) -> str:
        return node.treeString()

    @staticmethod
    def expr_sql(expr: JExpr) -> str:
        return expr.sql()

    def contains_subquery(self, expr: JExpr) -> bool:
        return bool(self.jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression.hasSubquery(expr))

    def expression_classes(self, expr: JExpr) -> list[str]:
        """Class names of ``expr`` and all its descendants."""
        out = []
        stack = [expr]
        while stack:
            e = stack.pop()
            out.append(e.getClass().getSimpleName())
            stack.extend(self.to_list(e.children()))
        return out

    @staticmethod
    def is_deterministic(expr: JExpr) -> bool:
        return bool(expr.deterministic())

    def join_type(self, join: JPlan) -> str:
        return join.joinType().toString()

    def grouping_expressions(self, agg: JPlan) -> list[JExpr]:
        return self.to_list(agg.groupingExpressions())

    def aggregate_expressions(self, agg: JPlan) -> list[JExpr]:
        return self.to_list(agg.aggregateExpressions())

    def project_list(self, project: JPlan) -> list[JExpr]:
        return self.to_list(project.projectList())

    def dedup_keys(self, dedup: JPlan) -> list[JExpr]:
        return self.to_list(dedup.keys())

    def is_positional_union(self, union: JPlan) -> bool:
        return not union.byName() and not union.allowMissingCol()

    @staticmethod
    def attr_name(attr: JExpr) -> str:
        return attr.name()

    @staticmethod
    def expr_id(attr: JExpr) -> int:
        return int(attr.exprId().id())

    @staticmethod
    def jexpr_id(attr: JExpr) -> Any:
        """The ExprId object itself, to build an alias that keeps an attribute's identity."""
        return attr.exprId()

    @staticmethod
    def data_type(expr: JExpr) -> Any:
        return expr.dataType()

    # ---- leaves ------------------------------------------------------------------
    def file_relation(self, node: JPlan) -> Any | None:
        """The HadoopFsRelation behind a LogicalRelation, else None."""
        if self.node_name(node) != "LogicalRelation":
            return None
        rel = node.relation()
        if rel.getClass().getSimpleName() != "HadoopFsRelation":
            return None
        return rel

    def file_format(self, fs_relation: Any) -> str:
        return str(fs_relation.fileFormat().toString()).lower()

    def files(self, fs_relation: Any) -> list[tuple[str, int, int]]:
        """(url-encoded path as ``_metadata.file_path`` shows it, size, mtime) per file."""
        out = []
        for st in self.to_list(fs_relation.location().allFiles()):
            out.append(self._file_entry(st))
        return out

    @staticmethod
    def _file_entry(status: Any) -> tuple[str, int, int]:
        return _uri(status.getPath()), int(status.getLen()), int(status.getModificationTime())

    def root_paths(self, fs_relation: Any) -> list[str]:
        return [_uri(p) for p in self.to_list(fs_relation.location().rootPaths())]

    def list_files(self, paths: list[str]) -> list[tuple[str, int, int]]:
        """Files under ``paths`` now, as :meth:`files` reports them (for change checks)."""
        hconf = self.jsession.sessionState().newHadoopConf()
        out = []
        for p in paths:
            jpath = self.jvm.org.apache.hadoop.fs.Path(self.jvm.java.net.URI(p))
            fs = jpath.getFileSystem(hconf)
            if not fs.exists(jpath):
                continue
            it = fs.listFiles(jpath, True)
            while it.hasNext():
                st = it.next()
                if not st.getPath().getName().startswith((".", "_")):  # Spark skips these too
                    out.append(self._file_entry(st))
        return out

    @staticmethod
    def catalog_table_name(node: JPlan) -> str | None:
        table = node.catalogTable()
        if table.isDefined():
            return table.get().identifier().unquotedString()
        return None

    @staticmethod
    def view_name(view: JPlan) -> str:
        return view.desc().identifier().unquotedString()

    def same_result(self, a: JPlan, b: JPlan) -> bool:
        return bool(a.sameResult(b))

    # ---- building ----------------------------------------------------------------
    def alias(self, expr: JExpr, name: str, expr_id: Any | None = None) -> JExpr:
        eid = expr_id if expr_id is not None else self._expr.NamedExpression.newExprId()
        return self._expr.Alias(expr, name, eid, self.seq([]), self.none(), self.seq([]))

    def null_literal(self, data_type: Any) -> JExpr:
        return self._expr.Literal.create(None, data_type)

    def int_literal(self, value: int) -> JExpr:
        return self._expr.Literal.create(int(value), self.jvm.org.apache.spark.sql.types.DataTypes.IntegerType)

    def struct(self, exprs: list[JExpr]) -> JExpr:
        return self._expr.CreateStruct.apply(self.seq(exprs))

    def project(self, exprs: list[JExpr], child: JPlan) -> JPlan:
        return self._logical.Project(self.seq(exprs), child)

    def aggregate_like(self, agg: JPlan, aggregate_exprs: list[JExpr], child: JPlan) -> JPlan:
        return self._logical.Aggregate(agg.groupingExpressions(), self.seq(aggregate_exprs), child, agg.hint())

    def deduplicate(self, keys: list[JExpr], child: JPlan) -> JPlan:
        # Spark 4.3 added a third constructor argument (Option[DeduplicateSpec]).
        return self._logical.Deduplicate(self.seq(keys), child, self.none())

    def inner_join_like(self, join: JPlan, left: JPlan, right: JPlan) -> JPlan:
        """An inner join with ``join``'s condition and hint over ``left`` and ``right``."""
        inner = self.jvm.org.apache.spark.sql.catalyst.plans.JoinType.apply("inner")
        return self._logical.Join(left, right, inner, join.condition(), join.hint())

    def with_new_children(self, node: JPlan, children: list[JPlan]) -> JPlan:
        return node.withNewChildren(self.seq(children))

    def inline_ctes(self, plan: JPlan) -> JPlan:
        rule = getattr(self.jvm, f"{_CAT}.optimizer.InlineCTE")(True, False, False)
        return rule.apply(plan)

    def to_dataframe(self, plan: JPlan) -> DataFrame:
        jdf = self.jvm.org.apache.spark.sql.classic.Dataset.ofRows(self.jsession, plan)
        return DataFrame(jdf, self.spark)
