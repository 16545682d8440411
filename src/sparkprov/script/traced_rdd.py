"""``TracedRDD``: what an unchanged script holds where it thinks it has an RDD.

It has every method of PySpark's ``RDD``. While the program stays within what
``LineageRDD`` traces, calls go to the ``LineageRDD`` and each action is a capture.
The first call it does not trace (an unsupported method, or an input that is not
traced) makes the result a plain RDD of the same values, still wrapped: the script
goes on exactly as it would without sparkprov, and every later action on it is
recorded as a failed capture, with the reason.

>>> "collect" in ACTIONS and "first" in ACTIONS
True
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from pyspark import RDD

from ..errors import InvalidArgument, UnsupportedOperation
from ..rdd.lineage_rdd import SUPPORTED, LineageRDD

if TYPE_CHECKING:
    from .hooks import Tracer

# actions that are captures when the RDD is traced (others run untraced, recorded failed)
ACTIONS = ("collect", "count", "take", "first", "collectAsMap", "saveAsTextFile")
# RDD methods that run a job: on an untraced RDD each is recorded as a failed capture
RESULTS = (
    *ACTIONS,
    "reduce",
    "fold",
    "aggregate",
    "treeReduce",
    "treeAggregate",
    "foreach",
    "foreachPartition",
    "top",
    "takeOrdered",
    "takeSample",
    "countByKey",
    "countByValue",
    "sum",
    "max",
    "min",
    "mean",
    "stats",
    "variance",
    "stdev",
    "lookup",
    "isEmpty",
    "toLocalIterator",
    "saveAsPickleFile",
)


class TracedRDD:
    """An RDD of a script run by ``sparkprov run`` (see the module)."""

    def __init__(self, tracer: Tracer, lineage: LineageRDD | None, plain: RDD | None = None, reason: str = "") -> None:
        self._tracer = tracer
        self._lineage = lineage
        self._plain = plain
        self._reason = reason  # why it is not traced

    @property
    def plain(self) -> RDD:
        """The RDD of values a plain run would have."""
        if self._plain is None:
            self._plain = self._lineage._rdd.map(_value)
        return self._plain

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if not hasattr(RDD, name):  # an attribute of the instance (rdd.ctx): the plain RDD's
            return getattr(self.plain, name)
        attr = getattr(RDD, name)
        if isinstance(attr, property):
            return getattr(self.plain, name)
        return partial(self._call, name)

    def __repr__(self) -> str:
        return repr(self.plain)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._lineage is not None and name in ACTIONS:
            return self._traced_action(name, args, kwargs)
        if self._lineage is not None and name in SUPPORTED:
            lineage_args = [a._lineage if isinstance(a, TracedRDD) else a for a in args]
            if None not in lineage_args:
                try:
                    result = getattr(self._lineage, name)(*lineage_args, **kwargs)
                except UnsupportedOperation as exc:
                    return self._untraced(name, args, kwargs, str(exc))
                return TracedRDD(self._tracer, result) if isinstance(result, LineageRDD) else result
            reason = next(a._reason for a in args if isinstance(a, TracedRDD) and a._lineage is None)
            return self._untraced(name, args, kwargs, reason)
        if self._lineage is not None:
            return self._untraced(name, args, kwargs, f"RDD.{name} is not traced by sparkprov")
        return self._untraced(name, args, kwargs, self._reason)

    def _untraced(self, name: str, args: tuple, kwargs: dict, reason: str) -> Any:
        plain_args = [a.plain if isinstance(a, TracedRDD) else a for a in args]
        method = getattr(self.plain, name)
        if name in RESULTS:
            return self._tracer.untraced_action(name, reason, lambda: method(*plain_args, **kwargs))
        result = method(*plain_args, **kwargs)
        return TracedRDD(self._tracer, None, result, reason) if isinstance(result, RDD) else result

    def _traced_action(self, name: str, args: tuple, kwargs: dict) -> Any:
        lineage = self._lineage

        def traced(capture_name: str) -> Any:
            if name == "first":
                found = lineage.take(1, name=capture_name)
                if not found:
                    raise InvalidArgument("RDD is empty")
                return found[0]
            if name == "collectAsMap":
                return dict(lineage.collect(name=capture_name))
            return getattr(lineage, name)(*args, name=capture_name, **kwargs)

        return self._tracer.traced_action(name, traced, lambda: getattr(self.plain, name)(*args, **kwargs))

    def toDF(self, schema: Any = None, sampleRatio: float | None = None) -> Any:
        """``RDD.toDF``, traced as ``createDataFrame`` is."""
        return self._tracer.create_dataframe(self, schema, sampleRatio)


def _value(record: tuple) -> Any:
    return record[1]
