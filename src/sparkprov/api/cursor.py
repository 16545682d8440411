"""Stepping through lineage one capture point at a time (Titian's LineageRDD, for DataFrames).

A cursor holds sets of rows at *points*: a capture's output, or one of its original
sources. ``go_back`` moves output rows to the source rows behind them; a source that
an earlier capture wrote (``capture(..., path=...)``, ``session.checkpoint`` or
``sp.mark``) is that capture's output, so rows land there and the next step goes on
into its sources. ``go_next`` is the mirror image. Every step is a lazy DataFrame
plan: nothing runs until an action (``show``, ``count``, ``to_df`` and what is done
with it).

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> df = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"]), "numbers")
>>> cap = session.capture(df.groupBy("k").sum("v"), name="sums")
>>> cursor = cap.lineage("k = 'a'").go_back()
>>> cursor.positions
['sums/numbers']
>>> sorted(r.v for r in cursor.to_df().collect())
[1, 2]
>>> cursor.go_next().count()
1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..capture.lineage import IN, OUT
from ..capture.workload import refuse_forward, warn_restricted
from ..errors import InvalidArgument
from ..sources.identity import RID

if TYPE_CHECKING:
    from ..query.planner import Planner


@dataclass(frozen=True)
class Point:
    """A place rows can be at: a capture's output (``source`` is None) or one of its
    sources; the capture's planner answers for it."""

    plan: Planner
    source: str | None = None

    @property
    def key(self) -> tuple[str, int, str | None]:
        return (self.plan.name, self.plan.version, self.source)

    @property
    def label(self) -> str:
        return self.plan.name if self.source is None else f"{self.plan.name}/{self.source}"

    def rows(self) -> DataFrame:
        """Every row at this point, with its ``_sp_rid``."""
        if self.source is None:
            return self.plan.output()
        return self.plan.source_rows(self.source)

    def pairs(self, source: str) -> DataFrame:
        """The pairs of ``source`` of this point's capture, its files checked first."""
        self.plan.trusted()
        return self.plan.pairs(source)


