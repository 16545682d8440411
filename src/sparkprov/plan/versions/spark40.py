"""The Spark 4.0 line: 4.1's calls, but an ``Observation`` holds its metrics as a map
and a ``PythonUDTF`` does not mark its table arguments."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql.types import StructType

from ..handles import CATALYST
from .spark41 import _Spark41


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
        # 4.0's PythonUDTF does not mark its table arguments (nor does 3.5's):
        # f(TABLE(t)) passes t's rows as a struct argument, as a struct the caller builds
        # is passed. Any struct argument is taken for a table (whole partitions, coarse,
        # said in explain()): never narrower than the truth
        struct = bridge.jvm.java.lang.Class.forName("org.apache.spark.sql.types.StructType")
        if any(struct.isInstance(bridge.data_type(arg)) for arg in bridge.to_list(udtf.children())):
            return f"takes a table argument or a struct (Spark {self.name} does not tell them apart)"
        return None

    def udtf_copy(self, bridge: Any, udtf: Any, func: Any, schema: Any, extra: list[Any]) -> Any:
        # 4.0's PythonUDTF has no table arguments field
        return udtf.copy(*self._udtf_fields(bridge, udtf, func, schema, extra))
