"""The Spark lines sparkprov supports: one adapter per line for what differs between
them, and the check that a session runs one of them.

Everything specific to a Spark line is here. ``SparkLine`` makes the calls as the
newest line takes them; each older line's adapter overrides only the calls that differ
on it. ``Bridge`` picks its session's adapter once (``line_of``) and asks it. Each
difference was found by reading the lines' classes (``javap`` against each wheel's
jars) and PySpark's sources:

=========================  =======================================  ==============
call                       newest form (4.3)                        older form
=========================  =======================================  ==============
``InlineCTE(...)``         three flags (``isAnalysis`` added)       4.0 to 4.2: two
``Deduplicate(...)``       keys, child, ``Option[DeduplicateSpec]`` 4.0 to 4.2: no spec
``Observation.getRow``     the observed metrics as one ``Row``      4.0: a ``Map``
grouped iterator UDFs      ``applyInPandas``/``applyInArrow`` with  4.0: absent
                           iterators (eval types 212, 213)
``PythonUDTF``             ``tableArguments``: which arguments are  4.0: absent (a
                           tables; ten constructor fields           struct is taken
                                                                    for a table);
                                                                    nine fields
=========================  =======================================  ==============

Spark Connect sessions have no Catalyst plans to read: a ``Bridge`` is made for a
classic session only.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> line_of(spark).version == spark_version(spark)
True
>>> sorted(SUPPORTED_LINES) == [(4, 0), (4, 1), (4, 2), (4, 3)]
True
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType
from pyspark.util import PythonEvalType

from ..errors import SparkUnsupported
from .handles import CATALYST


class SparkLine:
    """The calls that differ between Spark lines, made as the newest line (4.3) takes
    them; an older line's adapter overrides what differs on it."""

    version: tuple[int, int] = (4, 3)

    @property
    def name(self) -> str:
        return ".".join(map(str, self.version))

    def inline_cte(self, jvm: Any) -> Any:
        """Catalyst's ``InlineCTE`` rule, inlining every CTE (``alwaysInline``)."""
        return getattr(jvm, f"{CATALYST}.optimizer.InlineCTE")(True, False, False)

    def deduplicate(self, logical: Any, keys: Any, child: Any, none: Any) -> Any:
        """A ``Deduplicate`` node over ``child`` (``keys``: a Scala sequence)."""
        return logical.Deduplicate(keys, child, none)

    def observed_row(self, jvm: Any, observation: Any, schema: StructType) -> bytes:
        """An ``Observation``'s metrics, one ``Row`` of ``schema``, pickled for Python."""
        return jvm.org.apache.spark.sql.api.python.PythonSQLUtils.toPyRow(observation.getRow())

    def udtf_table_argument(self, bridge: Any, udtf: Any) -> str | None:
        """Why a Python UDTF call hands its function whole partitions (``f(TABLE(t))``),
        or None when it does not."""
        table = udtf.tableArguments()
        return "takes a table argument" if table.isDefined() and any(bridge.to_list(table.get())) else None

    def udtf_copy(self, bridge: Any, udtf: Any, func: Any, schema: Any, children: list, extra: int) -> Any:
        """``udtf`` calling ``func`` with ``children`` as arguments (its own, then
        ``extra`` plain values) and ``schema`` as its output."""
        table = udtf.tableArguments()
        if table.isDefined():
            table = bridge.jvm.scala.Some(bridge.seq([*bridge.to_list(table.get()), *[False] * extra]))
        return udtf.copy(*self._udtf_fields(bridge, udtf, func, schema, children), table)

    @staticmethod
    def _udtf_fields(bridge: Any, udtf: Any, func: Any, schema: Any, children: list) -> list:
        return [
            udtf.name(),
            func,
            schema,
            udtf.pickledAnalyzeResult(),
            bridge.seq(children),
            udtf.evalType(),
            udtf.udfDeterministic(),
            udtf.resultId(),
            udtf.pythonUDTFPartitionColumnIndexes(),
        ]


class _Spark42(SparkLine):
    version = (4, 2)

    def inline_cte(self, jvm: Any) -> Any:
        return getattr(jvm, f"{CATALYST}.optimizer.InlineCTE")(True, False)

    def deduplicate(self, logical: Any, keys: Any, child: Any, none: Any) -> Any:
        return logical.Deduplicate(keys, child)


class _Spark41(_Spark42):
    version = (4, 1)


class _Spark40(_Spark41):
    version = (4, 0)

    def observed_row(self, jvm: Any, observation: Any, schema: StructType) -> bytes:
        # 4.0's Observation holds its metrics as a Map, not a Row: the Row is made here
        # from the map's values in the schema's order
        metrics = observation.get()
        values = jvm.java.util.ArrayList()
        for field in schema.fields:
            values.add(metrics.apply(field.name))
        jschema = jvm.org.apache.spark.sql.types.DataType.fromJson(json.dumps(schema.jsonValue()))
        row = getattr(jvm, f"{CATALYST}.expressions.GenericRowWithSchema")(values.toArray(), jschema)
        return jvm.org.apache.spark.sql.api.python.PythonSQLUtils.toPyRow(row)

    def udtf_table_argument(self, bridge: Any, udtf: Any) -> str | None:
        # 4.0's PythonUDTF does not record which arguments are tables: a table argument
        # reaches it as a struct of the table's columns, as a struct passed in a LATERAL
        # call does, so any struct argument is taken for a table (coarse, and said so)
        structs = [c for c in bridge.to_list(udtf.children()) if c.dataType().typeName() == "struct"]
        return "takes a table argument or a struct (Spark 4.0 does not tell them apart)" if structs else None

    def udtf_copy(self, bridge: Any, udtf: Any, func: Any, schema: Any, children: list, extra: int) -> Any:
        return udtf.copy(*self._udtf_fields(bridge, udtf, func, schema, children))


SUPPORTED_LINES: dict[tuple[int, int], SparkLine] = {
    line.version: line for line in (SparkLine(), _Spark42(), _Spark41(), _Spark40())
}

NEWEST = max(SUPPORTED_LINES)  # the line make test runs the whole suite on


def spark_version(spark: SparkSession) -> tuple[int, int]:
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


def line_of(spark: SparkSession) -> SparkLine:
    """The adapter of a classic session's Spark line; ``SparkUnsupported`` for a Spark
    Connect session or a line sparkprov does not support."""
    if not hasattr(spark, "_jsparkSession"):
        raise SparkUnsupported(
            "sparkprov needs a classic SparkSession with a JVM; Spark Connect sessions do not expose Catalyst plans"
        )
    line = SUPPORTED_LINES.get(spark_version(spark))
    if line is None:
        names = ", ".join(SUPPORTED_LINES[v].name for v in sorted(SUPPORTED_LINES))
        raise SparkUnsupported(f"sparkprov supports the Spark lines {names}; this session runs Spark {spark.version}")
    return line


def check_supported(spark: SparkSession) -> None:
    """Raises ``SparkUnsupported`` unless ``line_of(spark)`` finds the session's line."""
    line_of(spark)


def python_eval_types(*names: str) -> tuple[int, ...]:
    """The codes of the named ``PythonEvalType``s this PySpark has: a form a line lacks
    (4.0's grouped iterator functions) is never met in its plans."""
    return tuple(getattr(PythonEvalType, n) for n in names if hasattr(PythonEvalType, n))
