"""The re-execution check as an answer (``Capture.verify``): output rows re-derived
from their own lineage. For each checked row ``o``, the captured query runs again with
every source replaced by the rows ``backward([o])`` traced there; ``o`` must come out
again, with equal values. A row that does not is flagged: its lineage misses rows it
depends on (for example a Python function that declares row-wise lineage but reads its
whole batch).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from pyspark.sql import DataFrame

from ..store.format import RID


@dataclass
class Verification:
    """Which output rows were re-derived from their lineage, and which were not."""

    checked: list[int]
    failed: dict[int, tuple] = field(default_factory=dict)  # rid -> the row's values

    @property
    def ok(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        if self.ok:
            return f"all {len(self.checked)} checked rows came out again from their lineage"
        rows = ", ".join(f"{rid} {values}" for rid, values in list(self.failed.items())[:5])
        return (
            f"{len(self.failed)} of {len(self.checked)} checked rows did not come out again from their lineage "
            f"(their lineage misses rows they depend on): {rows}"
        )


def _norm(value):
    if isinstance(value, float | Decimal):
        value = float(value)
        return "nan" if math.isnan(value) else round(value, 9 - int(math.floor(math.log10(abs(value)))) if value else 0)
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    return value


def verify(
    output: DataFrame,
    backward: Callable[[list[int]], dict[str, DataFrame]],
    rerun: Callable[[dict[str, DataFrame]], DataFrame],
    rows: list[int] | None,
    sample: int,
    seed: int = 0,
) -> Verification:
    """Re-derive ``rows`` (default: ``sample`` output rows drawn at random) from their
    backward lineage; ``rerun`` runs the query over replaced sources."""
    if rows is None:
        rids = [r[RID] for r in output.select(RID).collect()]
        rows = sorted(random.Random(seed).sample(rids, min(sample, len(rids))))
    wanted = {r[RID]: tuple(r)[:-1] for r in output.where(output[RID].isin(rows)).collect()}
    result = Verification(sorted(wanted))
    for rid, values in sorted(wanted.items()):
        traced = {name: df.drop(RID) for name, df in backward([rid]).items()}
        again = {tuple(_norm(v) for v in r) for r in rerun(traced).collect()}
        if tuple(_norm(v) for v in values) not in again:
            result.failed[rid] = values
    return result
