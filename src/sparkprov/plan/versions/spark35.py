"""The Spark 3.5 line: Scala 2.12, no ``classic`` package, fewer hints and arguments.

Spark 3.5 is built with Scala 2.12: its nodes take and give ``scala.collection.Seq``
(not ``immutable.Seq``), whose ``:+`` and ``++`` take an implicit builder that Java and
Py4J pass by hand, and whose collections have no ``appended``/``appendedAll``. Its
Dataset and Column are ``org.apache.spark.sql.Dataset``/``Column`` (4.x moved them to
``classic``), and PySpark's ``DataFrame``/``Column`` are the classic ones themselves.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.column import Column
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import DataType, StructType

from ..references import JAVA, java_source
from .spark40 import _Spark40
from .spark43 import SparkLine

# the folder of plan/java holding the Java helpers' own sources for 3.5, where a
# renaming does not do (see java_source)
_OWN_SOURCES = "spark35"
# Scala 2.13's names in the helpers, as Scala 2.12 spells them
_SCALA_212 = (
    ("scala.collection.immutable.Seq", "scala.collection.Seq"),
    ("scala.collection.immutable.IndexedSeq", "scala.collection.IndexedSeq"),
)


class _Spark35(_Spark40):
    version = (3, 5)
    # mapInArrow's node (4.0 renamed it)
    operators = {"PythonMapInArrow": "MapInArrow"}

    # Catalyst's nodes and rules

    def inline_cte(self, jvm: Any) -> Any:
        return getattr(jvm, "org.apache.spark.sql.catalyst.optimizer.InlineCTE")(True)

    def aggregate(self, logical: Any, keys: Any, exprs: Any, child: Any, like: Any, none: Any) -> Any:
        # 3.5's Aggregate has no hint
        return logical.Aggregate(keys, exprs, child)

    def window_like(self, window: Any, exprs: Any, child: Any) -> Any:
        # 3.5's Window has no hint
        return window.copy(exprs, window.partitionSpec(), window.orderSpec(), child)

    def logical_relation(self, jvm: Any, relation: Any, output: Any, like: Any) -> Any:
        # 3.5's LogicalRelation has no streaming source
        made = getattr(jvm, "org.apache.spark.sql.execution.datasources.LogicalRelation")
        return made(relation, output, like.catalogTable(), like.isStreaming())

    def appended(self, jvm: Any, seq: Any, item: Any) -> Any:
        return getattr(seq, "$colon$plus")(item, _seq_builder(jvm))

    def concatenated(self, jvm: Any, first: Any, second: Any) -> Any:
        return getattr(first, "$plus$plus")(second, _seq_builder(jvm))

    def udtf_copy(self, bridge: Any, udtf: Any, func: Any, schema: Any, extra: list[Any]) -> Any:
        # 3.5's PythonUDTF has no analyze result, partition columns nor table arguments
        return udtf.copy(
            udtf.name(),
            func,
            schema,
            bridge.seq([*bridge.to_list(udtf.children()), *extra]),
            udtf.evalType(),
            udtf.udfDeterministic(),
            udtf.resultId(),
        )

    # the Dataset API, on the JVM and in Python

    def dataset_of_rows(self, jvm: Any, jsession: Any, plan: Any) -> Any:
        return jvm.org.apache.spark.sql.Dataset.ofRows(jsession, plan)

    def to_arrow(self, df: DataFrame) -> pa.Table:
        # DataFrame.toArrow came with 4.0: made here as 4.0 makes it from the batches
        # (3.5's schema conversion already puts timestamps in UTC); no rows, no batches
        schema = to_arrow_schema(df.schema)
        batches = df._collect_as_arrow()
        return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()

    def arrow_dataframe(self, spark: SparkSession, table: pa.Table, schema: StructType | None = None) -> DataFrame:
        # createDataFrame takes an Arrow table from 4.0 on: the table's batches are handed
        # to the JVM as 3.5's createDataFrame of a pandas frame hands its own (one batch
        # per partition), without making the frame
        from pyspark.sql.pandas.serializers import ArrowStreamSerializer

        schema = schema or from_arrow_schema(table.schema)
        table = table.cast(to_arrow_schema(schema))
        step = max(1, -(-table.num_rows // spark.sparkContext.defaultParallelism))
        batches = table.combine_chunks().to_batches(max_chunksize=step) or _schema_batch(table)
        jvm = spark._jvm
        jiter = spark.sparkContext._serialize_to_jvm(
            batches,
            ArrowStreamSerializer(),
            lambda path: jvm.PythonSQLUtils.readArrowStreamFromFile(path),
            lambda: jvm.ArrowIteratorServer(),
        )
        jdf = jvm.PythonSQLUtils.toDataFrame(jiter, schema.json(), spark._jsparkSession)
        return DataFrame(jdf, spark)

    def try_cast(self, column: str, data_type: DataType) -> Column:
        # Column.try_cast came with 4.0; SQL's try_cast is 3.5's
        from pyspark.sql import functions as F

        quoted = column.replace("`", "``")
        return F.expr(f"try_cast(`{quoted}` AS {data_type.simpleString()})")

    def dataframe_class(self) -> type[DataFrame]:
        return DataFrame

    def column_expression(self, jvm: Any, column: Column) -> Any:
        return column._jc.expr()

    def expression_column(self, jvm: Any, expr: Any) -> Column:
        return Column(jvm.org.apache.spark.sql.Column(expr))

    # observations

    def register_observation(self, spark: SparkSession, observation: Any, dataframe_id: int) -> None:
        # 3.5 has no observation manager: an Observation registers itself with a
        # listener of the session's queries (which checks the name and id as 4.x does)
        # in a private method, which Observation.on calls for a Dataset of its own; called
        # here by reflection for the plan's CollectMetrics
        jvm, gateway = spark._jvm, spark.sparkContext._gateway
        types = gateway.new_array(jvm.java.lang.Class, 2)
        types[0] = jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSession")
        types[1] = jvm.java.lang.Long.TYPE
        register = observation.getClass().getDeclaredMethod("register", types)
        register.setAccessible(True)
        args = gateway.new_array(jvm.java.lang.Object, 2)
        args[0] = spark._jsparkSession
        args[1] = jvm.java.lang.Long.valueOf(str(dataframe_id))
        register.invoke(observation, args)

    # 3.5's Observation has 4.3's getRow, where 4.0's has a map
    observed_row = SparkLine.observed_row

    # PySpark

    def query_context_loggers(self) -> list[Any]:
        # PySpark 3.5 logs nothing as it raises an analysis error (nor has pyspark.logger)
        return []

    # the Java helpers

    def java_source(self, name: str) -> str:
        if (JAVA / _OWN_SOURCES / f"{name}.java").exists():
            return java_source(name, _OWN_SOURCES)
        source = java_source(name)
        for newer, older in _SCALA_212:
            source = source.replace(newer, older)
        return source


def _schema_batch(table: pa.Table) -> list[pa.RecordBatch]:
    # no rows: one empty batch, which carries the schema
    return [pa.RecordBatch.from_pylist([], schema=table.schema)]


def _seq_builder(jvm: Any) -> Any:
    # the implicit CanBuildFrom of Scala 2.12's Seq, which :+ and ++ take
    return getattr(getattr(jvm.scala.collection, "Seq$"), "MODULE$").canBuildFrom()
