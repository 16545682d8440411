"""What a lazy capture does in place of the rewrite: the plan optimized as for capture,
checked against the rules, refused where two runs could give other rows (lineage is
built later by running the query again), its sources registered and one explain line
per operator.

>>> "Sample" in _LAZY_REFUSED and "Filter" not in _LAZY_REFUSED
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from ..errors import UnsupportedOperation
from ..plan.catalyst import JPlan
from . import prepare, support
from .explain import COARSE, LAZY_STRATEGY, PRUNED_TEXT, selected_text
from .rules import leaf as leaves
from .rules import python
from .shapes import LEAVES, PRUNED, ExplainLine

if TYPE_CHECKING:
    from .context import CaptureContext

_LAZY_REFUSES = (
    "strategy='lazy' builds lineage by running the query again, which needs the same rows from the "
    "same sources each time; capture with strategy='auto'"
)
# operators whose rows can differ between two runs (a LIMIT or OFFSET over an order is
# fine). An RDD or in-memory source is copied at capture, as for any capture, and the
# second run reads the copy.
_LAZY_REFUSED = {
    "GlobalLimit": "LIMIT without ORDER BY",
    "LocalLimit": "LIMIT without ORDER BY",
    "Offset": "OFFSET without ORDER BY",
    "Sample": "a sample",
    "AttachDistributedSequence": "a row number (pandas API on Spark's default index)",
}


def optimize(cx: CaptureContext, plan: JPlan) -> None:
    """What a lazy capture does instead of rewriting, first part: the plan optimized
    as for capture (``Bridge.optimized``: capture's settings in this thread alone),
    so it may run while the query is planned and run; ``check_lazy`` follows it.

    A lazy capture's lineage is built later by running the query again with capture
    and matching that run's rows to the stored ones by value, so a query whose rows
    or row sources could differ between two runs is refused (``UnsupportedOperation``).
    """
    b = cx.bridge
    cx.analyzed = plan
    prepare.collect_view_names(cx, plan, None)
    if b.has_pattern(plan, "CURRENT_LIKE"):  # folded into a literal each time the plan is optimized
        raise UnsupportedOperation("the current time or date", cx.plan_text(plan), _LAZY_REFUSES)
    cx.optimized = b.optimized(prepare.prepared(cx, plan))


def check(cx: CaptureContext) -> None:
    """The second part: the optimized plan checked against the rules, its sources
    registered (named, fingerprinted, non-Parquet ones copied) and one explain line
    per operator."""
    b = cx.bridge
    support.check_supported(cx, cx.optimized)
    if not b.is_plan_deterministic(cx.optimized):
        found = cx.nondeterminism(cx.optimized) or "a non-deterministic expression"
        raise UnsupportedOperation(found, cx.plan_text(cx.optimized), _LAZY_REFUSES)
    _walk(cx, cx.optimized, 1)
    cx.check_workload()
    for use in cx.sources:  # a bad predicate fails now, not when lineage is built
        if use.info.name in cx.where and use.info.kind != PRUNED:
            probe = b.to_dataframe(use.leaf).withColumn("__sp_rid", F.lit(0).cast("long"))
            leaves.selected(cx, b.analyzed(probe), use.info.name)


def _walk(cx: CaptureContext, node: JPlan, depth: int) -> None:
    b = cx.bridge
    op = b.node_name(node)
    cx.operators.add(op)
    refused = _LAZY_REFUSED.get(op)
    if op in ("GlobalLimit", "LocalLimit", "Offset") and _ordered(cx, node):
        refused = None  # the first n rows of an order: the same rows, up to ties
    if refused:
        raise UnsupportedOperation(op, cx.plan_text(node), f"{refused}; {_LAZY_REFUSES}")
    if op in LEAVES:
        src = leaves.leaf_source(cx, node)
        strategy = f"source {cx.sources[src].info.name}" if src is not None else "constant rows"
        if src is not None and cx.sources[src].info.kind == PRUNED:
            strategy += f": {PRUNED_TEXT}"
        elif src is not None and cx.sources[src].info.name in cx.where:
            strategy += f": {selected_text(cx.where[cx.sources[src].info.name])}"
    else:
        strategy = LAZY_STRATEGY
    granularity = python.lazy_granularity(cx, node) or COARSE.get(op, "exact")
    cx.report.append(ExplainLine(depth, b.simple_string(node), granularity, strategy))
    for child in b.children(node):
        _walk(cx, child, depth + 1)
    for sub in cx.subquery_plans(node):
        if not b.is_plan_deterministic(sub):
            raise UnsupportedOperation("a non-deterministic subquery", cx.plan_text(sub), _LAZY_REFUSES)
        _walk(cx, sub, depth + 1)


def _ordered(cx: CaptureContext, node: JPlan) -> bool:
    """Whether ``node`` (a LIMIT or OFFSET) takes rows in an order: a Sort below it,
    through limits and projections."""
    b = cx.bridge
    while b.node_name(node) in ("GlobalLimit", "LocalLimit", "Offset", "Project"):
        (node,) = b.children(node)
    return b.node_name(node) == "Sort"
