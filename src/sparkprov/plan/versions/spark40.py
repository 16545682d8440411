"""The Spark 4.0 line: 4.1's calls, but an ``Observation`` holds its metrics as a map."""

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
