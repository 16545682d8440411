"""``SparkLine``: the calls that differ between Spark lines, made as the newest line
(4.3) takes them. An older line's adapter (a module of its own here) overrides what
differs on it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.column import Column
from pyspark.sql.types import DataType, StructType

from ..handles import CATALYST
from ..references import java_source

_DATASOURCES = "org.apache.spark.sql.execution.datasources"


class SparkLine:
    """The calls that differ between Spark lines, made as the newest line (4.3) takes
    them; an older line's adapter overrides what differs on it."""

    version: tuple[int, int] = (4, 3)
    # the line's names of plan operators that 4.3 names otherwise: Bridge.node_name
    # answers 4.3's, which capture's rules are keyed by
    operators: dict[str, str] = {}

    @property
    def name(self) -> str:
        return ".".join(map(str, self.version))

    # Catalyst's nodes and rules

    def inline_cte(self, jvm: Any) -> Any:
        """Catalyst's ``InlineCTE`` rule, inlining every CTE (``alwaysInline``)."""
        return getattr(jvm, f"{CATALYST}.optimizer.InlineCTE")(True, False, False)

    def deduplicate(self, logical: Any, keys: Any, child: Any, none: Any) -> Any:
        """A ``Deduplicate`` node over ``child`` (``keys``: a Scala sequence)."""
        return logical.Deduplicate(keys, child, none)

    def aggregate(self, logical: Any, keys: Any, exprs: Any, child: Any, like: Any, none: Any) -> Any:
        """An ``Aggregate`` node (``keys``, ``exprs``: Scala sequences) with the hint of
        ``like`` (an ``Aggregate``), or none when ``like`` is None."""
        return logical.Aggregate(keys, exprs, child, none if like is None else like.hint())

    def window_like(self, window: Any, exprs: Any, child: Any) -> Any:
        """``window`` (a ``Window`` node) with ``exprs`` over ``child``, its spec and hint kept."""
        return window.copy(exprs, window.partitionSpec(), window.orderSpec(), child, window.hint())

    def logical_relation(self, jvm: Any, relation: Any, output: Any, like: Any) -> Any:
        """A ``LogicalRelation`` of ``relation`` with ``output``, otherwise as ``like``."""
        made = getattr(jvm, f"{_DATASOURCES}.LogicalRelation")
        return made(relation, output, like.catalogTable(), like.isStreaming(), like.stream())

    def appended(self, jvm: Any, seq: Any, item: Any) -> Any:
        """Scala sequence ``seq`` with ``item`` after its elements, made in the JVM."""
        return seq.appended(item)

    def concatenated(self, jvm: Any, first: Any, second: Any) -> Any:
        """Scala sequences ``first`` then ``second``, as one, made in the JVM."""
        return first.appendedAll(second)

    def udtf_table_argument(self, bridge: Any, udtf: Any) -> str | None:
        """Why a ``PythonUDTF`` call hands its function whole partitions (a table
        argument, ``f(TABLE(t))``), or None when it does not."""
        table = udtf.tableArguments()
        return "takes a table argument" if table.isDefined() and any(bridge.to_list(table.get())) else None

    def udtf_copy(self, bridge: Any, udtf: Any, func: Any, schema: Any, extra: list[Any]) -> Any:
        """``udtf`` calling ``func`` with ``extra`` arguments after its own (plain values,
        not table arguments), giving rows of ``schema``."""
        table = udtf.tableArguments()
        if table.isDefined():
            table = bridge.jvm.scala.Some(bridge.seq([*bridge.to_list(table.get()), *[False] * len(extra)]))
        return udtf.copy(*self._udtf_fields(bridge, udtf, func, schema, extra), table)

    @staticmethod
    def _udtf_fields(bridge: Any, udtf: Any, func: Any, schema: Any, extra: list[Any]) -> list[Any]:
        # a PythonUDTF's fields up to its partition columns (4.0 has no more, 4.1 added
        # table arguments)
        return [
            udtf.name(),
            func,
            schema,
            udtf.pickledAnalyzeResult(),
            bridge.seq([*bridge.to_list(udtf.children()), *extra]),
            udtf.evalType(),
            udtf.udfDeterministic(),
            udtf.resultId(),
            udtf.pythonUDTFPartitionColumnIndexes(),
        ]

    # the Dataset API, on the JVM and in Python

    def dataset_of_rows(self, jvm: Any, jsession: Any, plan: Any) -> Any:
        """The JVM ``Dataset[Row]`` of ``plan`` (analyzed unless marked so)."""
        return jvm.org.apache.spark.sql.classic.Dataset.ofRows(jsession, plan)

    def to_arrow(self, df: DataFrame) -> pa.Table:
        """``df``'s rows collected as an Arrow table."""
        return df.toArrow()

    def arrow_dataframe(self, spark: SparkSession, table: pa.Table, schema: StructType | None = None) -> DataFrame:
        """A DataFrame of Arrow ``table``'s rows (with ``schema``, else the table's own)."""
        return spark.createDataFrame(table, schema=schema)

    def try_cast(self, column: str, data_type: DataType) -> Column:
        """Column ``column`` cast to ``data_type``, NULL where it cannot be."""
        from pyspark.sql import functions as F

        return F.col(column).try_cast(data_type)

    def dataframe_class(self) -> type[DataFrame]:
        """PySpark's class of a classic session's DataFrames (whose methods a script's
        hooks wrap)."""
        from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

        return ClassicDataFrame

    def column_expression(self, jvm: Any, column: Column) -> Any:
        """The Catalyst expression of a classic ``Column``."""
        return jvm.org.apache.spark.sql.classic.ExpressionUtils.expression(column._jc)

    def expression_column(self, jvm: Any, expr: Any) -> Column:
        """A classic ``Column`` of Catalyst expression ``expr``."""
        from pyspark.sql.classic.column import Column as ClassicColumn

        return ClassicColumn(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(expr))

    # observations

    def register_observation(self, spark: SparkSession, observation: Any, dataframe_id: int) -> None:
        """Make ``observation`` complete when a query of ``spark`` holding a
        ``CollectMetrics`` of its name and ``dataframe_id`` ends."""
        spark._jsparkSession.observationManager().register(observation, dataframe_id)

    def observed_row(self, jvm: Any, observation: Any, schema: StructType) -> bytes:
        """An ``Observation``'s metrics, one ``Row`` of ``schema``, pickled for Python."""
        return jvm.org.apache.spark.sql.api.python.PythonSQLUtils.toPyRow(observation.getRow())

    # PySpark

    def query_context_loggers(self) -> list[Any]:
        """The loggers PySpark logs an analysis error with a query context to as it
        raises it (``PySparkException._log_exception``)."""
        from pyspark.logger import PySparkLogger

        # made as PySpark makes them: a plain logger of that name would not take its arguments
        return [PySparkLogger.getLogger(name) for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger")]

    # the Java helpers

    def java_source(self, name: str) -> str:
        """The source of Java helper ``name`` (``plan/java/<name>.java``) this line compiles."""
        return java_source(name)
