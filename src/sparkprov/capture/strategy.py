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
INJECT_MAX_DEFAULT = "1g"
# the slot kinds inject collects, and the kind of the array it makes of each
COLLECTED = {"source": "rids", "rids": "rids", "group": "groups", "groups": "groups"}


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
    # the rewritten input's leaves: Parquet files, in-memory sources as their copies
    size = cx.bridge.leaf_bytes(inner.plan)
    if size >= cx.unknown_bytes:  # what Catalyst assumes for a relation it cannot size (an RDD)
        return f"input of unknown size, so possibly above {INJECT_MAX_INPUT_BYTES}"
    if size > cx.inject_max_bytes:
        return f"input read from {size:,} bytes, above {INJECT_MAX_INPUT_BYTES}={cx.inject_max_bytes:,}"
    return None
