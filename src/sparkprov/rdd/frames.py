"""Crossing between DataFrames and traced RDDs, with lineage that crosses too.

``LineageContext.from_dataframe(df)`` is ``df.rdd`` traced: ``df`` is captured and
its rows written into the store (as ``session.checkpoint`` does), and the RDD's
records are those rows, read in place as a source. ``LineageRDD.toDF()`` (or
``LineageContext.createDataFrame``) is the other way: the RDD's records are an
action's capture whose rows are written as Parquet, and the DataFrame reads them.

Either way the reading side's source is files a capture wrote, so
``backward(..., end_to_end=True)`` and ``forward(..., end_to_end=True)`` trace from
one API into the other (``Capture._through_writers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, LongType, StructField, StructType, _parse_datatype_string

from ..capture.run import storage_names
from ..errors import InvalidArgument
from ..sources.identity import RID, SourceInfo, rid_column
from .commit import ORDER, commit_frame
from .lineage_rdd import LineageRDD

if TYPE_CHECKING:
    from .context import LineageContext

_VALUE = "__sp_value"


def rdd_from_dataframe(ctx: LineageContext, df: DataFrame, name: str) -> LineageRDD:
    """The rows of ``df`` as a traced RDD of ``Row`` objects (see the module)."""
    if not isinstance(df, DataFrame):
        raise InvalidArgument(f"from_dataframe takes a DataFrame, not {type(df).__name__}")
    state, session = ctx._state, ctx.session
    spark, bridge = session.spark, session._bridge
    number = len(state.sources)
    source = state.source_name(name)
    path = state.folders.frame(f"{number}-{source}")
    session.capture(df, name, path=path)
    written = spark.read.parquet(str(path))
    relation = bridge.file_relation(bridge.analyzed(written))
    files = sorted(bridge.files(relation))
    roots = bridge.root_paths(relation)
    state.sources.append(SourceInfo(source, "parquet", "parquet", files, roots, files, written.schema.json()))
    row = F.struct(*[F.col(f"`{c}`") for c in written.columns])
    rows = written.select(rid_column(files).alias(RID), row.alias(_VALUE))
    records = rows.rdd.map(lambda r: ((r[0],), r[1]))
    return LineageRDD(ctx, records, [state.slot("source", number)])


def dataframe_from_rdd(
    rdd: LineageRDD,
    schema: Any = None,
    samplingRatio: float | None = None,
    verifySchema: bool = True,
    name: str | None = None,
) -> DataFrame:
    """``spark.createDataFrame(rdd, schema, ...)`` over the RDD's records, traced (see the module)."""
    ctx = rdd._ctx
    spark = ctx.session.spark
    values = rdd._rdd.map(lambda r: r[1])
    # PySpark's own inference and checks decide the columns and their types
    struct = spark.createDataFrame(values, schema, samplingRatio, verifySchema).schema
    atomic = _atomic(schema)
    slot_fields = [StructField(s.name, LongType() if s.kind == "source" else ArrayType(LongType())) for s in rdd._slots]
    staged_schema = StructType([StructField(_VALUE, struct), *slot_fields])
    rows = rdd._rdd.map(lambda r: ((r[1],) if atomic else _as_struct(r[1]), *r[0]))
    staged = spark.createDataFrame(rows, staged_schema, verifySchema=verifySchema)
    stored = storage_names(struct.names)
    columns = [staged[_VALUE][f.name].alias(s) for f, s in zip(struct.fields, stored)]
    # the records' order, written with them: a DataFrame made from an RDD keeps its order
    staged = staged.select(*columns, F.monotonically_increasing_id().alias(ORDER), *[s.name for s in rdd._slots])
    rdd.capture = capture = commit_frame(ctx, staged, [*struct.names, ORDER], rdd._slots, name)
    df = spark.read.parquet(capture._entry.written["path"])
    if len(capture._entry.written["files"]) > 1:  # Spark reads the largest file first
        df = df.orderBy(ORDER)
    return df.drop(ORDER)


def _atomic(schema: Any) -> bool:
    """Whether ``schema`` makes each record one column's value (``"int"``, ``IntegerType()``)."""
    if isinstance(schema, str):
        schema = _parse_datatype_string(schema)
    return isinstance(schema, DataType) and not isinstance(schema, StructType)


def _as_struct(value: Any) -> Any:
    # objects with attributes are read as PySpark reads them: their __dict__
    if isinstance(value, (tuple, list, dict)):
        return value
    return value.__dict__ if hasattr(value, "__dict__") else value
