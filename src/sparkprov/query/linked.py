"""Linked views over captured aggregates that read a common source (Smoke's crossfilter).

Each capture is a chart: one bar per output row (a group), whose height is the number
of source rows behind it. Brushing groups of one chart traces them backward to the
source rows, then forward through every other chart: each bar then shows how many of
the brushed rows are behind it. That is the count a user would get by re-running the
other charts' queries with the brushed rows as a filter, answered from the stored
lineage instead.

The lineage is read once into arrays over the source rows the charts reach (their
positions among the sorted rids): for each chart, the groups of each row and the rows
of each group (compressed sparse rows, or one group per row where no row feeds two).
From them, for every two charts, the rows behind each pair of their groups (a joint
table, as a data cube keeps for crossfilter): where no row of the brushed chart is in
two of its groups, the groups a brush picks have disjoint rows, and every chart's
answer is a sum of rows of its table with the brushed chart, whatever the data's size.
Otherwise (a ROLLUP, say, or tables too large to keep) a brush is a gather and a count
over the brushed rows.

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> path = tempfile.mkdtemp() + "/t"  # one source both read in place: its rids are the same rows
>>> spark.createDataFrame([("a", 1), ("a", 2), ("b", 1)], ["k", "v"]).write.parquet(path)
>>> df = spark.read.parquet(path)
>>> _ = session.capture(df.groupBy("k").count(), name="by_k")
>>> _ = session.capture(df.groupBy("v").count(), name="by_v")
>>> views = LinkedViews([session.store.load("by_k"), session.store.load("by_v")])
>>> [c.labels for c in views.charts], [c.total.tolist() for c in views.charts]
([['a', 'b'], ['1', '2']], [[2, 1], [2, 1]])
>>> [counts.tolist() for counts in views.brush(0, [0])]  # brush k = 'a'
[[2, 0], [1, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument
from ..store.entry import CaptureEntry
from ..store.format import IN, OUT, RID
from ..store.parquet import distinct_sorted, spans
from .embedded import EmbeddedEngine


@dataclass
class Chart:
    """One capture as a chart: its groups (output rows), sorted by ``x``."""

    capture: str
    version: int
    x: str  # the output column labelling the bars
    columns: list[str]  # every output column
    labels: list[str]  # the x value of each group, as text (None shown as NULL)
    values: list[list]  # each group's output row
    rids: np.ndarray  # each group's output rid
    total: np.ndarray  # source rows behind each group
    # rows -> groups: one group per row (-1: none), or compressed sparse rows
    group_of: np.ndarray | None
    row_ptr: np.ndarray | None
    row_groups: np.ndarray | None
    # groups -> rows
    group_ptr: np.ndarray
    group_rows: np.ndarray


JOINT_MAX = 1 << 22  # cells of one joint table kept (two charts' groups multiplied)


def _ranges(ptr: np.ndarray, items: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """The items of the CSR rows ``picked`` (``items[ptr[i]:ptr[i + 1]]`` for each), concatenated."""
    starts = ptr[picked]
    return items[spans(starts, ptr[picked + 1] - starts)]


def _csr(keys: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=ptr[1:])
    return ptr, values[order]


def common_source(entries: Sequence[CaptureEntry], source: str | None = None) -> str:
    """The source every capture of ``entries`` read, as the same files (so its rids name
    the same rows): ``source`` when given, else the only one."""
    names = [e.name for e in entries]
    shared = set(entries[0].sources)
    for e in entries[1:]:
        shared &= {s for s, info in e.sources.items() if info.files == entries[0].sources.get(s, info).files}
    if source is not None:
        if source not in shared:
            raise InvalidArgument(f"captures {names} do not all read source {source!r} (common: {sorted(shared)})")
        return source
    if len(shared) != 1:
        what = "no common source" if not shared else f"several common sources ({', '.join(sorted(shared))}): name one"
        raise InvalidArgument(f"linked views need captures that read one source; {names} have {what}")
    return next(iter(shared))


class LinkedViews:
    """Charts of ``entries`` (capture versions) linked through ``source`` (default: the
    one source they all read); ``x`` names each chart's labelling column (default: its
    first output column)."""

    def __init__(
        self, entries: Sequence[CaptureEntry], source: str | None = None, x: Sequence[str | None] | None = None
    ) -> None:
        if len(entries) < 2:
            raise InvalidArgument("linked views need two captures or more")
        self.source = common_source(entries, source)
        engines = [EmbeddedEngine(e) for e in entries]
        pairs = [engine.pairs(self.source) for engine in engines]
        self.rids = distinct_sorted(np.concatenate([p[IN].to_numpy() for p in pairs]))  # the rows charts reach
        xs = list(x) if x is not None else [None] * len(entries)
        self.charts = [self._chart(e, p, col) for e, p, col in zip(engines, pairs, xs)]
        self._joint = {
            (i, j): t
            for i in range(len(self.charts))
            for j in range(len(self.charts))
            if (t := self._table(i, j)) is not None
        }

    def _table(self, i: int, j: int) -> np.ndarray | None:
        """Rows behind each group of chart ``i`` (one per row) and each group of chart
        ``j``, as a matrix; None where chart ``i`` has a row in two groups or the
        matrix would be too large."""
        a, b = self.charts[i], self.charts[j]
        if a.group_of is None or len(a.rids) * len(b.rids) > JOINT_MAX:
            return None
        if b.group_of is not None:
            rows_i, groups_j = a.group_of, b.group_of
        else:  # every (row, group) of chart j
            groups_j = b.row_groups
            rows_i = a.group_of[np.repeat(np.arange(len(self.rids)), np.diff(b.row_ptr))]
        both = (rows_i >= 0) & (groups_j >= 0)
        cells = np.bincount(rows_i[both] * len(b.rids) + groups_j[both], minlength=len(a.rids) * len(b.rids))
        return cells.reshape(len(a.rids), len(b.rids))

    def _chart(self, engine: EmbeddedEngine, pairs: pa.Table, x: str | None) -> Chart:
        entry = engine.entry
        output = engine.output_rows()
        columns = [c for c in output.column_names if c != RID]
        x = x or columns[0]
        if x not in columns:
            raise InvalidArgument(f"capture {entry.name!r} has no output column {x!r} (columns: {columns})")
        order = output.sort_by([(x, "ascending")]).select([*columns, RID])  # nulls last
        rids = order[RID].to_numpy()
        n_groups = len(rids)
        by_rid = np.argsort(rids)
        out = pairs[OUT].to_numpy()
        found = np.searchsorted(rids, out, sorter=by_rid)
        groups = by_rid[np.minimum(found, n_groups - 1)] if n_groups else found
        if len(out) and (n_groups == 0 or not np.array_equal(rids[groups], out)):
            raise InvalidArgument(f"capture {entry.name!r}: its lineage names output rows its output lacks")
        rows = np.searchsorted(self.rids, pairs[IN].to_numpy())
        n_rows = len(self.rids)
        group_ptr, group_rows = _csr(groups, rows, n_groups)
        per_row = np.bincount(rows, minlength=n_rows)
        if per_row.max(initial=0) <= 1:  # no row feeds two groups: one array answers
            group_of = np.full(n_rows, -1, np.int64)
            group_of[rows] = groups
            row_ptr = row_groups = None
        else:
            group_of = None
            row_ptr, row_groups = _csr(rows, groups, n_rows)
        data = order.select(columns).to_pylist()
        return Chart(
            capture=entry.name,
            version=entry.version,
            x=x,
            columns=columns,
            labels=["NULL" if r[x] is None else str(r[x]) for r in data],
            values=[[r[c] for c in columns] for r in data],
            rids=rids,
            total=np.diff(group_ptr),
            group_of=group_of,
            row_ptr=row_ptr,
            row_groups=row_groups,
            group_ptr=group_ptr,
            group_rows=group_rows,
        )

    def _picked(self, chart: int, groups: Sequence[int]) -> np.ndarray:
        c = self._check(chart)
        picked = np.unique(np.asarray(groups, np.int64))
        if picked.size and (picked[0] < 0 or picked[-1] >= len(c.rids)):
            raise InvalidArgument(f"chart {c.capture!r} has groups 0 to {len(c.rids) - 1}, not {list(groups)}")
        return picked

    def brushed_rows(self, chart: int, groups: Sequence[int]) -> np.ndarray:
        """Positions (in :attr:`rids`) of the source rows behind ``groups`` of chart ``chart``."""
        picked = self._picked(chart, groups)
        c = self.charts[chart]
        rows = _ranges(c.group_ptr, c.group_rows, picked)
        return rows if c.group_of is not None else distinct_sorted(rows)

    def brushed_count(self, chart: int, groups: Sequence[int]) -> int:
        """How many source rows are behind ``groups`` of chart ``chart``."""
        c = self._check(chart)
        if c.group_of is not None:  # disjoint groups: their totals add up
            return int(c.total[self._picked(chart, groups)].sum())
        return int(self.brushed_rows(chart, groups).size)

    def brush(self, chart: int, groups: Sequence[int]) -> list[np.ndarray]:
        """For every chart, the brushed rows (those behind ``groups`` of chart
        ``chart``) behind each of its groups."""
        if all((chart, j) in self._joint for j in range(len(self.charts))):
            picked = self._picked(chart, groups)
            return [self._joint[chart, j][picked].sum(axis=0) for j in range(len(self.charts))]
        rows = self.brushed_rows(chart, groups)
        counts = []
        for c in self.charts:
            hit = c.group_of[rows] if c.group_of is not None else _ranges(c.row_ptr, c.row_groups, rows)
            counts.append(np.bincount(hit[hit >= 0], minlength=len(c.rids)))
        return counts

    def _check(self, chart: int) -> Chart:
        if isinstance(chart, bool) or not isinstance(chart, (int, np.integer)) or not 0 <= chart < len(self.charts):
            raise InvalidArgument(f"chart must be 0 to {len(self.charts) - 1}, not {chart!r}")
        return self.charts[chart]
