"""The bridge to Catalyst through py4j.

Everything that names a Spark JVM class or relies on a constructor signature lives
here (or in ``rid_collector``, the Java source of an aggregate function), so that a
new Spark line needs changes in this package only. Plans and
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

import json
import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from py4j.java_gateway import JavaClass, JavaObject, JavaPackage, JVMView
from pyspark.logger import PySparkLogger
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..errors import InvalidArgument, SparkUnsupported, UnsupportedOperation
from . import rid_collector
from .jvm_errors import translating
from .references import compiled, described, elements, java_source, release_in_batches

JPlan = Any
JExpr = Any

_CAT = "org.apache.spark.sql.catalyst"

SUPPORTED_SPARK = (4, 3)  # the verified line: Catalyst constructors differ between lines
_EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
_DECORRELATE = "spark.sql.optimizer.decorrelateInnerQuery.enabled"
_HIDING_RULES = (
    f"{_CAT}.optimizer.ConvertToLocalRelation",
    "org.apache.spark.sql.execution.dynamicpruning.PartitionPruning",
    f"{_CAT}.optimizer.InjectRuntimeFilter",
    # removes a Window (or other operator) whose results nothing reads: the rows it
    # read would drop out of the lineage. The plan capture runs is optimized again,
    # with column pruning, so scans still read only the columns they need.
    f"{_CAT}.optimizer.ColumnPruning",
    # puts LIMIT 1 under the right side of a semi join without condition (EXISTS): the
    # lineage would keep one row per partition of the right side instead of all
    f"{_CAT}.optimizer.LimitPushDown",
)
_NOT_FILES = object()  # remembered for a LogicalRelation that is not over files
_FILE_GETTERS = ("getPath.toUri", "getLen", "getModificationTime")  # a file's entry, read in the JVM
_EMPTY_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):///")


def _uri(hadoop_path: Any) -> str:
    return _spelled(hadoop_path.toUri().toString())


def _spelled(uri: str) -> str:
    # Scans report "file:/x" where listings may say "file:///x": one spelling for both.
    return _EMPTY_AUTHORITY.sub(r"\1:/", uri)


# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovLeaves.java
_LEAVES_CLASS = "SparkprovLeaves"


# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovTree.java
_TREE_CLASS = "SparkprovTree"
_TREE_PATTERNS = ("PLAN_EXPRESSION", "GENERATOR", "SCALAR_SUBQUERY")  # asked of every node walked


# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovOptimize.java
_OPTIMIZE_CLASS = "SparkprovOptimize"


def _hidden_index(column: str, leaf: Any) -> UnsupportedOperation:
    return UnsupportedOperation(
        "LogicalRelation", leaf.simpleString(8), f"a Parquet column named {column} hides the row index"
    )


def _memo_entry(memo: dict, node: Any) -> list:
    # Bridge.remembering's entry for a proxy: the proxy itself (kept alive, so its id is
    # not reused), then one slot per thing asked (see Bridge._remembered)
    entry = memo.get(id(node))
    if entry is None:
        entry = memo[id(node)] = [node, None, None, None, None, None, None, None, None, None, None, None]
    return entry


class _Looked:
    """A py4j JVM view, package or class whose attributes (packages, classes, static
    members) are looked up once each: a lookup is a round trip to the JVM, and a
    capture builds hundreds of nodes from a few dozen classes."""

    __slots__ = ("_target", "_found")

    def __init__(self, target: Any) -> None:
        self._target = target
        self._found: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._found[name]
        except KeyError:
            pass
        found = getattr(self._target, name)
        if isinstance(found, JVMView | JavaPackage | JavaClass):
            found = _Looked(found)
        self._found[name] = found
        return found

    def __call__(self, *args: Any) -> Any:  # a class's constructor
        return self._target(*args)


# PySpark 4 logs an ERROR, with its stack, for every analysis error raised with a query
# context (``PySparkException._log_exception``), before the caller can handle it
_QUERY_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


class _OtherThreads(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextmanager
def quiet_analysis() -> Iterator[None]:
    """A block in which the analysis errors PySpark logs as it raises them are not
    logged from this thread: for probes (a user's predicate, a workload's column) whose
    failure sparkprov reports itself, as one error naming what was wrong.

    >>> with quiet_analysis():
    ...     pass
    """
    quiet = _OtherThreads()
    # made as PySpark makes them: a plain logger of that name would not take its arguments
    loggers = [PySparkLogger.getLogger(name) for name in _QUERY_CONTEXT_LOGGERS]
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


def spark_version(spark: SparkSession) -> tuple[int, int]:
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


def task_seconds(spark: SparkSession, after: int = -1) -> tuple[int, tuple[float, float, float]]:
    """Executor time spent by the stages finished since stage ``after``, from Spark's
    status store (what its UI shows; kept with the UI off too): the newest stage's id,
    and the tasks' summed run time, CPU time and JVM GC time, in seconds.

    Events reach the store asynchronously, so the listener bus is drained first: a job
    that just returned has its stages counted.

    >>> from pyspark.sql import SparkSession
    >>> spark = SparkSession.builder.getOrCreate()
    >>> newest, _ = task_seconds(spark)
    >>> _ = spark.range(1000).selectExpr("sum(id)").collect()
    >>> later, (run, cpu, gc) = task_seconds(spark, newest)
    >>> later > newest and run >= 0 and cpu > 0
    True
    """
    sc = spark.sparkContext
    jsc = sc._jsc.sc()  # type: ignore[union-attr]
    jsc.listenerBus().waitUntilEmpty(10_000)
    jvm = sc._jvm
    quantiles = sc._gateway.new_array(jvm.double, 0)  # type: ignore[union-attr]
    no_filter = jvm.java.util.ArrayList  # type: ignore[union-attr]
    # AppStatusStore.stageList(statuses, details, withSummaries, quantiles, taskStatuses):
    # every stage attempt the store keeps, newest first
    stages = jsc.statusStore().stageList(no_filter(), False, False, quantiles, no_filter())
    newest, run, cpu, gc = after, 0.0, 0.0, 0.0
    it = stages.iterator()
    while it.hasNext():
        s = it.next()
        stage = s.stageId()
        if stage <= after:
            break
        newest = max(newest, stage)
        if s.status().toString() == "COMPLETE":
            run += s.executorRunTime() / 1e3
            cpu += s.executorCpuTime() / 1e9
            gc += s.jvmGcTime() / 1e3
    return newest, (run, cpu, gc)


@translating
class Bridge:
    """Reads and builds Catalyst plans for one SparkSession."""

    def __init__(self, spark: SparkSession) -> None:
        if not hasattr(spark, "_jsparkSession"):
            raise SparkUnsupported(
                "sparkprov needs a classic SparkSession with a JVM; Spark Connect sessions do not expose Catalyst plans"
            )
        if spark_version(spark) != SUPPORTED_SPARK:
            raise SparkUnsupported(f"sparkprov supports Spark 4.3 (verified), found {spark.version}")
        self.spark = spark
        release_in_batches(spark)  # a capture lets go of hundreds of proxies
        self.jvm = _Looked(spark._jvm)
        self.jsession = spark._jsparkSession
        self._expr = getattr(self.jvm, f"{_CAT}.expressions")
        self._logical = getattr(self.jvm, f"{_CAT}.plans.logical")
        self._none = self.jvm.scala.Option.apply(None)
        self._fs_class: Any = None  # HadoopFsRelation's Class, once needed
        self._patterns: dict[str, Any] = {}
        self._classes: dict[str, Any] = {}  # expression classes by simple name
        self._empty: Any = None  # an empty Scala Seq, once needed
        self._row_index: tuple[str, Any] | None = None  # see _row_index_constants
        self._leaves: Any = None  # the compiled SparkprovLeaves (False: not compiled), once needed
        self._tree: Any = None  # the compiled SparkprovTree, likewise
        self._optimize: Any = None  # the compiled SparkprovOptimize, likewise
        self._walk = threading.local()  # .memo while remembering(): see there

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Within (in this thread), a plan node's name, children, output and tree-pattern
        bits are asked of the JVM once: plans are immutable, and capture walks one plan
        several times (checks, view names, the rewrite). Kept by the proxy object, which
        the memo keeps alive (so its ``id`` is not reused); children are the same
        proxies each time, so a walk from the same root hits the memo all the way down."""
        outer = getattr(self._walk, "memo", None)
        if outer is None:
            self._walk.memo = {}
        try:
            yield
        finally:
            if outer is None:
                self._walk.memo = None

    def _remembered(self, node: Any, slot: int, ask: Callable[[], Any]) -> Any:
        # slots: 1 name, 2 children, 3 output, 4 tree pattern bits asked ({pattern: bool}),
        # 5 file relation (a leaf's; _NOT_FILES for none), 6 file format, 7 root paths,
        # 8 files (5 to 8: several capture steps ask them of each leaf), 9 an
        # attribute's expression id, 10 a node's one-line description (``prefetch``),
        # 11 a leaf's output ids (``prefetch``, ``output_ids``)
        memo = getattr(self._walk, "memo", None)
        if memo is None:
            return None if slot == 4 else ask()
        entry = _memo_entry(memo, node)
        if entry[slot] is None:
            entry[slot] = ask()
        return entry[slot]

    # ---- scala values -------------------------------------------------------------
    def seq(self, items: list) -> Any:
        # List.of takes up to ten elements in one round trip; py4j's own conversion of a
        # Python list makes one per element. (List.of refuses nulls.)
        if any(item is None for item in items):
            jlist = self.jvm.java.util.ArrayList()
            for item in items:
                jlist.add(item)
        elif len(items) <= 10:
            jlist = self.jvm.java.util.List.of(*items)
        else:
            jlist = self.jvm.java.util.ArrayList(self.jvm.java.util.List.of(*items[:10]))
            for start in range(10, len(items), 10):
                jlist.addAll(self.jvm.java.util.List.of(*items[start : start + 10]))
        return self.jvm.org.apache.spark.api.python.PythonUtils.toSeq(jlist)

    def to_list(self, jseq: Any) -> list:
        listed = elements(self.spark, jseq)  # one round trip for the whole list
        if listed is not None:
            return listed
        return self._one_by_one(jseq)

    def _listed(self, owner: Any, method: str, getter: str | None = None, slot: int = 0) -> list:
        # owner.method()'s elements: one round trip for the collection and its elements,
        # and with ``getter``, what it answers for each element, remembered in ``slot``
        found = described(self.spark, owner, method, (getter,) if getter else ())
        if found is None:
            return self._one_by_one(getattr(owner, method)())
        memo = getattr(self._walk, "memo", None)
        if getter and memo is not None:
            for proxy, (value,) in found:
                _memo_entry(memo, proxy)[slot] = int(value) if slot == 9 else value
        return [proxy for proxy, _ in found]

    @staticmethod
    def _one_by_one(jseq: Any) -> list:
        # by position: one round trip per element (an iterator takes two); a long
        # list is copied into an indexed one first, where apply(i) does not walk
        n = jseq.size()
        if n > 32:
            jseq = jseq.toIndexedSeq()
        return [jseq.apply(i) for i in range(n)]

    def none(self) -> Any:
        return self._none

    # ---- reading plans ----------------------------------------------------------
    @staticmethod
    def analyzed(df: DataFrame) -> JPlan:
        return df._jdf.queryExecution().analyzed()

    def g1_region_bytes(self) -> int | None:
        """The driver JVM's G1 heap region size in bytes (None: it runs another collector,
        or the JVM does not say). Objects of half a region or more are "humongous" to
        G1: allocated and collected one by one, which an injected aggregate's large rid
        arrays make costly."""
        try:
            bean = self.jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
                self.jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
            )
            if bean.getVMOption("UseG1GC").getValue() != "true":
                return None
            return int(bean.getVMOption("G1HeapRegionSize").getValue())
        except Exception:  # another JVM vendor: no such bean or option
            return None

    @staticmethod
    def cached_relation(df: DataFrame) -> JPlan:
        """The cached relation standing for persisted ``df`` in plans (Spark's
        ``InMemoryRelation``, with ``df``'s own attribute ids): filled by the first
        job that reads it."""
        return df._jdf.queryExecution().withCachedData()

    def node_name(self, node: JPlan) -> str:
        """A plan node's operator name (its class's simple name: no operator sparkprov
        reads overrides Catalyst's ``nodeName``); one round trip."""
        return self._remembered(node, 1, node.nodeName)

    @staticmethod
    def class_name(obj: Any) -> str:
        """The simple class name of an expression (some override ``nodeName``)."""
        return obj.getClass().getSimpleName()

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

    def children(self, node: JPlan) -> list[JPlan]:
        # with their names, which every walk asks next
        kids = lambda: self._inheriting(node, self._listed(node, "children", "nodeName", 1))  # noqa: E731
        return list(self._remembered(node, 2, kids))

    def prefetch(self, root: JPlan) -> None:
        """While remembering: the names, children, one-line descriptions and common tree
        pattern bits of every node of ``root``'s tree, in one round trip (Py4J takes one
        per node and question). Nothing when ``root``'s children are already known."""
        memo = getattr(self._walk, "memo", None)
        if memo is None or _memo_entry(memo, root)[2] is not None or not self._tree_walker():
            return
        answer = self._tree.walk(root, 8, *(self._pattern(p) for p in _TREE_PATTERNS))
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
            entry = _memo_entry(memo, node)
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
            self._tree = compiled(self.spark, _TREE_CLASS, java_source(_TREE_CLASS), gateway) or False
        return self._tree

    def _pattern(self, pattern: str) -> Any:
        if pattern not in self._patterns:
            self._patterns[pattern] = getattr(getattr(self.jvm, f"{_CAT}.trees.TreePattern"), pattern)()
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
    def expr_sql(expr: JExpr) -> str:
        return expr.sql()

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
            self._classes[cls] = self.jvm.java.lang.Class.forName(f"{_CAT}.expressions.{cls}")
        wanted = self._classes[cls]
        found, stack = [], [expr]
        while stack:
            e = stack.pop()
            if wanted.isInstance(e):
                found.append(e)
            stack.extend(k for k in self.to_list(e.children()) if self.has_pattern(k, pattern))
        return found

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
        cls = self.jvm.java.lang.Class.forName(f"{_CAT}.expressions.SubqueryExpression")

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
            return self._logical.Aggregate(node.groupingExpressions(), self.seq(exprs), node.child(), node.hint())
        raise InvalidArgument(f"cannot replace a subquery in {op}")

    @staticmethod
    def is_correlated(subquery: JExpr) -> bool:
        return not subquery.outerAttrs().isEmpty()

    @staticmethod
    def subquery_plan(subquery: JExpr) -> JPlan:
        return subquery.plan()

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

    @staticmethod
    def is_deterministic(expr: JExpr) -> bool:
        return bool(expr.deterministic())

    def python_function(self, node: JPlan) -> tuple[Any, Any, list[JExpr]]:
        """The user's Python function of applyInPandas / mapInPandas / mapInArrow:
        ``(function, return type, argument expressions)``, unpickled as PySpark pickled it."""
        udf = node.functionExpr()
        func, return_type = self._unpickled(udf.func())
        return func, return_type, self.to_list(udf.children())

    def _unpickled(self, python_function: Any) -> Any:
        # what PySpark pickled into a JVM PythonFunction: (function, type) or a UDTF class
        from pyspark.serializers import CloudPickleSerializer

        raw = python_function.command().toArray(self.jvm.scala.reflect.ClassTag.Byte())
        return CloudPickleSerializer().loads(bytes(raw))

    def is_checkpoint(self, leaf: JPlan) -> bool:
        """Whether a leaf is the result of ``df.checkpoint()`` / ``localCheckpoint()``."""
        return self.node_name(leaf) == "LogicalRDD" and bool(leaf.rdd().isCheckpointed())

    @staticmethod
    def python_eval_type(node: JPlan) -> int:
        """How PySpark calls a node's Python function (``pyspark.util.PythonEvalType``)."""
        return int(node.functionExpr().evalType())

    def python_udtf(self, node: JPlan) -> tuple[type, bool]:
        """A Python UDTF node's handler class (unpickled as PySpark pickled it) and
        whether it takes a table argument (``f(TABLE(t))``: whole partitions)."""
        udtf = node.udtf()
        table_args = udtf.tableArguments()
        takes_table = not table_args.isEmpty() and any(self.to_list(table_args.get()))
        return self._unpickled(udtf.func()), takes_table

    def udtf_generate(self, node: JPlan, passed: list[JExpr], child: JPlan) -> JPlan:
        """A Python UDTF node as the Generate it was before the optimizer took the call
        out (a plan holding the extracted node is refused by the analyzer); ``passed``
        child columns come through, followed by the function's. The optimizer extracts
        the call again when the plan runs."""
        wanted = {self.expr_id(a) for a in passed}
        dropped = [i for i, a in enumerate(self.output(child)) if self.expr_id(a) not in wanted]
        return self._logical.Generate(node.udtf(), self.seq(dropped), False, self.none(), node.resultAttrs(), child)

    def udtf_passed_columns(self, node: JPlan) -> list[JExpr]:
        return self.to_list(node.requiredChildOutput())

    def grouping_attributes(self, node: JPlan) -> list[JExpr]:
        return self.to_list(node.groupingAttributes())

    def partition_id(self) -> JExpr:
        return self._expr.SparkPartitionID()

    def join_type(self, join: JPlan) -> str:
        """``Inner``, ``LeftSemi``, ... or ``ExistenceJoin(exists#12)``."""
        return join.joinType().toString()

    def condition_references(self, join: JPlan) -> list[JExpr]:
        """Attributes the join condition reads (none for a join without condition)."""
        cond = join.condition()
        if cond.isEmpty():
            return []
        return self.to_list(cond.get().references().toSeq())

    @staticmethod
    def is_empty(local_relation: JPlan) -> bool:
        return bool(local_relation.data().isEmpty())

    def grouping_expressions(self, agg: JPlan) -> list[JExpr]:
        return self._listed(agg, "groupingExpressions")

    def aggregate_expressions(self, agg: JPlan) -> list[JExpr]:
        return self._listed(agg, "aggregateExpressions")

    def project_list(self, project: JPlan) -> list[JExpr]:
        return self._listed(project, "projectList")

    def dedup_keys(self, dedup: JPlan) -> list[JExpr]:
        return self.to_list(dedup.keys())

    def is_positional_union(self, union: JPlan) -> bool:
        return not union.byName() and not union.allowMissingCol()

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

    # ---- leaves ------------------------------------------------------------------
    def file_relation(self, node: JPlan) -> Any | None:
        """The HadoopFsRelation behind a LogicalRelation, else None."""
        if self.node_name(node) != "LogicalRelation":
            return None
        found = self._remembered(node, 5, lambda: self._fs_relation(node))
        return None if found is _NOT_FILES else found

    def _fs_relation(self, node: JPlan) -> Any:
        rel = node.relation()
        if self._fs_class is None:
            self._fs_class = self.jvm.java.lang.Class.forName(
                "org.apache.spark.sql.execution.datasources.HadoopFsRelation"
            )
        return rel if self._fs_class.isInstance(rel) else _NOT_FILES

    def file_format(self, fs_relation: Any) -> str:
        return self._remembered(fs_relation, 6, lambda: str(fs_relation.fileFormat().toString()).lower())

    def files(self, fs_relation: Any) -> list[tuple[str, int, int]]:
        """(url-encoded path as ``_metadata.file_path`` shows it, size, mtime) per file."""
        return list(self._remembered(fs_relation, 8, lambda: self._file_entries(fs_relation)))

    def _file_entries(self, fs_relation: Any) -> list[tuple[str, int, int]]:
        # one round trip for all of them, not five per file
        found = described(self.spark, fs_relation.location(), "allFiles", _FILE_GETTERS)
        if found is None:
            return [self._file_entry(st) for st in self.to_list(fs_relation.location().allFiles())]
        return [(_spelled(uri), int(size), int(mtime)) for _, (uri, size, mtime) in found]

    @staticmethod
    def _file_entry(status: Any) -> tuple[str, int, int]:
        return _uri(status.getPath()), int(status.getLen()), int(status.getModificationTime())

    def root_paths(self, fs_relation: Any) -> list[str]:
        return list(self._remembered(fs_relation, 7, lambda: self._roots(fs_relation)))

    def _roots(self, fs_relation: Any) -> list[str]:
        found = described(self.spark, fs_relation.location(), "rootPaths", ("toUri",))
        if found is None:
            return [_uri(p) for p in self.to_list(fs_relation.location().rootPaths())]
        return [_spelled(uri) for _, (uri,) in found]

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
    def subquery_alias(node: JPlan) -> str | None:
        """The name of a SubqueryAlias node (``df.alias(name)``), else None."""
        if node.nodeName() != "SubqueryAlias":
            return None
        return str(node.alias())

    @staticmethod
    def view_name(view: JPlan) -> str:
        return view.desc().identifier().unquotedString()

    def same_result(self, a: JPlan, b: JPlan) -> bool:
        return bool(a.sameResult(b))

    # ---- building ----------------------------------------------------------------
    def alias(self, expr: JExpr, name: str, expr_id: Any | None = None) -> JExpr:
        eid = expr_id if expr_id is not None else self._expr.NamedExpression.newExprId()
        if self._empty is None:
            self._empty = self.seq([])  # immutable: one for every alias
        return self._expr.Alias(expr, name, eid, self._empty, self.none(), self._empty)

    def _leaves_helper(self) -> Any:
        if self._leaves is None:
            self._leaves = compiled(self.spark, _LEAVES_CLASS, java_source(_LEAVES_CLASS)) or False
        return self._leaves

    def with_file_rids(self, leaf: JPlan, files: list[str], row_bits: int, name: str) -> JPlan:
        """``leaf`` (a LogicalRelation over Parquet files) with a column ``name`` after its
        own: each row's rid, ``file number << row_bits | row index``, where the file
        number is the position of ``_metadata.file_path`` in ``files`` (a path not there
        fails the query; one file: the row index alone). The values
        ``sources/identity.rid_column`` gives through the DataFrame API, built as Catalyst
        nodes: selecting that column analyzes a new Dataset, tens of milliseconds per
        leaf, and a capture's plan has one leaf per relation it reads."""
        if len(files) == 1 and self._leaves_helper():
            # the rid is the row index: the whole leaf built in one round trip
            column, _ = self._row_index_constants()
            built = self._leaves.rowIndexRid(leaf, column, name)
            if built is None:
                raise _hidden_index(column, leaf)
            return built
        e, types = self._expr, self.jvm.org.apache.spark.sql.types.DataTypes
        read, index = self._reading_row_index(leaf)
        rid = e.KnownNotNull(index)
        if len(files) != 1:
            # the file source's metadata struct (named _metadata unless a data column is)
            metas = self.to_list(read.metadataOutput())
            found = [a for a in metas if a.dataType().getFieldIndex("file_path").isDefined()]
            if not found:
                raise UnsupportedOperation(
                    "LogicalRelation", leaf.simpleString(8), "the Parquet relation gives no file path"
                )
            meta = found[0]
            at = meta.dataType().fieldIndex("file_path")
            path = e.GetStructField(meta, at, self.jvm.scala.Option.apply("file_path"))
            # the paths as one array literal: one string split in the JVM, not a round
            # trip per file (URIs spell a line break %0A)
            broken = [f for f in files if "\n" in f]
            if broken:
                raise InvalidArgument(f"a file path with a line break: {broken[0]!r}")
            paths = self.jvm.java.util.regex.Pattern.compile("\n").split("\n".join(files))
            position = e.ArrayPosition(e.Literal.create(paths, types.createArrayType(types.StringType, False)), path)
            unknown = e.RaiseError(
                e.Concat(self.seq([self.string_literal("sparkprov: file not known to the capture: "), path]))
            )
            zero = e.Cast(self.int_literal(0), types.LongType, self.none())
            number = e.If(
                e.EqualTo(position, zero),  # array_position is 1-based, 0 when absent
                e.Cast(unknown, types.LongType, self.none()),
                e.Subtract(position, e.Cast(self.int_literal(1), types.LongType, self.none())),
            )
            rid = e.BitwiseOr(e.ShiftLeft(number, self.int_literal(row_bits)), rid)
            read = read.withMetadataColumns()
        # the leaf's columns with the rid appended, in the JVM: one call, not one per column
        return self._logical.Project(leaf.output().appended(self.alias(rid, name)), read)

    def _reading_row_index(self, leaf: JPlan) -> tuple[JPlan, JExpr]:
        """``leaf`` reading each row's index in its file as one more data column, and
        that column. The Parquet reader fills a requested column of this reserved name
        with the row index; ``_metadata.row_index`` reads the same column, but then
        wraps it in a ``_metadata`` struct built for every row, which costs as much
        again as the index itself (a lineitem scan at SF 1: 0.24 s plain, 0.35 s with
        ``_metadata.row_index``, 0.30 s with this column)."""
        column, empty_metadata = self._row_index_constants()
        rel = self.file_relation(leaf)
        schema = rel.dataSchema()
        if schema.getFieldIndex(column).isDefined():
            raise _hidden_index(column, leaf)
        types = self.jvm.org.apache.spark.sql.types
        # nullable: the reader requires it of a column the files do not hold
        field = types.StructField(column, types.DataTypes.LongType, True, empty_metadata)
        index = self.jvm.org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttribute(field)
        partitions = rel.partitionSchema()
        relation = self.jvm.org.apache.spark.sql.execution.datasources.HadoopFsRelation(
            rel.location(),
            partitions,
            schema.add(field),
            rel.bucketSpec(),
            rel.fileFormat(),
            rel.options(),
            rel.sparkSession(),
        )
        # a relation's columns are its data columns, then its partition columns
        output = leaf.output()
        partitioned = partitions.length()
        if partitioned:
            data = output.length() - partitioned
            output = output.take(data).appended(index).appendedAll(output.drop(data))
        else:
            output = output.appended(index)
        read = self.jvm.org.apache.spark.sql.execution.datasources.LogicalRelation(
            relation, output, leaf.catalogTable(), leaf.isStreaming(), leaf.stream()
        )
        return read, index

    def _row_index_constants(self) -> tuple[str, Any]:
        # the reserved column's name and an empty field metadata: the same for every leaf
        if self._row_index is None:
            parquet = self.jvm.org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
            empty = self.jvm.org.apache.spark.sql.types.Metadata.empty()
            self._row_index = (parquet.ROW_INDEX_TEMPORARY_COLUMN_NAME(), empty)
        return self._row_index

    @staticmethod
    def schema_json(plan: JPlan) -> str:
        """``plan``'s schema as PySpark spells it (``DataFrame.schema.json()``), read
        without making a Dataset of the plan."""
        return StructType.fromJson(json.loads(plan.schema().json())).json()

    def string_literal(self, value: str) -> JExpr:
        return self._expr.Literal.create(value, self.jvm.org.apache.spark.sql.types.DataTypes.StringType)

    def null_literal(self, data_type: Any) -> JExpr:
        return self._expr.Literal.create(None, data_type)

    def int_literal(self, value: int) -> JExpr:
        return self._expr.Literal.create(int(value), self.jvm.org.apache.spark.sql.types.DataTypes.IntegerType)

    def struct(self, exprs: list[JExpr]) -> JExpr:
        """A struct of ``exprs`` with positional field names (``_0``, ``_1``...): the
        expressions' own names may repeat (two ``ca_city`` of two joined tables), and
        Parquet cannot read back a struct with repeated field names."""
        return self.named_struct([(f"_{i}", e) for i, e in enumerate(exprs)])

    def project(self, exprs: list[JExpr], child: JPlan) -> JPlan:
        return self._logical.Project(self.seq(exprs), child)

    def aggregate_like(self, agg: JPlan, aggregate_exprs: list[JExpr], child: JPlan) -> JPlan:
        return self._logical.Aggregate(agg.groupingExpressions(), self.seq(aggregate_exprs), child, agg.hint())

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
        agg = e.aggregate.CollectList(attr).toAggregateExpression()
        if nested:
            agg = e.Flatten(agg)
        return e.ArrayDistinct(agg) if repeats else agg

    def any_value(self, attr: JExpr) -> JExpr:
        """``max(attr)`` as an aggregate expression: one of the group's values when
        they are all equal, NULL over no rows (or only NULLs)."""
        return self._expr.aggregate.Max(attr).toAggregateExpression()

    def first(self, attr: JExpr) -> JExpr:
        """``first(attr)`` as an aggregate expression, NULLs kept: the value of a group
        whose rows are all one row's copies (any type; ``max`` needs an ordered one)."""
        return self._expr.aggregate.First(attr, False).toAggregateExpression()

    def row_id(self) -> JExpr:
        """``monotonically_increasing_id()``: a number unique to each row of one run."""
        return self._expr.MonotonicallyIncreasingID()

    def deduplicate(self, keys: list[JExpr], child: JPlan) -> JPlan:
        # Spark 4.3 added a third constructor argument (Option[DeduplicateSpec]).
        return self._logical.Deduplicate(self.seq(keys), child, self.none())

    def expand_like(self, expand: JPlan, extra: list[JExpr], extra_output: list[JExpr], child: JPlan) -> JPlan:
        """``expand`` over ``child`` with ``extra`` appended to every projection and output."""
        projections = [self.seq(self.to_list(p) + extra) for p in self.to_list(expand.projections())]
        return expand.copy(self.seq(projections), self.seq(self.output(expand) + extra_output), child)

    @staticmethod
    def new_instance(attr: JExpr) -> JExpr:
        """A copy of ``attr`` with a fresh id (same name and type)."""
        return attr.newInstance()

    def is_except_all(self, node: JPlan) -> bool:
        return self.node_name(node) == "Except All"  # Except's name says whether it is ALL

    # ---- windows -------------------------------------------------------------------
    def window_parts(self, window: JPlan) -> tuple[list[JExpr], list[JExpr], list[JExpr]]:
        """(window expressions (named), partition spec, order spec) of a Window node."""
        return (
            self.to_list(window.windowExpressions()),
            self.to_list(window.partitionSpec()),
            self.to_list(window.orderSpec()),
        )

    def window_function(self, named: JExpr) -> tuple[str, JExpr, JExpr]:
        """(function class name, function, WindowExpression) of an aliased window expression."""
        wexpr = named.child()
        if self.class_name(wexpr) != "WindowExpression":
            raise InvalidArgument(f"not a window expression: {named.sql()}")
        fn = wexpr.windowFunction()
        return self.class_name(fn), fn, wexpr

    def frame(self, wexpr: JExpr) -> tuple[str, JExpr, JExpr]:
        """(``RowFrame`` or ``RangeFrame``, lower bound, upper bound) of a window expression."""
        f = wexpr.windowSpec().frameSpecification()
        return str(f.frameType().toString()).replace("$", ""), f.lower(), f.upper()

    def is_unbounded(self, bound: JExpr) -> bool:
        return self.class_name(bound).rstrip("$") in ("UnboundedPreceding", "UnboundedFollowing")

    def offset_value(self, fn: JExpr) -> int:
        """The signed row offset of lag (negative) or lead (positive)."""
        return int(fn.offset().eval(None))

    def count_over(self, like: JExpr, frame_type: str, lower: JExpr | str, upper: JExpr | str) -> JExpr:
        """``count(1)`` over ``like``'s partition and order with the given frame.

        Bounds are expressions or the strings ``unbounded_preceding``,
        ``unbounded_following`` and ``current_row``.
        """
        e = self._expr
        kinds = {"RowFrame": "RowFrame$", "RangeFrame": "RangeFrame$"}
        ftype = getattr(getattr(e, kinds[frame_type]), "MODULE$")
        named = {
            "unbounded_preceding": "UnboundedPreceding$",
            "unbounded_following": "UnboundedFollowing$",
            "current_row": "CurrentRow$",
        }
        lo = getattr(getattr(e, named[lower]), "MODULE$") if isinstance(lower, str) else lower
        hi = getattr(getattr(e, named[upper]), "MODULE$") if isinstance(upper, str) else upper
        spec = like.windowSpec()
        new_spec = spec.copy(spec.partitionSpec(), spec.orderSpec(), e.SpecifiedWindowFrame(ftype, lo, hi))
        return like.copy(self._count_one(), new_spec)

    def _count_one(self) -> JExpr:
        # a resolved count(1), taken from a tiny analyzed plan, with a fresh result id
        agg = self.analyzed(self.spark.range(1).selectExpr("count(1)"))
        found = self.to_list(agg.aggregateExpressions())[0].child()
        return found.copy(
            found.aggregateFunction(),
            found.mode(),
            found.isDistinct(),
            found.filter(),
            self._expr.NamedExpression.newExprId(),
        )

    def window_like(self, window: JPlan, window_exprs: list[JExpr], child: JPlan) -> JPlan:
        return window.copy(self.seq(window_exprs), window.partitionSpec(), window.orderSpec(), child, window.hint())

    @staticmethod
    def to_attribute(named: JExpr) -> JExpr:
        return named.toAttribute()

    def long_literal(self, value: int) -> JExpr:
        # py4j passes small Python ints as Integer, which a bigint Literal refuses: let SQL build it
        project = self.analyzed(self.spark.range(1).selectExpr(f"{int(value)}L AS v"))
        return self._listed(project, "projectList")[0].child()

    def arithmetic(self, op: str, left: JExpr, right: JExpr) -> JExpr:
        """``left + right`` or ``left - right`` on longs."""
        return {"+": self._expr.Add, "-": self._expr.Subtract}[op](left, right)

    def named_struct(self, fields: list[tuple[str, JExpr]]) -> JExpr:
        args = []
        for name, value in fields:
            args.extend([self.string_literal(name), value])
        return self._expr.CreateNamedStruct(self.seq(args))

    def equi_join_keys(self, join: JPlan) -> tuple[list[JExpr], list[JExpr]] | None:
        """``(left keys, right keys)`` when ``join``'s condition is equalities between
        its two sides and nothing else (as Spark's planner reads it: a null-safe
        equality becomes a coalesced key and an IS NULL key); None otherwise."""
        found = self.jvm.org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys.unapply(join)
        if found.isEmpty() or found.get()._4().isDefined():
            return None
        return self.to_list(found.get()._2()), self.to_list(found.get()._3())

    def key_join(self, join: JPlan, left: JPlan, right: JPlan, left_keys: list, right_keys: list) -> JPlan:
        """An inner join of ``left`` and ``right`` on ``left_keys[i] = right_keys[i]``,
        with ``join``'s hint."""
        cond = None
        for lk, rk in zip(left_keys, right_keys, strict=True):
            eq = self._expr.EqualTo(lk, rk)
            cond = eq if cond is None else self._expr.And(cond, eq)
        inner = self.jvm.org.apache.spark.sql.catalyst.plans.JoinType.apply("inner")
        return self._logical.Join(left, right, inner, self.jvm.scala.Option.apply(cond), join.hint())

    def group_by(self, keys: list[JExpr], aggregate_exprs: list[JExpr], child: JPlan) -> JPlan:
        return self._logical.Aggregate(self.seq(keys), self.seq(aggregate_exprs), child, self.none())

    def inner_join_like(self, join: JPlan, left: JPlan, right: JPlan, broadcast_left: bool = False) -> JPlan:
        """An inner join with ``join``'s condition and hint over ``left`` and ``right``;
        ``broadcast_left`` hints Spark to broadcast ``left`` instead (for a left side
        that will be reduced to a few rows before the join runs)."""
        inner = self.jvm.org.apache.spark.sql.catalyst.plans.JoinType.apply("inner")
        hint = join.hint()
        if broadcast_left:
            some = self.jvm.scala.Option.apply
            broadcast = getattr(getattr(self._logical, "BROADCAST$"), "MODULE$")
            hint = self._logical.JoinHint(some(self._logical.HintInfo(some(broadcast))), hint.rightHint())
        return self._logical.Join(left, right, inner, join.condition(), hint)

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

    @staticmethod
    def outputs_overlap(a: JPlan, b: JPlan) -> bool:
        return not a.outputSet().intersect(b.outputSet()).isEmpty()

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

    def identity(self, obj: Any) -> int:
        """A number for this very JVM object (py4j hands out a new proxy per call)."""
        return int(self.jvm.java.lang.System.identityHashCode(obj))

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

    def in_subquery_filter(self, keys: list[JExpr], values: list[JExpr], plan: JPlan, child: JPlan) -> JPlan:
        """``child`` filtered by ``(keys) IN (SELECT values FROM plan)``: an uncorrelated
        IN subquery, which Spark's optimizer turns into a left semi join (broadcast
        when ``plan`` is small). ``plan`` may share attribute ids with ``child``'s
        subtree: Spark gives a subquery's plan its own when it makes the join."""
        e = self._expr
        listed = self.project([self.alias(v, f"__sp_key{i}") for i, v in enumerate(values)], plan)
        query = e.ListQuery(listed, self.seq([]), e.NamedExpression.newExprId(), len(values), self.seq([]), self.none())
        return self._logical.Filter(e.InSubquery(self.seq(keys), query), child)

    def leaf_bytes(self, plan: JPlan) -> int:
        """The size Catalyst estimates for the relations ``plan`` reads, summed (file
        sizes; a statistic, no job). Its estimate for ``plan`` itself is no bound
        without cost-based statistics: it multiplies the sizes of a join's inputs."""
        found = described(self.spark, plan, "collectLeaves", ("stats.sizeInBytes",))
        if found is not None:
            return sum(int(size) for _, (size,) in found)
        return sum(int(str(leaf.stats().sizeInBytes())) for leaf in self.to_list(plan.collectLeaves()))

    def conf_bytes(self, key: str, default: str) -> int:
        """A size from the session's conf, in bytes (``"512m"``, ``"4g"`` or a number)."""
        value = self.spark.conf.get(key, default)
        if value.strip().lstrip("-").isdigit():  # a plain number, -1 included (Spark's "off")
            return int(value)
        try:
            return int(self.jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(value))
        except Exception as e:  # py4j wraps Java's NumberFormatException
            raise InvalidArgument(f"{key} must be a size in bytes such as 512m or 4g, not {value!r}") from e

    def with_new_children(self, node: JPlan, children: list[JPlan]) -> JPlan:
        return node.withNewChildren(self.seq(children))

    def inline_ctes(self, plan: JPlan) -> JPlan:
        rule = getattr(self.jvm, f"{_CAT}.optimizer.InlineCTE")(True, False, False)
        return rule.apply(plan)

    def optimized(self, plan: JPlan) -> JPlan:
        """``plan`` through Spark's optimizer, minus the rules that would hide sources.

        Capture works on the optimized plan: subqueries are decorrelated into joins and
        INTERSECT/EXCEPT become joins and aggregates, so one rule per join or aggregate
        covers them all. Folding in-memory rows into new literal relations
        (ConvertToLocalRelation) would turn a source into a different relation, and the
        runtime-filter rules add subqueries the rewritten plan gets again anyway when it
        is optimized for execution. Those settings hold in this thread alone (a copy of
        the session's, by the compiled helper), unless ``optimizes_apart`` says otherwise.
        """
        state = self.jsession.sessionState()
        conf = state.conf()
        before = conf.getConfString(_EXCLUDED_RULES, "")
        changes = {
            _EXCLUDED_RULES: ",".join([r for r in before.split(",") if r] + list(_HIDING_RULES)),
            # the newer decorrelation joins a correlated subquery with the distinct
            # outer values it needs, re-read from the outer relation: those rows would
            # enter the lineage of every row sharing the value
            _DECORRELATE: "false",
        }
        helper = self._optimize_helper()
        if helper:
            return helper.optimize(state.optimizer(), conf, "\n".join(f"{k}={v}" for k, v in changes.items()), plan)
        with self.settings(changes):  # for a moment, the session's own: see optimizes_apart
            return state.optimizer().execute(plan.clone())

    def _optimize_helper(self) -> Any:
        if self._optimize is None:
            self._optimize = compiled(self.spark, _OPTIMIZE_CLASS, java_source(_OPTIMIZE_CLASS)) or False
        return self._optimize

    def optimizes_apart(self) -> bool:
        """Whether ``optimized`` leaves the session's settings alone (it changes them for
        the moment it runs when its JVM helper could not be compiled): a query may then
        be planned in another thread while it runs."""
        return bool(self._optimize_helper())

    @contextmanager
    def settings(self, values: dict[str, str]) -> Iterator[None]:
        """SQL settings changed for the duration of a block, then restored."""
        conf = self.jsession.sessionState().conf()
        saved = {k: conf.getConfString(k) if conf.contains(k) else None for k in values}
        for k, v in values.items():
            conf.setConfString(k, v)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    conf.unsetConf(k)
                else:
                    conf.setConfString(k, v)

    def to_dataframe(self, plan: JPlan) -> DataFrame:
        jdf = self.jvm.org.apache.spark.sql.classic.Dataset.ofRows(self.jsession, plan)
        return DataFrame(jdf, self.spark)

    def checked_dataframe(self, plan: JPlan) -> DataFrame:
        """A DataFrame of ``plan``, built resolved from analyzed or optimized nodes (a
        capture's rewritten plan): Spark's analysis checks run (missing attributes,
        types, conflicting references raise as usual), its resolution rules do not, as
        they would find nothing to resolve (TPC-H Q2's rewritten plan at SF 1: 43 ms
        analysed, 9 ms checked). A copy is marked analyzed, not ``plan``."""
        copy = plan.clone()
        self.jsession.sessionState().analyzer().checkAnalysis(copy)
        copy.setAnalyzed()  # Spark's analyzer returns an analyzed plan as it is
        return self.to_dataframe(copy)
