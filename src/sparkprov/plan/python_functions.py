"""The user's Python functions plan nodes call (applyInPandas, mapInPandas, mapInArrow,
Python UDTFs), unpickled as PySpark pickled them, and a Python UDTF node made the
Generate it was.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> def doubled(batches):
...     for batch in batches:
...         yield batch * 2
>>> node = b.analyzed(spark.range(3).mapInPandas(doubled, "id long"))
>>> function, return_type, arguments = b.python_function(node)
>>> function.__name__, b.python_eval_type(node), len(arguments)
('doubled', 205, 1)
"""

from __future__ import annotations

from typing import Any

from .handles import JExpr, JPlan


class PythonFunctions:
    """What ``Bridge`` reads of the nodes that call Python (a mixin: ``Bridge.__init__``
    sets the ``jvm``, ``line`` and ``_logical`` it uses)."""

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

    def python_udfs(self, node: JPlan) -> list[tuple[Any, int]]:
        """The Python UDFs (scalar, pandas, grouped-aggregate) ``node``'s own expressions
        call: ``(function, eval type)`` each, the function unpickled as PySpark pickled it."""
        found = []
        for e in self.expressions(node):
            if self.has_pattern(e, "PYTHON_UDF"):
                for d in self._descendants(e):
                    if self.class_name(d) in ("PythonUDF", "PythonUDAF"):
                        found.append((self._unpickled(d.func())[0], int(d.evalType())))
        return found

    @staticmethod
    def python_eval_type(node: JPlan) -> int:
        """How PySpark calls a node's Python function (``pyspark.util.PythonEvalType``)."""
        return int(node.functionExpr().evalType())

    def python_udtf(self, node: JPlan) -> tuple[type, str | None]:
        """A Python UDTF node's handler class (unpickled as PySpark pickled it) and why
        it takes whole partitions (a table argument, ``f(TABLE(t))``), or None."""
        udtf = node.udtf()
        return self._unpickled(udtf.func()), self.line.udtf_table_argument(self, udtf)

    def udtf_generate(
        self, node: JPlan, passed: list[JExpr], child: JPlan, call: tuple[JExpr, list[JExpr]] | None = None
    ) -> JPlan:
        """A Python UDTF node as the Generate it was before the optimizer took the call
        out (a plan holding the extracted node is refused by the analyzer); ``passed``
        child columns come through, followed by the function's. The optimizer extracts
        the call again when the plan runs. ``call``: another call and its output
        attributes (``udtf_calling``) in place of the node's."""
        wanted = {self.expr_id(a) for a in passed}
        dropped = [i for i, a in enumerate(self.output(child)) if self.expr_id(a) not in wanted]
        udtf, attrs = (call[0], self.seq(call[1])) if call is not None else (node.udtf(), node.resultAttrs())
        return self._logical.Generate(udtf, self.seq(dropped), False, self.none(), attrs, child)

    def udtf_calling(
        self, node: JPlan, handler: type, extra: list[JExpr], fields: list[tuple[str, Any]]
    ) -> tuple[JExpr, list[JExpr]]:
        """The node's UDTF call with ``handler`` as its class, ``extra`` arguments after
        its own (plain values, not table arguments) and ``fields`` (name, PySpark type)
        after its output columns; returns the call and its output attributes (the
        node's, then new ones for ``fields``)."""
        from pyspark.sql.udf import _wrap_function

        udtf = node.udtf()
        types = self.jvm.org.apache.spark.sql.types.DataType
        schema, attrs = udtf.elementSchema(), self.to_list(node.resultAttrs())
        for name, data_type in fields:
            jtype = types.fromJson(data_type.json())
            schema = schema.add(name, jtype)
            attrs.append(self.to_attribute(self.alias(self.null_literal(jtype), name)))
        call = self.line.udtf_copy(self, udtf, _wrap_function(self.spark.sparkContext, handler), schema, extra)
        return call, attrs

    def udtf_passed_columns(self, node: JPlan) -> list[JExpr]:
        return self.to_list(node.requiredChildOutput())
