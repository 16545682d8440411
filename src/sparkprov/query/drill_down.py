"""Drill-down tables: a workload's aggregation over each output row's backward lineage,
computed at capture (Smoke's group-by push-down), and answers read from them.

A capture whose workload declares ``group_by`` for a source (``capture/workload.py``)
stores, per output row and group of the source rows behind it, the partial state of
each aggregate (a count, a sum, a minimum, a maximum; a sum and a count for ``avg``).
A consuming query that aggregates the backward lineage of some output rows (a
cross-filter: the rows behind the selected bars, by ship mode) is then answered from
those few partial rows, without reading the pairs or the source rows behind them.

Combining partial states over several output rows is exact only when no source row
is behind two of them (their lineages are disjoint: an aggregate's groups, unlike a
join's fan-out): capture records whether that holds. When it does not and the rows
asked for are not one output row, the answer is computed from the lineage itself.
Either way the answer is ``backward(rows, source).groupBy(by).agg(aggregates)``.

Layout: ``<capture data>/drill/<source number>/``, Parquet, with ``out_rid``, the
grouping columns (``__sp_b<i>``) and the partial states (``__sp_a<j>``, and
``__sp_a<j>_n`` for an average's count), and ``_sp_drill.json`` (``disjoint``).

>>> partial_columns([("count", "*"), ("avg", "x")])
[['__sp_a0'], ['__sp_a1', '__sp_a1_n']]
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import DecimalType

from ..capture.lineage import IN, OUT
from ..capture.workload import GroupBy, quoted
from ..sources.identity import RID
from ..store.catalog import publish_written
from ..store.entry import CaptureEntry
from ..store.layout import CaptureFolders
from .trace import RidSet

log = logging.getLogger("sparkprov")

_META = "_sp_drill.json"  # Spark and pyarrow skip files starting with "_"
# output rids a predicate matched that are merged in this process (a Python loop over
# their stored rows); more are merged by Spark
MERGED_HERE_MAX = 10_000


def table_path(entry: CaptureEntry, source: str) -> Path:
    """Where capture ``entry`` keeps ``source``'s drill-down table."""
    return CaptureFolders.of(entry).drill(entry.lineage.sources[source])


def read_meta(path: Path) -> dict:
    """What the table at ``path`` records beside its rows: ``disjoint`` (no source row
    behind two output rows), the aggregation (``by``, ``aggregates``) and its types."""
    return json.loads((path / _META).read_text())


def spec(entry: CaptureEntry, source: str) -> GroupBy | None:
    """The aggregation ``entry``'s workload declared for ``source``, or None."""
    declared = (entry.workload or {}).get("group_by", {}).get(source)
    return GroupBy.of(declared) if declared is not None else None


def partial_columns(parsed: list[tuple[str, str]]) -> list[list[str]]:
    """The partial-state columns of each aggregate, in the table."""
    return [[f"__sp_a{j}"] + ([f"__sp_a{j}_n"] if fn == "avg" else []) for j, (fn, _) in enumerate(parsed)]


def build(pairs: DataFrame, rows: DataFrame, group_by: GroupBy, path: Path) -> None:
    """Write the drill-down table of ``pairs`` (``out_rid``, ``in_rid``) over the source
    ``rows`` (with ``_sp_rid``) at ``path``."""
    parsed = group_by.parsed()
    decimal = _decimal_inputs(rows, parsed)
    values = [F.col(RID).alias(IN)] + [F.col(quoted(c)).alias(f"__sp_b{i}") for i, c in enumerate(group_by.by)]
    values += [F.col(quoted(c)).alias(f"__sp_v{j}") for j, (_, c) in enumerate(parsed) if c != "*"]
    joined = pairs.join(rows.select(*values), IN)
    states: list[Column] = []
    for j, ((fn, column), names) in enumerate(zip(parsed, partial_columns(parsed))):
        v = F.col(f"__sp_v{j}")
        if fn == "count":
            states.append(F.count(F.lit(1) if column == "*" else v).alias(names[0]))
        elif fn == "avg":  # as Spark's avg sums: decimals as decimals, the rest as doubles
            summed = v if j in decimal else v.cast("double")
            states += [F.sum(summed).alias(names[0]), F.count(v).alias(names[1])]
        else:
            states.append(getattr(F, fn)(v).alias(names[0]))
    keys = [OUT] + [f"__sp_b{i}" for i in range(len(group_by.by))]
    table = joined.groupBy(*keys).agg(*states)
    counted = pairs.agg(F.count(F.lit(1)), F.countDistinct(IN)).first()
    # the result types, so that answers need not read the source to know them: those
    # the aggregation gives over the rows, the sums an average divides, the columns'
    needed = dict.fromkeys([*group_by.by, *(c for _, c in parsed if c != "*")])
    types = {
        "direct": rows.groupBy().agg(*[F.expr(a) for a in group_by.aggregates]).schema.json(),
        "sums": rows.groupBy()
        .agg(*[F.sum(F.col(quoted(c))) if f == "avg" else F.lit(0) for f, c in parsed])
        .schema.json(),
        "columns": T.StructType([T.StructField(c, _field(rows.schema, c).dataType) for c in needed]).json(),
    }
    meta = {"disjoint": counted[0] == counted[1], **group_by.to_json(), **types}

    def write(tmp: Path) -> None:
        # sorted by output row within each file: an answer's reader skips row groups by it
        table.sortWithinPartitions(OUT).write.parquet(str(tmp))
        (tmp / _META).write_text(json.dumps(meta))

    publish_written(path, write)  # a concurrent builder may win: its table stands


