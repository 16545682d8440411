"""What a capture is told about the lineage queries to come (Smoke section 4).

A declared workload lets capture skip what no query will read:

- ``sources``: lineage is kept only for the sources named, so the other sources' rids
  are not read, carried through joins, collected by aggregates or stored;
- ``where``: per source, a predicate (Spark SQL over the source's columns) that the
  consuming queries apply to the rows they trace back to (Smoke's selection push-down).
  A row of that source that fails it gets no rid at capture, so aggregates collect and
  the store keeps only the rows those queries can return. A backward trace to that
  source then answers the declared query (the rows behind, restricted to the
  predicate) and says so; a forward trace from it is refused, since rows that fail the
  predicate have no lineage left to follow.

- ``partition_by``: per source, the column the consuming queries' parameterized
  predicates test (Smoke's data skipping: a slider, a facet). Capture keeps that
  source's backward lineage partitioned by the column's value
  (``query/partitioned.py``), so ``Capture.backward(rows, source, where=...)`` with a
  predicate on that column reads only the partitions it selects.
- ``group_by``: per source, the grouping columns (and aggregates, ``count(*)`` by
  default) of an aggregation the consuming queries run over its backward lineage
  (Smoke's group-by push-down, for drill-down and cross-filtering). Capture stores,
  per output row, that aggregation over the row's lineage (``query/drill_down.py``),
  and ``Capture.drill_down`` answers from it.

Both directions share one pair table (the forward index is built from it on the first
forward trace), so there is no direction to prune at capture.

>>> Workload.of({"sources": ["orders"]})
Workload(sources=('orders',), where={}, group_by={}, partition_by={})
>>> Workload.of({"sources": ["lineitem"], "where": {"lineitem": "l_shipmode = 'AIR'"}}).where
{'lineitem': "l_shipmode = 'AIR'"}
>>> Workload.of(None) is None
True
>>> Workload.of({"sources": ["lineitem"], "group_by": {"lineitem": ["l_shipmode"]}}).group_by
{'lineitem': GroupBy(by=('l_shipmode',), aggregates=('count(*)',))}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DateType,
    IntegerType,
    LongType,
    NumericType,
    ShortType,
    StringType,
)
from pyspark.sql.utils import AnalysisException

from ..errors import InvalidArgument, InvalidPredicate
from ..plan.catalyst import quiet_analysis
from ..plan.predicate import check_predicate
from .restricted import (  # noqa: F401 - also imported from here
    no_such_source,
    refuse_forward,
    restricted_note,
    restriction,
    warn_restricted,
)

FIELDS = ("sources", "where", "group_by", "partition_by")
# column types whose values name a partition exactly (a directory name read back as the
# same value): categorical columns, and numbers or dates a user has discretized
PARTITION_TYPES = (StringType, ByteType, ShortType, IntegerType, LongType, DateType, BooleanType)
# the aggregates whose value over a union of disjoint row sets is computed from their
# values over each set (distributive, or algebraic as avg: a sum and a count)
AGGREGATES = ("count", "sum", "min", "max", "avg")
_AGGREGATE = re.compile(r"^\s*(\w+)\s*\(\s*(\*|`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")


def parse_aggregate(text: str, what: str = "workload group_by aggregate") -> tuple[str, str]:
    """``(function, column)`` of ``count(*)`` or one of ``AGGREGATES`` over one column
    (unquoted; ``*`` for a row count).

    >>> parse_aggregate("avg(`arr delay`)")
    ('avg', 'arr delay')
    """
    match = _AGGREGATE.match(text) if isinstance(text, str) else None
    function = match.group(1).lower() if match else None
    if function not in AGGREGATES or (match.group(2) == "*" and function != "count"):
        raise InvalidArgument(f"{what} {text!r} is not one of count(*) or {', '.join(AGGREGATES)} of one column")
    return function, match.group(2).strip("`")


@dataclass(frozen=True)
class GroupBy:
    """An aggregation consuming queries run over one source's backward lineage:
    grouped by the source's columns ``by``, computing ``aggregates`` (Spark SQL,
    ``count(*)``, ``count(c)``, ``sum(c)``, ``min(c)``, ``max(c)`` or ``avg(c)`` of a
    column ``c``).

    >>> GroupBy(["l_returnflag"], ["sum(l_quantity)", "count(*)"]).parsed()
    [('sum', 'l_quantity'), ('count', '*')]
    >>> GroupBy(["l_returnflag"], ["count(DISTINCT l_partkey)"])
    Traceback (most recent call last):
    ...
    sparkprov.errors.InvalidArgument: workload group_by aggregate 'count(DISTINCT l_partkey)' is not ...
    """

    by: Sequence[str]
    aggregates: Sequence[str] = ("count(*)",)

    def __post_init__(self) -> None:
        by, aggregates = self.by, self.aggregates
        if (
            isinstance(by, str)
            or not isinstance(by, Sequence)
            or not by
            or not all(isinstance(c, str) and c for c in by)
        ):
            raise InvalidArgument(f"workload group_by columns must be a non-empty list of column names, not {by!r}")
        if isinstance(aggregates, str) or not isinstance(aggregates, Sequence) or not aggregates:
            raise InvalidArgument(f"workload group_by aggregates must be a non-empty list, not {aggregates!r}")
        object.__setattr__(self, "by", tuple(by))
        object.__setattr__(self, "aggregates", tuple(aggregates))
        self.parsed()

    def parsed(self) -> list[tuple[str, str]]:
        """``(function, column)`` per aggregate, the column unquoted (``*`` for a row count)."""
        return [parse_aggregate(text) for text in self.aggregates]

    @classmethod
    def of(cls, value: GroupBy | Mapping | Sequence) -> GroupBy:
        """A list of grouping columns, ``{"by": [...], "aggregates": [...]}``, or a GroupBy."""
        if isinstance(value, GroupBy):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"by", "aggregates"}
            if unknown or "by" not in value:
                raise InvalidArgument(
                    f"workload group_by takes a list of columns or {{'by': [...], 'aggregates': [...]}}, not {value!r}"
                )
            return cls(**value)
        return cls(value)

    def to_json(self) -> dict:
        return {"by": list(self.by), "aggregates": list(self.aggregates)}

    def aggregated(self, rows: DataFrame) -> DataFrame:
        """The aggregation itself over ``rows``: what a drill-down answer equals."""
        by = [F.col(quoted(c)).alias(c) for c in self.by]  # named as declared
        return rows.groupBy(*by).agg(*[F.expr(a).alias(a) for a in self.aggregates])

    def check(self, rows: DataFrame, source: str) -> None:
        """Raise a ValueError when the aggregation cannot be computed over ``rows`` (the
        source's columns: an unknown column, a type without a sum); analysis only."""
        try:
            with quiet_analysis():
                self.aggregated(rows).schema  # noqa: B018
                summed = [
                    (fn, c, rows.select(F.col(quoted(c))).schema[0].dataType)
                    for fn, c in self.parsed()
                    if fn in ("sum", "avg")
                ]
        except AnalysisException as exc:
            raise InvalidArgument(
                f"workload group_by for source {source!r} cannot be computed over its rows: {exc}"
            ) from None
        for fn, column, kind in summed:  # their partial sums are kept as numbers
            if not isinstance(kind, NumericType):
                raise InvalidArgument(
                    f"workload group_by for source {source!r}: {fn} of column {column} ({kind.simpleString()}); "
                    "sum and avg are kept for numeric columns"
                )


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Workload:
    """The lineage queries a capture serves: ``sources`` are the sources traces will
    reach (backward to them, or forward from them); the others keep no lineage.
    ``where`` maps some of those sources to the predicate their traced rows will be
    filtered by: only rows that satisfy it keep lineage (backward traces only).
    ``group_by`` maps some of them to an aggregation drill-downs run over their traced
    rows (``GroupBy``, or its columns), ``partition_by`` to the column predicates
    picked at query time will test.

    >>> Workload(sources=["lineitem"]).sources
    ('lineitem',)
    >>> Workload(sources=["lineitem"], where={"orders": "o_orderstatus = 'F'"})
    Traceback (most recent call last):
    ...
    sparkprov.errors.InvalidArgument: workload where names source(s) ['orders'] not among its sources ['lineitem']
    """

    sources: Sequence[str]
    where: Mapping[str, str] = field(default_factory=dict)
    group_by: Mapping[str, GroupBy] = field(default_factory=dict)
    partition_by: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sources = self.sources
        if isinstance(sources, str) or not isinstance(sources, Sequence | set | frozenset):
            raise InvalidArgument(f"workload sources must be a list of source names, not {sources!r}")
        names = tuple(dict.fromkeys(sources))
        if not names or not all(isinstance(n, str) and n for n in names):
            raise InvalidArgument(f"workload sources must be a non-empty list of source names, not {list(sources)!r}")
        object.__setattr__(self, "sources", names)
        where = _per_source(self.where, names, "where", "predicates")
        for name, predicate in where.items():
            try:
                check_predicate(predicate)
            except InvalidPredicate as exc:
                raise InvalidPredicate(f"workload where for source {name!r}: {exc}") from None
        object.__setattr__(self, "where", dict(where))
        group_by = _per_source(self.group_by, names, "group_by", "grouping columns")
        object.__setattr__(self, "group_by", {k: GroupBy.of(v) for k, v in group_by.items()})
        partition_by = _per_source(self.partition_by, names, "partition_by", "a column")
        for name, column in partition_by.items():
            if not isinstance(column, str) or not column:
                raise InvalidArgument(
                    f"workload partition_by for source {name!r} must be one column name, not {column!r}"
                )
        object.__setattr__(self, "partition_by", dict(partition_by))

    @classmethod
    def of(cls, value: Workload | Mapping | None) -> Workload | None:
        """``value`` as a Workload: one already, a mapping of its fields, or None."""
        if value is None or isinstance(value, Workload):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - set(FIELDS)
            if unknown:
                raise InvalidArgument(
                    f"unknown workload field(s) {sorted(unknown)}; a workload declares 'sources' and may "
                    "declare 'where', 'group_by' and 'partition_by'"
                )
            if "sources" not in value:
                raise InvalidArgument("a workload declares 'sources': the sources traces will reach")
            return cls(**value)
        raise InvalidArgument(f"workload must be a Workload or a dict, not {type(value).__name__}")


def check_partition_column(rows: DataFrame, source: str, column: str) -> None:
    """Raise a ValueError unless ``column`` is one of ``rows``' columns with values that
    name a partition exactly (``PARTITION_TYPES``); analysis only."""
    try:
        with quiet_analysis():
            kind = rows.select(F.col(quoted(column))).schema[0].dataType
    except AnalysisException as exc:
        raise InvalidArgument(f"workload partition_by for source {source!r}: {exc}") from None
    if not isinstance(kind, PARTITION_TYPES):
        raise InvalidArgument(
            f"workload partition_by for source {source!r}: column {column} is {kind.simpleString()}; "
            "partition by a string, whole-number, date or boolean column (discretize others first)"
        )


def _per_source(value: object, names: tuple[str, ...], field: str, what: str) -> Mapping:
    """``value``, a workload field mapping some of ``names`` to ``what``, checked."""
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"workload {field} must map source names to {what}, not {value!r}")
    outside = sorted(k for k in value if k not in names)
    if outside:
        raise InvalidArgument(f"workload {field} names source(s) {outside} not among its sources {list(names)}")
    return value
