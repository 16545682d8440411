"""How a grouping operator keeps its groups (``STRATEGIES``): inject (the rids
collected in the operator's own state) or logical (a side relation), and why an
aggregate stays logical under ``auto``.

>>> STRATEGIES
('auto', 'inject', 'logical', 'defer', 'lazy')
>>> COLLECTED["source"]
'rids'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..plan.catalyst import JPlan
from .shapes import Rewritten

if TYPE_CHECKING:
    from .context import CaptureContext


STRATEGIES = ("auto", "inject", "logical", "defer", "lazy")
# auto's bound on an aggregate's input (Catalyst's size estimate) for inject; a Spark
# conf, in bytes or with a unit ("512m", "8g")
INJECT_MAX_INPUT_BYTES = "spark.sparkprov.injectMaxInputBytes"
INJECT_MAX_FLOOR = 1 << 30  # the bound when unset: a share of the heap that runs tasks, at least this
INJECT_HEAP_SHARE = 4  # unset, the bound is the heap that runs tasks over this
# the slot kinds inject collects, and the kind of the array it makes of each
COLLECTED = {"source": "rids", "rids": "rids", "group": "groups", "groups": "groups"}
# Spark runs an aggregate holding rid arrays as an ObjectHashAggregate, which sorts the
# rest of a task's input once its hash map holds this many groups (Spark's default, 128,
# is for buffers of any size)
_HASHED_GROUPS = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"
INJECT_HASHED_GROUPS = 1 << 16


def stays_logical(cx: CaptureContext, inner: Rewritten, aggregate: JPlan | None = None) -> str | None:
    """Why this aggregate keeps a side relation rather than injecting (None: it injects)."""
    # Auto injects wherever the input slots can be collected: measured on every
    # TPC-H aggregate and on Smoke's group-bys, that beats running the input again
    # for a side relation, even over a bare scan. It stays logical over an input
    # estimated above the bound: one group's rids are one array in memory, and a
    # global aggregate's one group is its whole input.
    if cx.strategy == "logical":
        return "strategy='logical'"
    if cx.strategy == "defer":
        return "strategy='defer': the side relation is resolved after the output is written"
    if not all(s.kind in COLLECTED for s in inner.slots):
        return "a window's ranges are not collected"
    b = cx.bridge
    if aggregate is not None and any(b.has_pattern(e, "PYTHON_UDF") for e in b.aggregate_expressions(aggregate)):
        return "Spark evaluates a pandas aggregate UDF only beside other pandas UDFs, not beside rid arrays"
    if cx.strategy == "inject":
        return None
    return _above_bound(cx, inner)


# the input an injected aggregate whose rows a join repeats reads (its files' bytes) for
# its groups to be kept once, as sets of a shared side (``keeps_sets``)
SETS_MIN_INPUT_BYTES = 64 << 20


def keeps_sets(cx: CaptureContext, child: JPlan) -> bool:
    """Whether an injected aggregate over ``child`` whose rows a join above repeats
    (``rules.join_repeats.plan_repeats``) may keep each group's rids once, a set of a shared
    side, rather than in its rows: where its input reads at least ``SETS_MIN_INPUT_BYTES``.
    The sets cost a capture about half a second more at SF 1 (the aggregate's rows
    cached as the query computes them; after it, jobs checking and storing the sets),
    repaid only where the groups hold many rids: TPC-DS q2's 41 million pairs (weekly
    totals over 2.2 million sales, each met by seven days) took 2.8 times its plain
    run as sets against 5.3 in its rows, q65's 9 million 1.8 against 2.7; but q1's
    0.9 million (store returns, 18 MB) 2.1 against 2.0, q81's 0.2 million 1.6
    against 1.1."""
    return cx.input_bytes(child) >= SETS_MIN_INPUT_BYTES


def hashes_groups(cx: CaptureContext, inner: Rewritten) -> bool:
    """Whether an aggregate injected over ``inner`` may keep ``INJECT_HASHED_GROUPS``
    groups of a task hashed (``inject_settings``): where its rids are its input rows'
    own (no inner aggregate's arrays, which a join can repeat into many groups) and its
    input is estimated at most an eighth of ``inject_bound``. Hashed, a task holds every
    group's rids at once; sorted, one group's: TPC-DS q14a at SF 1, whose aggregates
    collect the arrays of the items they join, ran out of a 6 GiB heap hashed."""
    if not all(s.kind == "source" for s in inner.slots):
        return False
    size = cx.input_bytes(inner.plan)
    return size < cx.unknown_bytes and size <= cx.inject_max_bytes // 8


def inject_settings(bridge, hashed: bool) -> dict[str, str]:
    """SQL settings for the job that runs a capture's query: with ``hashed`` (some
    aggregate injected, each ``hashes_groups``), up to ``INJECT_HASHED_GROUPS`` groups a
    task kept hashed before Spark sorts the rest (the query's own object aggregates,
    ``collect_list``, ``percentile``, alike); else none.

    TPC-DS q22 at SF 1 (a ROLLUP of 4 levels over 2.3M inventory rows, 36k groups a
    task) took 113 s to run with its rids against 5 s without, its tasks sorting and
    spilling 12 GB after their first 128 groups; hashed, 17 s.

    >>> from sparkprov.plan.catalyst import Bridge
    >>> from pyspark.sql import SparkSession
    >>> inject_settings(Bridge(SparkSession.builder.getOrCreate()), True)
    {'spark.sql.objectHashAggregate.sortBased.fallbackThreshold': '65536'}
    >>> inject_settings(Bridge(SparkSession.builder.getOrCreate()), False)
    {}
    """
    if not hashed:
        return {}
    current = int(bridge.spark.conf.get(_HASHED_GROUPS, "128"))
    return {_HASHED_GROUPS: str(max(current, INJECT_HASHED_GROUPS))}


def collects_witnesses(cx: CaptureContext, inner: Rewritten, aggregate: JPlan) -> bool:
    """Whether this aggregate, captured with witnesses, collects each group's witnesses
    (its input rows' slots, one struct a row) in its own state, its side relation then
    read from the rows the query kept: where the strategy the user asked for would
    inject (``CaptureContext.witness_strategy``), over slots naming one row or group
    each (a window's ranges and collected arrays stay logical)."""
    if cx.witness_strategy not in ("auto", "inject") or not inner.slots:
        return False
    if not all(s.kind in ("source", "group") for s in inner.slots):
        return False
    if any(cx.bridge.has_pattern(e, "PYTHON_UDF") for e in cx.bridge.aggregate_expressions(aggregate)):
        return False  # a pandas aggregate UDF runs beside other pandas UDFs only
    return cx.witness_strategy == "inject" or _above_bound(cx, inner) is None


def _above_bound(cx: CaptureContext, inner: Rewritten) -> str | None:
    # the rewritten input's leaves: Parquet files, in-memory sources as their copies
    size = cx.input_bytes(inner.plan)
    if size >= cx.unknown_bytes:  # what Catalyst assumes for a relation it cannot size (an RDD)
        return f"input of unknown size, so possibly above {INJECT_MAX_INPUT_BYTES}"
    if size > cx.inject_max_bytes:
        bound = f"{INJECT_MAX_INPUT_BYTES}={cx.inject_max_bytes:,}"
        if cx.bridge.spark.conf.get(INJECT_MAX_INPUT_BYTES, None) is None:
            bound = f"{cx.inject_max_bytes:,}, a quarter of a task's JVM heap ({INJECT_MAX_INPUT_BYTES} unset)"
        return f"input read from {size:,} bytes, above {bound}"
    return None


def inject_bound(bridge) -> int:
    """The input size above which ``auto`` keeps an aggregate logical: the conf
    ``INJECT_MAX_INPUT_BYTES``, else a quarter of the heap of one task's JVM, at
    least 1 GiB.

    One group's rids are one array in memory (8 bytes a row; a global aggregate's
    group is its whole input), and the input's size is that of the files it reads,
    compressed: bounded by the heap that holds the arrays, the bound grows with the
    memory a cluster is given rather than being a constant that larger data passes
    (TPC-H at SF 3 with 6 GiB: Q9 took 3 times its plain run once its 1.1 GB of
    files sent its aggregate logical, as fast as at SF 1 injected). A quarter, not
    the whole heap: TPC-H Q1 at SF 10 (2.4 GB of files, four groups of 15 million
    rids) injected under a 6 GiB bound, and building its pair table then ran out of
    execution memory in one run of three."""
    if bridge.spark.conf.get(INJECT_MAX_INPUT_BYTES, None) is not None:
        return bridge.conf_bytes(INJECT_MAX_INPUT_BYTES, "0")
    return max(INJECT_MAX_FLOOR, bridge.executor_heap_bytes() // INJECT_HEAP_SHARE)