class LineageCursor:
    """Rows at one or more points of a pipeline's lineage; steps return new cursors.

    At a single point it behaves like the DataFrame of its rows: ``filter``,
    ``select``, ``groupBy`` and every other DataFrame method work on ``to_df()``.
    """

    def __init__(self, at: dict[tuple, tuple[Point, DataFrame]]) -> None:
        self._at = at  # key -> (point, one-column DataFrame of the rids there)

    @classmethod
    def start(cls, point: Point, rids: DataFrame) -> LineageCursor:
        return cls({point.key: (point, rids.select(F.col(RID).cast("long").alias(RID)))})

    def __repr__(self) -> str:
        return f"LineageCursor(at {', '.join(self.positions)})"

    def _repr_html_(self) -> str:
        """A notebook's view: the rows at every position, counted, and the first of them
        (Spark jobs: a cursor is lazy until shown)."""
        from .html import frames_html

        return frames_html(self.dataframes())

    @property
    def positions(self) -> list[str]:
        """Where the rows are: ``capture`` for its output, ``capture/source`` for a source."""
        return [p.label for p, _ in self._at.values()]

    # steps -------------------------------------------------------------------------

    def go_back(self, path: str | int | None = None) -> LineageCursor:
        """One capture point back: output rows to the rows behind them in every source (or
        the one ``path`` names, by name or position in ``capture.sources``). A source an
        earlier capture wrote (``path=``, ``checkpoint``, ``sp.mark``) is that capture's
        output, so the rows land there. Rows already at an original source stay."""
        moved, at = False, {}
        for point, rids in self._at.values():
            if point.source is None:
                sources = _pick(point.plan, path)
                warn_restricted(point.plan.entry, sources)
                for source in sources:
                    ins = _across(point.pairs(source), rids, OUT, IN)
                    _merge(at, _written_by(Point(point.plan, source)), ins)
                moved = True
            elif (writer := _written_by(point)) is not point:
                _merge(at, writer, rids)
                moved = True
            else:
                _merge(at, point, rids)
        return self._moved(moved, at, "already at the sources")

    def go_next(self) -> LineageCursor:
        """One capture point forward: source rows to the output rows they contributed to,
        and output rows that later captures read to those captures' output rows. Rows at
        an output nothing read stay."""
        moved, at = False, {}
        for point, rids in self._at.values():
            steps = [(point.plan, point.source)] if point.source is not None else point.plan.readers()
            for plan, source in steps:
                refuse_forward(plan.entry, source)
                _merge(at, Point(plan), _across(Point(plan).pairs(source), rids, IN, OUT))
            if not steps:
                _merge(at, point, rids)
            moved = moved or bool(steps)
        return self._moved(moved, at, "already at the outputs")

    def _moved(self, moved: bool, at: dict, stuck: str) -> LineageCursor:
        if not moved:
            raise _NowhereToGo(f"{stuck}: {', '.join(self.positions)}")
        return LineageCursor({k: (p, rids.distinct()) for k, (p, rids) in at.items()})

    def go_back_all(self) -> LineageCursor:
        """Back to the original sources (through every earlier capture)."""
        return self._repeat(LineageCursor.go_back)

    def go_next_all(self) -> LineageCursor:
        """Forward to the final outputs (through every later capture)."""
        return self._repeat(LineageCursor.go_next)

    def _repeat(self, step) -> LineageCursor:
        cursor = self
        while True:
            try:
                cursor = step(cursor)
            except _NowhereToGo:
                return cursor

    # rows ----------------------------------------------------------------------------

    def dataframes(self) -> dict[str, DataFrame]:
        """The rows at every position, by position."""
        return {p.label: _rows_at(p, rids) for p, rids in self._at.values()}

    def to_df(self) -> DataFrame:
        """The rows here (all their columns and ``_sp_rid``); one position only."""
        if len(self._at) != 1:
            raise InvalidArgument(
                f"the cursor is at {len(self._at)} positions ({', '.join(self.positions)}); "
                "pick one with go_back(path=...) or use dataframes()"
            )
        ((point, rids),) = self._at.values()
        return _rows_at(point, rids)

    def count(self) -> int:
        """Rows here, over every position."""
        return sum(df.count() for df in self.dataframes().values())

    def show(self, n: int = 20, truncate: bool | int = True) -> None:
        """Print the first ``n`` rows at every position."""
        for label, df in self.dataframes().items():
            print(f"{label}:")
            df.orderBy(RID).show(n, truncate)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(DataFrame, name):
            raise AttributeError(name)
        return getattr(self.to_df(), name)


class _NowhereToGo(InvalidArgument):
    """A step that no row can take."""


def _pick(plan: Planner, path: str | int | None) -> list[str]:
    names = list(plan.infos)
    if path is None:
        return names
    if isinstance(path, bool) or not isinstance(path, (str, int)):
        raise InvalidArgument(f"path must be a source name or position, not {path!r}")
    if isinstance(path, int):
        if not 0 <= path < len(names):
            raise InvalidArgument(f"capture {plan.name!r} has {len(names)} sources; no position {path}")
        return [names[path]]
    plan.check_source(path)
    return [path]


def _written_by(point: Point) -> Point:
    """The output of the capture that wrote this source's files, else the point itself."""
    writer = point.plan.writer_of(point.source)
    return point if writer is None else Point(writer)


def _merge(at: dict, point: Point, rids: DataFrame) -> None:
    if point.key in at:
        rids = at[point.key][1].unionByName(rids)
    at[point.key] = (point, rids)


def _across(pairs: DataFrame, rids: DataFrame, frm: str, to: str) -> DataFrame:
    """The rids on the ``to`` side of the pairs whose ``frm`` side is in ``rids``."""
    return pairs.join(rids.select(F.col(RID).alias(frm)), frm, "left_semi").select(F.col(to).alias(RID))


def _rows_at(point: Point, rids: DataFrame) -> DataFrame:
    rows = point.rows()
    wanted = rids.select(F.col(RID).alias("__sp_wanted"))
    return rows.join(wanted, rows[RID] == wanted["__sp_wanted"], "left_semi")
