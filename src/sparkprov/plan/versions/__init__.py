"""The Spark lines sparkprov supports: one adapter per line for what differs between
them, and the check that a session runs one of them.

Everything specific to a Spark line is here, a module per line. ``SparkLine``
(``spark43``) makes the calls as the newest line takes them; each older line's adapter
overrides only the calls that differ on it. ``Bridge`` picks its session's adapter once
(``line_of``) and asks it. Each difference was found by reading the lines' classes
(``javap`` against each wheel's jars) and PySpark's sources:

============================  ========================================  ===================
call                          newest form (4.3)                         older form
============================  ========================================  ===================
``InlineCTE(...)``            three flags (``isAnalysis`` added)        4.0 to 4.2: two;
                                                                        3.5: one
``Deduplicate(...)``          keys, child, ``Option[DeduplicateSpec]``  4.0 to 4.2, 3.5: no
                                                                        spec
``Aggregate(...)``            keys, exprs, child, ``Option`` of a hint  3.5: no hint
``Window.copy(...)``          exprs, partition, order, child, hint      3.5: no hint
``LogicalRelation(...)``      relation, output, table, streaming,       3.5: no stream
                              stream
Scala sequences               2.13: ``appended``, ``appendedAll``;      3.5 (2.12): ``:+``,
                              ``immutable.Seq`` in signatures           ``++`` with a
                                                                        builder;
                                                                        ``collection.Seq``
Java helpers                  ``plan/java/<name>.java``                 3.5: 2.12's names
                                                                        (``java/spark35/``
                                                                        where renaming
                                                                        does not do)
``Dataset.ofRows``            ``org.apache.spark.sql.classic.Dataset``  3.5:
                                                                        ``...sql.Dataset``
Column <-> expression         ``classic.ExpressionUtils``; PySpark's    3.5: ``Column.expr``,
                              ``pyspark.sql.classic`` classes           ``new Column``;
                                                                        ``pyspark.sql``'s
``Observation`` registered    ``observationManager().register``         3.5: its private
                                                                        ``register``
``Observation.getRow``        the observed metrics as one ``Row``       4.0: a ``Map``
analysis errors logged        to PySpark's query context loggers        3.5: not logged
grouped iterator UDFs         ``applyInPandas``/``applyInArrow`` with   4.0, 3.5: absent
                              iterators (eval types 212, 213)
``PythonUDTF``                table arguments marked; ``copy`` of ten   4.0, 3.5: unmarked
                              arguments                                 (a struct is taken
                                                                        for a table); 4.0:
                                                                        nine, 3.5: seven
mapInArrow's node             ``MapInArrow``                            3.5:
                                                                        ``PythonMapInArrow``
``DataFrame.toArrow``         PySpark's                                 3.5: from the Arrow
                                                                        batches
``createDataFrame`` of Arrow  PySpark's                                 3.5: the batches
                                                                        handed to the JVM
``Column.try_cast``           PySpark's                                 3.5: SQL's
                                                                        ``try_cast``
``Observation.get``           Python values                             4.0, 3.5: arrays
                                                                        as Py4J proxies
                                                                        (capture observes a
                                                                        string instead)
``PythonEvalType``            ``pyspark.util``                          3.5: ``pyspark.rdd``
============================  ========================================  ===================

Spark Connect sessions have no Catalyst plans to read: a ``Bridge`` is made for a
classic session only.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> line_of(spark).version == spark_version(spark)
True
>>> sorted(SUPPORTED_LINES) == [(3, 5), (4, 0), (4, 1), (4, 2), (4, 3)]
True
"""

from __future__ import annotations

import weakref
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.column import Column
from pyspark.sql.types import DataType, StructType

from ...errors import SparkUnsupported
from .spark35 import _Spark35
from .spark40 import _Spark40
from .spark41 import _Spark41
from .spark42 import _Spark42
from .spark43 import SparkLine

try:
    from pyspark.util import PythonEvalType
except ImportError:  # PySpark 3.5 keeps it in pyspark.rdd
    from pyspark.rdd import PythonEvalType  # type: ignore[no-redef]

__all__ = [
    "NEWEST",
    "PythonEvalType",
    "SUPPORTED_LINES",
    "SparkLine",
    "arrow_dataframe",
    "check_supported",
    "installed_line",
    "line_of",
    "python_eval_types",
    "spark_version",
    "to_arrow",
    "try_cast",
]

SUPPORTED_LINES: dict[tuple[int, int], SparkLine] = {
    line.version: line for line in (SparkLine(), _Spark42(), _Spark41(), _Spark40(), _Spark35())
}

NEWEST = max(SUPPORTED_LINES)  # the line make test runs the whole suite on


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def spark_version(spark: SparkSession) -> tuple[int, int]:
    return _line(spark.version)


def _supported(version: str) -> SparkLine:
    line = SUPPORTED_LINES.get(_line(version))
    if line is None:
        names = ", ".join(SUPPORTED_LINES[v].name for v in sorted(SUPPORTED_LINES))
        raise SparkUnsupported(f"sparkprov supports the Spark lines {names}; this session runs Spark {version}")
    return line


# a context's line: spark.version asks the JVM (a round trip), and line_of is asked on
# hot paths (every capture's watched jobs, every trace's rows by rid)
_LINES: weakref.WeakKeyDictionary[Any, SparkLine] = weakref.WeakKeyDictionary()


def line_of(spark: SparkSession) -> SparkLine:
    """The adapter of a classic session's Spark line; ``SparkUnsupported`` for a Spark
    Connect session or a line sparkprov does not support."""
    if not hasattr(spark, "_jsparkSession"):
        raise SparkUnsupported(
            "sparkprov needs a classic SparkSession with a JVM; Spark Connect sessions do not expose Catalyst plans"
        )
    line = _LINES.get(spark._sc)
    if line is None:
        line = _LINES[spark._sc] = _supported(spark.version)
    return line


def installed_line() -> SparkLine:
    """The adapter of the installed PySpark's line, for what PySpark alone decides (its
    classes), before any session; ``SparkUnsupported`` for a line sparkprov does not
    support."""
    return _supported(pyspark.__version__)


def to_arrow(df: DataFrame) -> pa.Table:
    """``df``'s rows collected as an Arrow table, as the installed PySpark can."""
    return installed_line().to_arrow(df)


def arrow_dataframe(spark: SparkSession, table: pa.Table, schema: StructType | None = None) -> DataFrame:
    """A DataFrame of Arrow ``table``'s rows (with ``schema``, else the table's own)."""
    return line_of(spark).arrow_dataframe(spark, table, schema)


def try_cast(column: str, data_type: DataType) -> Column:
    """Column ``column`` cast to ``data_type``, NULL where it cannot be."""
    return installed_line().try_cast(column, data_type)


def check_supported(spark: SparkSession) -> None:
    """Raises ``SparkUnsupported`` unless ``line_of(spark)`` finds the session's line."""
    line_of(spark)


def python_eval_types(*names: str) -> tuple[int, ...]:
    """The codes of the named ``PythonEvalType``s this PySpark has: a form a line lacks
    (the grouped iterator functions of 4.0 and 3.5) is never met in its plans."""
    return tuple(getattr(PythonEvalType, n) for n in names if hasattr(PythonEvalType, n))
