"""``LineageRDD``: an RDD whose records carry the ids of the input records behind them.

Every method has PySpark's signature and meaning (``docs/semantics.md``: ``map``,
``filter``, ``mapValues`` are 1:1; ``flatMap``, ``flatMapValues`` generators; the
``...ByKey`` operators, ``groupBy`` and ``distinct`` group; ``join`` and its outer forms
join on the key; ``cogroup`` groups both inputs; ``union`` is UNION ALL; ``sortBy``
and ``sortByKey`` sort; ``mapPartitions`` is opaque: its whole input partition is
behind each record it returns). Other RDD methods raise ``UnsupportedOperation``.

Actions (``collect``, ``count``, ``take``, ``saveAsTextFile``) return what PySpark
returns and store a capture: the action's records with their lineage. It is
``rdd.capture`` afterwards, and ``rdd.get_lineage()`` is a cursor at its records.

>>> from sparkprov.rdd.lineage_rdd import SUPPORTED
>>> "reduceByKey" in SUPPORTED and "zipWithIndex" not in SUPPORTED
True
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from itertools import chain, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from pyspark import RDD
from pyspark.rdd import portable_hash
from pyspark.resultiterable import ResultIterable
from pyspark.sql import DataFrame

from ..errors import InvalidArgument, UnsupportedOperation
from . import worker
from .commit import commit_action

if TYPE_CHECKING:
    from ..api import Capture
    from ..api.cursor import LineageCursor
    from ..query.trace import RowsArg
    from .context import LineageContext

SUPPORTED = [
    "map",
    "flatMap",
    "filter",
    "mapValues",
    "flatMapValues",
    "mapPartitions",
    "keyBy",
    "keys",
    "values",
    "reduceByKey",
    "aggregateByKey",
    "combineByKey",
    "foldByKey",
    "groupByKey",
    "groupBy",
    "join",
    "leftOuterJoin",
    "rightOuterJoin",
    "fullOuterJoin",
    "cogroup",
    "union",
    "distinct",
    "sortBy",
    "sortByKey",
    "cartesian",
    "collect",
    "count",
    "take",
    "saveAsTextFile",
    "toDF",
    "cache",
    "persist",
    "unpersist",
    "getNumPartitions",
    "repartition",
    "coalesce",
]


class LineageRDD:
    """A traced RDD (see the module). Made by ``LineageContext``, never directly."""

    def __init__(self, ctx: LineageContext, rdd: RDD, slots: list, ops: tuple = ()) -> None:
        self._ctx = ctx
        self._base = rdd  # records: (slots tuple, value)
        self._ops = ops  # map / flatMap / filter on the values, not yet applied to _base
        self._applied: RDD | None = None
        self._slots = slots
        self.capture: Capture | None = None  # the last action's capture

    @property
    def _rdd(self) -> RDD:
        """The records, with the pending value operations applied (one RDD, made once)."""
        if self._applied is None:
            self._applied = self._base
            if self._ops:
                preserves = all(keep for _, _, keep in self._ops)
                self._applied = self._base.mapPartitions(_applied(self._ops), preserves)
        return self._applied

    def _derive(self, rdd: RDD, slots: list | None = None) -> LineageRDD:
        return LineageRDD(self._ctx, rdd, self._slots if slots is None else slots)

    def _pending(self, kind: str, f: Callable, preserves: bool) -> LineageRDD:
        # map, flatMap and filter wait: a grouping operator applies them inside its own
        # loop (worker.combine_partition), so a record's slots are not paired with every
        # value the chain makes on the way
        return LineageRDD(self._ctx, self._base, self._slots, (*self._ops, (kind, f, preserves)))

    def __getattr__(self, name: str) -> Any:
        if hasattr(RDD, name):
            raise UnsupportedOperation(
                f"RDD.{name}", "", f"sparkprov traces these RDD operations: {', '.join(SUPPORTED)}"
            )
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"LineageRDD({self._rdd!r})"

    # ---- 1:1 and generators: slots pass through ------------------------------------
    def map(self, f: Callable, preservesPartitioning: bool = False) -> LineageRDD:
        return self._pending("map", f, preservesPartitioning)

    def flatMap(self, f: Callable, preservesPartitioning: bool = False) -> LineageRDD:
        return self._pending("flatMap", f, preservesPartitioning)

    def filter(self, f: Callable) -> LineageRDD:
        return self._pending("filter", f, True)

    def mapValues(self, f: Callable) -> LineageRDD:
        return self._pending("map", lambda kv: (kv[0], f(kv[1])), True)

    def flatMapValues(self, f: Callable) -> LineageRDD:
        return self._pending("flatMap", lambda kv: zip(repeat(kv[0]), f(kv[1])), True)

    def keys(self) -> LineageRDD:
        return self._pending("map", itemgetter(0), False)

    def values(self) -> LineageRDD:
        return self._pending("map", itemgetter(1), False)

    def keyBy(self, f: Callable) -> LineageRDD:
        return self._pending("map", lambda v: (f(v), v), False)

    def sortBy(self, keyfunc: Callable, ascending: bool = True, numPartitions: int | None = None) -> LineageRDD:
        return self._derive(self._rdd.sortBy(lambda r: keyfunc(r[1]), ascending, numPartitions))

    def sortByKey(
        self, ascending: bool = True, numPartitions: int | None = None, keyfunc: Callable = lambda x: x
    ) -> LineageRDD:
        return self._derive(self._rdd.sortBy(lambda r: keyfunc(r[1][0]), ascending, numPartitions))

    def repartition(self, numPartitions: int) -> LineageRDD:
        return self._derive(self._rdd.repartition(numPartitions))

    def coalesce(self, numPartitions: int, shuffle: bool = False) -> LineageRDD:
        return self._derive(self._rdd.coalesce(numPartitions, shuffle))

    def cache(self) -> LineageRDD:
        return self.persist()

    def persist(self, *args: Any) -> LineageRDD:
        self._rdd.persist(*args)
        self._base, self._ops = self._rdd, ()  # what is derived from now on reads the kept records
        return self

    def unpersist(self, blocking: bool = False) -> LineageRDD:
        self._rdd.unpersist(blocking)
        return self

    def getNumPartitions(self) -> int:
        return self._rdd.getNumPartitions()

    def mapPartitions(self, f: Callable, preservesPartitioning: bool = False) -> LineageRDD:
        side = self._ctx._state.new_side("mapPartitions", self._slots)
        names, kinds = [s.name for s in self._slots], [s.kind for s in self._slots]
        run = worker.opaque_partition(side.path, names, kinds, f)
        return self._derive(self._rdd.mapPartitionsWithIndex(run, preservesPartitioning), [self._group_slot(side)])

    # ---- grouping: each record's partial groups, recorded per input partition ------
    def combineByKey(
        self,
        createCombiner: Callable,
        mergeValue: Callable,
        mergeCombiners: Callable,
        numPartitions: int | None = None,
        partitionFunc: Callable = portable_hash,
    ) -> LineageRDD:
        return self._combine("combineByKey", createCombiner, mergeValue, mergeCombiners, numPartitions, partitionFunc)

    def reduceByKey(
        self, func: Callable, numPartitions: int | None = None, partitionFunc: Callable = portable_hash
    ) -> LineageRDD:
        return self._combine("reduceByKey", lambda v: v, func, func, numPartitions, partitionFunc)

    def foldByKey(
        self, zeroValue: Any, func: Callable, numPartitions: int | None = None, partitionFunc: Callable = portable_hash
    ) -> LineageRDD:
        return self._combine(
            "foldByKey", lambda v: func(copy.deepcopy(zeroValue), v), func, func, numPartitions, partitionFunc
        )

    def aggregateByKey(
        self,
        zeroValue: Any,
        seqFunc: Callable,
        combFunc: Callable,
        numPartitions: int | None = None,
        partitionFunc: Callable = portable_hash,
    ) -> LineageRDD:
        create = lambda v: seqFunc(copy.deepcopy(zeroValue), v)  # noqa: E731
        return self._combine("aggregateByKey", create, seqFunc, combFunc, numPartitions, partitionFunc)

    def groupByKey(self, numPartitions: int | None = None, partitionFunc: Callable = portable_hash) -> LineageRDD:
        grouped = self._combine("groupByKey", _one, _append, _extend, numPartitions, partitionFunc)
        return grouped._pending("map", _iterable_values, True)

    def groupBy(
        self, f: Callable, numPartitions: int | None = None, partitionFunc: Callable = portable_hash
    ) -> LineageRDD:
        return self.keyBy(f).groupByKey(numPartitions, partitionFunc)

    def distinct(self, numPartitions: int | None = None) -> LineageRDD:
        keyed = self._pending("map", _with_none, False)
        pairs = keyed._combine("distinct", _none, _none2, _none2, numPartitions, portable_hash)
        return pairs._pending("map", itemgetter(0), False)

    def _combine(self, operator, create, merge_value, merge_combiners, numPartitions, partitionFunc) -> LineageRDD:
        side = self._ctx._state.new_side(operator, self._slots)
        names, kinds = [s.name for s in self._slots], [s.kind for s in self._slots]
        expand = worker.expander(self._ops) if self._ops else None
        partial = self._base.mapPartitionsWithIndex(
            worker.combine_partition(side.path, names, kinds, create, merge_value, expand)
        )
        merged = partial.reduceByKey(worker.merge_partials(merge_combiners), numPartitions, partitionFunc)
        records = merged.map(lambda kv: ((kv[1][1],), (kv[0], kv[1][0])))
        return self._derive(records, [self._group_slot(side)])

    def _group_slot(self, side):
        return self._ctx._state.slot("groups", side.index)

    # ---- two inputs ----------------------------------------------------------------
    def _check_other(self, other: Any, operator: str) -> None:
        if not isinstance(other, LineageRDD):
            raise InvalidArgument(
                f"{operator} takes a LineageRDD of the same LineageContext, not {type(other).__name__}"
            )
        if other._ctx is not self._ctx:
            raise InvalidArgument(f"{operator}: both RDDs must come from the same LineageContext")

    def _fresh(self, slots: list) -> list:
        # a second copy of an input (rdd.union(rdd)) needs slot columns of its own
        return [self._ctx._state.slot(s.kind, s.ref) for s in slots]

    def union(self, other: LineageRDD) -> LineageRDD:
        self._check_other(other, "union")
        left_n, right_n = len(self._slots), len(other._slots)
        a = self._rdd.map(lambda r: (r[0] + (None,) * right_n, r[1]))
        b = other._rdd.map(lambda r: ((None,) * left_n + r[0], r[1]))
        return self._derive(self._rdd.context.union([a, b]), self._slots + self._fresh(other._slots))

    def cartesian(self, other: LineageRDD) -> LineageRDD:
        self._check_other(other, "cartesian")
        pairs = self._rdd.cartesian(other._rdd).map(lambda p: (p[0][0] + p[1][0], (p[0][1], p[1][1])))
        return self._derive(pairs, self._slots + self._fresh(other._slots))

    def join(self, other: LineageRDD, numPartitions: int | None = None) -> LineageRDD:
        return self._join(other, "join", numPartitions)

    def leftOuterJoin(self, other: LineageRDD, numPartitions: int | None = None) -> LineageRDD:
        return self._join(other, "leftOuterJoin", numPartitions)

    def rightOuterJoin(self, other: LineageRDD, numPartitions: int | None = None) -> LineageRDD:
        return self._join(other, "rightOuterJoin", numPartitions)

    def fullOuterJoin(self, other: LineageRDD, numPartitions: int | None = None) -> LineageRDD:
        return self._join(other, "fullOuterJoin", numPartitions)

    def _join(self, other: LineageRDD, how: str, numPartitions: int | None) -> LineageRDD:
        # the joined pair: both records' slots; a missing side (outer joins) has none
        self._check_other(other, how)
        left_n, right_n = len(self._slots), len(other._slots)
        keyed_left = self._rdd.map(lambda r: (r[1][0], (r[0], r[1][1])))
        keyed_right = other._rdd.map(lambda r: (r[1][0], (r[0], r[1][1])))
        joined = getattr(keyed_left, how)(keyed_right, numPartitions)

        def pair(kv):
            key, (left, right) = kv
            ls, lv = left if left is not None else ((None,) * left_n, None)
            rs, rv = right if right is not None else ((None,) * right_n, None)
            return ls + rs, (key, (lv, rv))

        return self._derive(joined.map(pair), self._slots + self._fresh(other._slots))

    def cogroup(self, other: LineageRDD, numPartitions: int | None = None) -> LineageRDD:
        # each key's group of both inputs: one group slot per input
        self._check_other(other, "cogroup")
        left = self._combine("cogroup", _one, _append, _extend, None, portable_hash)
        right = other._combine("cogroup", _one, _append, _extend, None, portable_hash)
        keyed_left = left._rdd.map(lambda r: (r[1][0], (r[0][0], r[1][1])))
        keyed_right = right._rdd.map(lambda r: (r[1][0], (r[0][0], r[1][1])))

        def both(kv):
            key, (lefts, rights) = kv
            lh = [h for hs, _ in lefts for h in hs]
            rh = [h for hs, _ in rights for h in hs]
            lv = [v for _, vs in lefts for v in vs]
            rv = [v for _, vs in rights for v in vs]
            return (lh or None, rh or None), (key, (ResultIterable(lv), ResultIterable(rv)))

        grouped = keyed_left.cogroup(keyed_right, numPartitions).map(both)
        return self._derive(grouped, left._slots + right._slots)

    # ---- actions: each is a capture ------------------------------------------------
    def collect(self, name: str | None = None) -> list:
        """The records, as ``RDD.collect``; stored as a capture named ``name``."""
        values, self.capture = commit_action(self._ctx, self._rdd, self._slots, "collect", name)
        return values

    def take(self, num: int, name: str | None = None) -> list:
        """The first ``num`` records, as ``RDD.take``; stored as a capture."""
        records = self._rdd.take(num)
        values, self.capture = commit_action(self._ctx, records, self._slots, "take", name)
        return values

    def count(self, name: str | None = None) -> int:
        """The number of records, as ``RDD.count``; the counted records are stored as a capture."""
        n, self.capture = commit_action(self._ctx, self._rdd, self._slots, "count", name, RDD.count)
        return n

    def saveAsTextFile(self, path: str, name: str | None = None) -> None:
        """Write the records as text, as ``RDD.saveAsTextFile``; the written records are a
        capture (written by the same job)."""
        _, self.capture = commit_action(
            self._ctx, self._rdd, self._slots, "saveAsTextFile", name, lambda values: values.saveAsTextFile(path)
        )

    def toDF(self, schema: Any = None, sampleRatio: float | None = None, name: str | None = None) -> DataFrame:
        """A DataFrame of the records, as ``RDD.toDF``; the records are stored as a
        capture (``name``) that captures of queries over the DataFrame trace into with
        ``end_to_end=True``. Runs the RDD program now.

        >>> df = lines.map(lambda s: (s, len(s))).toDF(["line", "n"], name="lengths")  # doctest: +SKIP
        """
        return self._ctx.createDataFrame(self, schema, sampleRatio, name=name)

    def get_lineage(self, rows: RowsArg | None = None) -> LineageCursor:
        """A cursor (as ``Capture.lineage``) at ``rows`` of the last action's records (all
        of them by default): ``go_back_all()``, ``show()``..."""
        if self.capture is None:
            raise InvalidArgument("get_lineage() follows an action (collect, count, take...): run one first")
        return self.capture.lineage(rows if rows is not None else self.capture.output)


def _applied(ops: tuple) -> Callable[[Iterable], Iterable]:
    """A ``mapPartitions`` function applying ``ops`` to records ``(slots, value)``."""

    def run(records: Iterable) -> Iterable:
        for kind, f, _ in ops:
            if kind == "map":
                records = map(lambda r, f=f: (r[0], f(r[1])), records)
            elif kind == "flatMap":  # zip with repeat: each value made gets its input's slots
                records = chain.from_iterable(map(lambda r, f=f: zip(repeat(r[0]), f(r[1])), records))
            else:
                records = filter(lambda r, f=f: f(r[1]), records)
        return records

    return run


def _iterable_values(kv: tuple) -> tuple:
    return kv[0], ResultIterable(kv[1])


def _with_none(v: Any) -> tuple:
    return v, None


def _one(v: Any) -> list:
    return [v]


def _append(acc: list, v: Any) -> list:
    acc.append(v)
    return acc


def _extend(a: list, b: Iterable) -> list:
    a.extend(b)
    return a


def _none(_: Any) -> None:
    return None


def _none2(_: Any, __: Any) -> None:
    return None
