"""Backward and forward answers through Python functions declared blackbox.

The stored lineage of such a function is per group or partition. In the session that
captured the query, ``backward`` and ``forward`` are made exact by running the query
again over the stored lineage of the rows asked about (``capture/blackbox.py``); the
stored answer is the starting point and the exact one a subset of it. Elsewhere, and
for the answers read from the stored pairs alone (cursors, pairs, why and how, drill
downs, end-to-end traces), the stored lineage is the answer, with a
``CoarseLineageWarning`` that says so.

>>> from sparkprov.store.entry import CaptureEntry
>>> entry = CaptureEntry("c", 1, 1, "", "id", None, None, {})
>>> exact_here(entry)  # no blackbox function: nothing to make exact
False
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..capture import blackbox
from ..capture.lineage import IN, OUT
from ..errors import CoarseLineageWarning, LineageTooLarge
from ..plan.versions import arrow_dataframe
from ..sources.identity import RID
from ..store.entry import CaptureEntry
from . import engines


def exact_here(entry: CaptureEntry) -> bool:
    """Whether ``entry`` has blackbox functions this process can trace exactly; warns
    when it has some it cannot."""
    if not entry.blackbox:
        return False
    if blackbox.held(entry.id):
        return True
    warn_coarse(entry, "this process did not capture it", stacklevel=4)
    return False


def warn_coarse(entry: CaptureEntry, why: str, stacklevel: int = 3) -> None:
    """Say that an answer from ``entry`` holds its blackbox functions' stored lineage
    (``stacklevel`` 3: at the line that called the method calling this)."""
    if entry.blackbox:
        warnings.warn(
            f"capture {entry.name!r}: the answer holds every row of the groups or partitions of "
            f"{', '.join(entry.blackbox)} (declared blackbox), as stored: {why}. backward() and forward() in the "
            "session that made the capture trace them exactly",
            CoarseLineageWarning,
            stacklevel=stacklevel,
        )


def backward(entry: CaptureEntry, out_rids: list[int], coarse: dict[str, DataFrame], names: list[str]):
    """``{source: rows}`` for ``names``: the rows of the stored answer ``coarse`` (every
    source's) that the exact lineage of ``out_rids`` holds."""
    exact = blackbox.exact_pairs(entry, out_rids, coarse) if out_rids else {}
    if exact is None:
        warn_coarse(entry, "a scalar subquery's lineage is on the way, which the run again does not trace", 4)
        return {name: coarse[name] for name in names}
    return {name: _kept(coarse[name], exact.get(name), IN) for name in names}


def forward(entry: CaptureEntry, source: str, in_rids: list[int], outputs: DataFrame, coarse_backward) -> DataFrame:
    """The rows of the stored answer ``outputs`` (output rows with ``_sp_rid``) whose
    exact lineage holds a row of ``in_rids`` of ``source``; ``coarse_backward(out_rids)``
    gives the stored backward answer of output rows, every source's."""
    out_rids = [r[RID] for r in outputs.select(RID).limit(engines.ROWS_LIMIT + 1).collect()]
    if len(out_rids) > engines.ROWS_LIMIT:
        raise LineageTooLarge(
            f"capture {entry.name!r}: the stored lineage reaches more than {engines.ROWS_LIMIT:,} output rows, too "
            f"many to run {', '.join(entry.blackbox or [])} (declared blackbox) again for; ask about fewer rows"
        )
    if not out_rids:
        return outputs
    exact = blackbox.exact_pairs(entry, out_rids, coarse_backward(out_rids))
    if exact is None:
        warn_coarse(entry, "a scalar subquery's lineage is on the way, which the run again does not trace", 4)
        return outputs
    found = exact.get(source)
    if found is not None:
        found = found.filter(pa.array(np.isin(found.column(IN).to_numpy(), np.asarray(in_rids, dtype=np.int64))))
    return _kept(outputs, found, OUT)


def _kept(rows: DataFrame, pairs: pa.Table | None, column: str) -> DataFrame:
    # the rows whose rid the pairs' column holds
    rids = np.unique(pairs.column(column).to_numpy()) if pairs is not None else np.array([], np.int64)
    spark = rows.sparkSession
    kept = arrow_dataframe(spark, pa.table({RID: pa.array(rids, pa.int64())}))
    return rows.join(F.broadcast(kept), RID, "left_semi")
