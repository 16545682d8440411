"""The three checks of lineage-semantics.md, for real queries.

* :func:`same_answers`: capture on and off give identical answers.
* :func:`reexecution_holds`: re-running the query on only the traced input rows
  produces the output row again, with equal values.
* :func:`consistent`: ``o`` is in ``F(s, r)`` for the rids ``r`` of ``B(o)``.

>>> same_answers([(1, "a")], [(1, "a")], ordered=True)
True
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal

from pyspark.sql import DataFrame

from ..api import Capture

RID = "_sp_rid"


def _norm(value):
    # exact for ints, decimals, strings and dates; doubles compared to 12 significant digits
    if isinstance(value, float):
        return float(f"{value:.12g}") if math.isfinite(value) else value
    if isinstance(value, Decimal):
        return value.normalize()
    return value


def _key(row: Sequence) -> tuple:
    return tuple(_norm(v) for v in row)


def same_answers(plain: Sequence[Sequence], captured: Sequence[Sequence], ordered: bool) -> bool:
    """Equal as lists when the query orders its result, else equal as multisets."""
    a = [_key(r) for r in plain]
    b = [_key(r) for r in captured]
    return a == b if ordered else Counter(a) == Counter(b)


def output_rows(cap: Capture) -> list[tuple]:
    """The capture's output rows without ``_sp_rid``, in order."""
    return [tuple(r)[:-1] for r in cap.output.collect()]


def reexecution_holds(cap: Capture, rid: int, rerun: Callable[[dict[str, DataFrame]], DataFrame]) -> bool:
    """Re-run the query with every source restricted to ``B(o)``; ``o`` must come out again.

    ``rerun`` receives ``{source name: restricted rows}`` (the source's columns only) and
    returns the query's result over them.
    """
    row = cap.output.where(f"{RID} = {int(rid)}").collect()
    if len(row) != 1:
        raise ValueError(f"no output row with {RID} = {rid}")
    want = _key(tuple(row[0])[:-1])
    restricted = {name: df.drop(RID) for name, df in cap.backward([rid]).items()}
    again = rerun(restricted).collect()
    return want in {_key(tuple(r)) for r in again}


def consistent(cap: Capture, rid: int, per_source: int = 1) -> bool:
    """For up to ``per_source`` rids ``r`` in ``B_s(o)`` per source, ``o`` is in ``F(s, r)``."""
    for name, rows in cap.backward([rid]).items():
        sample = [r[RID] for r in rows.select(RID).orderBy(RID).limit(per_source).collect()]
        for r in sample:
            outs = {x[RID] for x in cap.forward(name, [r]).select(RID).collect()}
            if rid not in outs:
                return False
    return True
