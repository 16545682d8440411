"""Spark's optimizer as capture runs it (without the rules that would hide sources,
under settings of its own), CTE inlining, and the session's SQL settings: changed for
a block, or read as a size in bytes.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> b.node_name(b.optimized(b.analyzed(spark.range(9).where("id > 1").where("id < 5"))))
'Filter'
>>> with b.settings({"spark.sql.shuffle.partitions": "3"}):
...     spark.conf.get("spark.sql.shuffle.partitions")
'3'
>>> b.conf_bytes("spark.sparkprov.doctest.size", "4k")
4096
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark import SparkContext

from ..errors import InvalidArgument
from .handles import CATALYST, JPlan

# per (session, key) that a settings block has changed: its value before the first
# block, and the blocks open now with their values, in the order they began
_SETTINGS_HELD: dict[tuple[int, str], tuple[str | None, list]] = {}
_HEAPS: weakref.WeakKeyDictionary[SparkContext, int] = weakref.WeakKeyDictionary()  # asked once per context
_SETTINGS_LOCK = threading.Lock()

_EXCLUDED_RULES = "spark.sql.optimizer.excludedRules"
_DECORRELATE = "spark.sql.optimizer.decorrelateInnerQuery.enabled"
_HIDING_RULES = (
    f"{CATALYST}.optimizer.ConvertToLocalRelation",
    "org.apache.spark.sql.execution.dynamicpruning.PartitionPruning",
    f"{CATALYST}.optimizer.InjectRuntimeFilter",
    # removes a Window (or other operator) whose results nothing reads: the rows it
    # read would drop out of the lineage. The plan capture runs is optimized again,
    # with column pruning, so scans still read only the columns they need.
    f"{CATALYST}.optimizer.ColumnPruning",
    # puts LIMIT 1 under the right side of a semi join without condition (EXISTS): the
    # lineage would keep one row per partition of the right side instead of all
    f"{CATALYST}.optimizer.LimitPushDown",
)


# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovOptimize.java
_OPTIMIZE_CLASS = "SparkprovOptimize"


class Optimizing:
    """How ``Bridge`` optimizes plans and changes settings (a mixin: ``Bridge.__init__``
    sets the ``spark``, ``jvm``, ``line``, ``jsession`` and ``_optimize`` it uses)."""

    def inline_ctes(self, plan: JPlan) -> JPlan:
        rule = self.line.inline_cte(self.jvm)
        return rule.apply(plan)

    def optimized(self, plan: JPlan) -> JPlan:
        """``plan`` through Spark's optimizer, minus the rules that would hide sources.

        Capture works on the optimized plan: subqueries are decorrelated into joins and
        INTERSECT/EXCEPT become joins and aggregates, so one rule per join or aggregate
        covers them all. Folding in-memory rows into new literal relations
        (ConvertToLocalRelation) would turn a source into a different relation, and the
        runtime-filter rules add subqueries the rewritten plan gets again anyway when it
        is optimized for execution. Those settings hold in this thread alone (a copy of
        the session's, by the compiled helper), unless ``optimizes_apart`` says otherwise.
        """
        state = self._session_state()
        conf = state.conf()
        before = conf.getConfString(_EXCLUDED_RULES, "")
        changes = {
            _EXCLUDED_RULES: ",".join([r for r in before.split(",") if r] + list(_HIDING_RULES)),
            # the newer decorrelation joins a correlated subquery with the distinct
            # outer values it needs, re-read from the outer relation: those rows would
            # enter the lineage of every row sharing the value
            _DECORRELATE: "false",
        }
        helper = self._optimize_helper()
        if helper:
            return helper.optimize(state.optimizer(), conf, "\n".join(f"{k}={v}" for k, v in changes.items()), plan)
        with self.settings(changes):  # for a moment, the session's own: see optimizes_apart
            return state.optimizer().execute(plan.clone())

    def optimized_as_is(self, plan: JPlan) -> JPlan:
        """``plan`` through Spark's optimizer with the session's settings: the plan
        Spark runs without capture (column pruning included), for its estimates."""
        return self._session_state().optimizer().execute(plan.clone())

    def _optimize_helper(self) -> Any:
        return self._java_helper("_optimize", _OPTIMIZE_CLASS)

    def optimizes_apart(self) -> bool:
        """Whether ``optimized`` leaves the session's settings alone (it changes them for
        the moment it runs when its JVM helper could not be compiled): a query may then
        be planned in another thread while it runs."""
        return bool(self._optimize_helper())

    @contextmanager
    def settings(self, values: dict[str, str]) -> Iterator[None]:
        """SQL settings changed for the duration of a block, then restored. Blocks may
        overlap (captures in threads, a deferred capture resolved in the background)
        and end in any order: a setting's value from before the first block is restored
        when the last one ends, and meanwhile the value of the latest block still open."""
        conf = self._session_state().conf()
        block = object()
        keys = [(id(self.jsession), k) for k in values]
        with _SETTINGS_LOCK:
            for key, v in zip(keys, values.values()):
                if key not in _SETTINGS_HELD:
                    _SETTINGS_HELD[key] = (conf.getConfString(key[1]) if conf.contains(key[1]) else None, [])
                _SETTINGS_HELD[key][1].append((block, v))
                conf.setConfString(key[1], v)
        try:
            yield
        finally:
            with _SETTINGS_LOCK:
                for key in keys:
                    before, blocks = _SETTINGS_HELD[key]
                    blocks[:] = [(b, v) for b, v in blocks if b is not block]
                    value = blocks[-1][1] if blocks else before
                    if not blocks:
                        del _SETTINGS_HELD[key]
                    if value is None:
                        conf.unsetConf(key[1])
                    else:
                        conf.setConfString(key[1], value)

    def conf_bytes(self, key: str, default: str) -> int:
        """A size from the session's conf, in bytes (``"512m"``, ``"4g"`` or a number)."""
        value = self.spark.conf.get(key, default)
        if value.strip().lstrip("-").isdigit():  # a plain number, -1 included (Spark's "off")
            return int(value)
        try:
            return int(self.jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(value))
        except Exception as e:  # py4j wraps Java's NumberFormatException
            raise InvalidArgument(f"{key} must be a size in bytes such as 512m or 4g, not {value!r}") from e

    def executor_heap_bytes(self) -> int:
        """The heap of the JVM that runs a task, where an aggregate's buffers live: the
        driver's own in local mode (its tasks run there), else ``spark.executor.memory``."""
        sc = self.spark.sparkContext
        if sc not in _HEAPS:
            if sc.master.startswith("local[") or sc.master == "local":
                _HEAPS[sc] = int(self.jvm.java.lang.Runtime.getRuntime().maxMemory())
            else:
                _HEAPS[sc] = self.conf_bytes("spark.executor.memory", "1g")
        return _HEAPS[sc]
