"""Backward and forward traces over a stored capture, run on Spark.

A trace turns the user's ``rows`` into a set of rids, semi-joins it with the stored
``(out_rid, in_rid)`` pairs, and semi-joins the result with the rows on the other
side. Everything stays a distributed DataFrame: a million-row group is never
collected to the driver.

>>> from sparkprov.query.trace import RID
>>> RID
'_sp_rid'
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from ..capture.lineage import IN, OUT
from ..errors import InvalidArgument
from ..plan.catalyst import quiet_analysis
from ..plan.predicate import check_predicate
from ..sources.identity import RID

RowsArg = DataFrame | str | Iterable[int] | Iterable[Row]
RidSet = DataFrame | list[int]
_WANTED = "__sp_wanted"
_LITERAL_LIMIT = 10_000  # longer rid lists become a DataFrame and a join


def rid_set(rows: RowsArg, relation: DataFrame, what: str) -> RidSet:
    """The ``_sp_rid`` values ``rows`` designates within ``relation``.

    ``rows`` is a DataFrame with a ``_sp_rid`` column, a SQL predicate over
    ``relation``, or an iterable of rids (ints) or of Rows carrying ``_sp_rid``.
    Returns a one-column DataFrame, or a plain list when the caller named at most
    ``_LITERAL_LIMIT`` rids (filtered as a literal, no join).
    """
    if isinstance(rows, DataFrame):
        if RID not in rows.columns:
            raise InvalidArgument(f"the DataFrame passed as rows has no {RID} column; pass rows of {what}")
        return rows.select(F.col(RID).cast("long").alias(RID))
    if isinstance(rows, str):
        check_predicate(rows)
        try:
            with quiet_analysis():
                picked = relation.where(rows).select(RID)
                picked.schema  # noqa: B018 - resolves the predicate now, to fail early
        except AnalysisException as exc:  # includes parse errors
            raise InvalidArgument(f"cannot evaluate predicate {rows!r} on {what}: {exc}") from None
        return picked
    rids = rid_list(rows)
    if len(rids) <= _LITERAL_LIMIT:
        return rids
    return relation.sparkSession.createDataFrame([(r,) for r in rids], f"{RID} long")


def rid_list(rows: Iterable[int] | Iterable[Row]) -> list[int]:
    """The rids of an iterable of rids (ints) or of Rows carrying ``_sp_rid``, checked."""
    if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
        raise InvalidArgument(
            f"rows must be a DataFrame, a SQL predicate string or a list of {RID} values, not {type(rows).__name__}"
        )
    rids = []
    for r in rows:
        if isinstance(r, Row):
            try:
                r = r[RID]
            except (KeyError, ValueError):
                raise InvalidArgument(f"a Row passed as rows has no {RID} field") from None
        if isinstance(r, bool) or not isinstance(r, int):
            raise InvalidArgument(f"rids must be integers, got {r!r}")
        rids.append(r)
    return rids


def restrict(pairs: DataFrame, column: str, rids: RidSet) -> DataFrame:
    """``pairs`` whose ``column`` is one of ``rids``."""
    if isinstance(rids, list):  # a literal list filters the pairs as they are read
        return pairs.where(F.col(column).isin(rids))
    return pairs.join(rids.select(F.col(RID).alias(column)).distinct(), column, "left_semi")


def backward(pairs: DataFrame, out_rids: RidSet, source_rows: DataFrame) -> DataFrame:
    """Source rows (all columns and ``_sp_rid``) behind the output rows ``out_rids``."""
    ins = restrict(pairs, OUT, out_rids).select(F.col(IN).alias(_WANTED)).distinct()
    # a condition, not a USING column: keeps the rows' own column order, even with repeated names
    return source_rows.join(ins, source_rows[RID] == ins[_WANTED], "left_semi")


def forward(pairs: DataFrame, in_rids: RidSet, output: DataFrame) -> DataFrame:
    """Output rows (with ``_sp_rid``) that the source rows ``in_rids`` contributed to."""
    outs = restrict(pairs, IN, in_rids).select(F.col(OUT).alias(_WANTED)).distinct()
    return output.join(outs, output[RID] == outs[_WANTED], "left_semi")