def answer(spark, path: Path, group_by: GroupBy, out_rids: RidSet, traced: Callable[[], DataFrame]) -> DataFrame:
    """``group_by``'s aggregation over the backward lineage of ``out_rids``: from the
    table at ``path`` when its partial states combine exactly, else over ``traced()``
    (the source rows behind them).

    Rids given as a list are answered in this process: the table's rows for them are
    read with pyarrow (its row groups located by ``out_rid``) and merged here, and
    Spark only casts the merged states (a local relation, no job until read)."""
    meta = read_meta(path)
    if not (meta["disjoint"] or (isinstance(out_rids, list) and len(set(out_rids)) <= 1)):
        log.info("sparkprov: source rows behind several output rows overlap: drill-down computed from the lineage")
        return group_by.aggregated(traced())
    parsed = group_by.parsed()
    if isinstance(out_rids, list):
        merged = _merged_here(spark, path, group_by, out_rids, meta)
    else:
        table = spark.read.parquet(str(path))
        table = table.join(out_rids.select(F.col(RID).alias(OUT)).distinct(), OUT, "left_semi")
        states = [
            (F.sum if fn in ("count", "sum", "avg") else getattr(F, fn))(F.col(name)).alias(name)
            for (fn, _), names in zip(parsed, partial_columns(parsed))
            for name in names
        ]
        merged = table.groupBy(*[f"__sp_b{i}" for i in range(len(group_by.by))]).agg(*states)
    return _finished(merged, group_by, meta)


def _finished(merged: DataFrame, group_by: GroupBy, meta: dict) -> DataFrame:
    # merged states cast to the types the aggregation gives over the rows themselves (a
    # sum of sums is wider than a sum); an average divided as Spark's avg divides
    direct, sums = T.StructType.fromJson(json.loads(meta["direct"])), T.StructType.fromJson(json.loads(meta["sums"]))
    values: list[Column] = []
    parsed = group_by.parsed()
    for j, ((fn, _), names) in enumerate(zip(parsed, partial_columns(parsed))):
        kind = direct.fields[j].dataType
        value = F.col(names[0])
        if fn == "avg":
            total, count = value, F.col(names[1])
            if isinstance(kind, DecimalType):  # Spark's avg: the sum at its width over the count as a decimal
                total, count = total.cast(sums.fields[j].dataType), count.cast(DecimalType(20, 0))
            value = F.when(count != 0, total / count)
        values.append(value.cast(kind).alias(group_by.aggregates[j]))
    by = [F.col(f"__sp_b{i}").alias(c) for i, c in enumerate(group_by.by)]
    return merged.select(*by, *values)


def _merged_here(spark, path: Path, group_by: GroupBy, out_rids: list[int], meta: dict) -> DataFrame:
    """The partial states of ``out_rids`` merged per group in this process, as a
    DataFrame of local rows with the table's columns."""
    parsed = group_by.parsed()
    columns = partial_columns(parsed)
    read = pq.read_table(path, filters=[(OUT, "in", sorted(set(out_rids)))]) if out_rids else None
    merged: dict[tuple, list] = {}
    for row in read.to_pylist() if read is not None else []:
        key = tuple(row[f"__sp_b{i}"] for i in range(len(group_by.by)))
        states = merged.setdefault(key, [None] * sum(len(c) for c in columns))
        k = 0
        for (fn, _), names in zip(parsed, columns):
            for name in names:
                states[k] = _merge(fn if name == names[0] else "count", states[k], row[name])
                k += 1
    types = {f.name: f.dataType for f in T.StructType.fromJson(json.loads(meta["columns"])).fields}
    fields = [T.StructField(f"__sp_b{i}", types[c]) for i, c in enumerate(group_by.by)]
    for (fn, column), names in zip(parsed, columns):
        kind = T.LongType() if fn == "count" else types[column]
        if fn in ("sum", "avg") and isinstance(kind, DecimalType):  # wide enough for a sum of sums
            kind = T.DecimalType(38, kind.scale)
        elif fn == "sum":  # as Spark's sum: whole numbers as longs, the rest as doubles
            kind = T.LongType() if isinstance(kind, T.IntegralType) else T.DoubleType()
        elif fn == "avg":  # as build sums them
            kind = T.DoubleType()
        fields.append(T.StructField(names[0], kind))
        fields += [T.StructField(name, T.LongType()) for name in names[1:]]
    return spark.createDataFrame([k + tuple(v) for k, v in merged.items()], T.StructType(fields))


def _merge(fn: str, state, value):
    if value is None:
        return state
    if state is None:
        return value
    if fn in ("count", "sum", "avg"):
        return state + value
    if isinstance(state, float) and (math.isnan(state) or math.isnan(value)):  # Spark orders NaN above every number
        if math.isnan(state) and math.isnan(value):
            return state
        high, low = (state, value) if math.isnan(state) else (value, state)
        return low if fn == "min" else high
    return min(state, value) if fn == "min" else max(state, value)


def _decimal_inputs(rows: DataFrame, parsed: list[tuple[str, str]]) -> set[int]:
    return {
        j for j, (_, c) in enumerate(parsed) if c != "*" and isinstance(_field(rows.schema, c).dataType, DecimalType)
    }


def _field(schema: T.StructType, name: str) -> T.StructField:
    # Spark resolves column names without regard to case, as the workload was checked
    exact = [f for f in schema.fields if f.name == name]
    return (exact or [f for f in schema.fields if f.name.lower() == name.lower()])[0]
