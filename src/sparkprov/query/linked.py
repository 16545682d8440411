"""Linked views over captured aggregates that read a common source (Smoke's crossfilter).

Each capture is a chart: one bar per output row (a group), whose height is a measure
over the source rows behind it: how many there are (``count(*)``, the default), or
``count``, ``sum``, ``avg``, ``min`` or ``max`` of a numeric source column. Brushing
groups of one chart traces them backward to the source rows, then forward through
every other chart: each bar then shows the measure over the brushed rows behind it.
That is what a user would get by re-running the other charts' queries with the
brushed rows as a filter, answered from the stored lineage instead.

The lineage is read once into arrays over the source rows the charts reach (their
positions among the sorted rids): for each chart, the groups of each row and the rows
of each group (compressed sparse rows, or one group per row where no row feeds two).
From them, for every two charts, the measure's state (a count, a sum, an extreme)
over the rows behind each pair of their groups (a joint table, as a data cube keeps
for crossfilter): where no row of the brushed chart is in two of its groups, the
groups a brush picks have disjoint rows, and every chart's answer combines rows of its
table with the brushed chart, whatever the data's size. Otherwise (a ROLLUP, say, or
tables too large to keep) a brush gathers the brushed rows and aggregates them.

Where a capture's declared workload kept a drill-down table for the source
(``query/drill_down.py``: the measure per output row and value of some source
columns), a chart grouping the source rows by one of those columns takes its joint
table with that capture from the drill-down table, once checked against the lineage:
the chart's groups are the column's values (read from the source), and every row
behind the capture is behind one of them. ``routes`` says which table answers what.

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
>>> summed = LinkedViews([session.store.load("by_k"), session.store.load("by_v")], measure="sum(v)")
>>> [values.tolist() for values in summed.brush(0, [0])]  # sum(v) of the rows with k = 'a'
[[3.0, nan], [1.0, 2.0]]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..capture.workload import parse_aggregate
from ..errors import InvalidArgument
from ..store.entry import CaptureEntry
from ..store.format import IN, OUT, RID
from ..store.parquet import distinct_sorted, spans
from . import drill_down
from .embedded import EmbeddedEngine

JOINT_MAX = 1 << 22  # cells of one joint table kept (two charts' groups multiplied)
_NUMERIC = ("byte", "short", "integer", "long", "float", "double", "decimal")

States = dict[str, np.ndarray]  # "n": rows (count(*)) or non-null values; "sum"; "ext": min or max


@dataclass(frozen=True)
class Measure:
    """What a bar measures over the source rows behind it: ``count(*)``, or ``count``,
    ``sum``, ``avg``, ``min`` or ``max`` of a source column.

    >>> Measure.of("avg(arr_delay)"), str(Measure.of(None))
    (Measure(function='avg', column='arr_delay'), 'count(*)')
    """

    function: str
    column: str  # "*" for count(*)

    @classmethod
    def of(cls, text: str | None) -> Measure:
        return cls(*parse_aggregate(text, "measure")) if text else cls("count", "*")

    def __str__(self) -> str:
        return f"{self.function}({self.column})"

    def states(self, cells: np.ndarray, values: np.ndarray | None, size: int) -> States:
        """The measure's state in each of ``size`` cells, item ``k`` in ``cells[k]``
        with value ``values[k]`` (NaN for NULL; no values for ``count(*)``)."""
        if self.column == "*":
            return {"n": np.bincount(cells, minlength=size)}
        present = ~np.isnan(values)
        found = {"n": np.bincount(cells, weights=present, minlength=size).astype(np.int64)}
        if self.function in ("sum", "avg"):
            found["sum"] = np.bincount(cells, weights=np.where(present, values, 0.0), minlength=size)
        elif self.function in ("min", "max"):
            found["ext"] = np.full(size, np.nan)
            self._extreme.at(found["ext"], cells, values)  # NaN-skipping: NULLs and empty cells
        return found

    @property
    def _extreme(self) -> np.ufunc:
        return np.fmin if self.function == "min" else np.fmax

    def combined(self, states: States, picked: np.ndarray) -> States:
        """Rows ``picked`` of two-dimensional ``states`` combined (disjoint row sets)."""
        if not len(picked):
            return {
                k: np.zeros(v.shape[1], v.dtype) if k != "ext" else np.full(v.shape[1], np.nan)
                for k, v in states.items()
            }
        return {
            k: self._extreme.reduce(v[picked], axis=0) if k == "ext" else v[picked].sum(axis=0)
            for k, v in states.items()
        }

    def value(self, states: States) -> np.ndarray:
        """The measure from its state: counts as whole numbers, the rest as doubles
        (NaN where no value is behind a bar)."""
        n = states["n"]
        if self.function == "count":
            return n
        if self.function == "sum":
            return np.where(n > 0, states["sum"], np.nan)
        if self.function == "avg":
            return np.where(n > 0, states["sum"] / np.maximum(n, 1), np.nan)
        return states["ext"]


@dataclass
class Chart:
    """One capture as a chart: its groups (output rows), sorted by ``x``."""

    capture: str
    version: int
    x: str  # the output column labelling the bars
    columns: list[str]  # every output column
    labels: list[str]  # the x value of each group, as text (None shown as NULL)
    values: list[list]  # each group's output row
    keys: pa.Array  # the x value of each group
    rids: np.ndarray  # each group's output rid
    total: np.ndarray  # source rows behind each group
    value: np.ndarray  # the measure over them
    # rows -> groups: one group per row (-1: none), or compressed sparse rows
    group_of: np.ndarray | None
    row_ptr: np.ndarray | None
    row_groups: np.ndarray | None
    # groups -> rows
    group_ptr: np.ndarray
    group_rows: np.ndarray


def _ranges(ptr: np.ndarray, items: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """The items of the CSR rows ``picked`` (``items[ptr[i]:ptr[i + 1]]`` for each), concatenated."""
    starts = ptr[picked]
    return items[spans(starts, ptr[picked + 1] - starts)]


def _csr(keys: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=ptr[1:])
    return ptr, values[order]


def _doubles(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric column as doubles, NULL as NaN."""
    return np.asarray(pc.fill_null(column.cast(pa.float64()), np.nan), np.float64)


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


def _fields(entry: CaptureEntry, source: str) -> list[dict]:
    """The columns of ``source`` as ``entry`` read it (Spark's JSON of each field)."""
    return json.loads(entry.sources[source].schema or '{"fields": []}')["fields"]


def numeric_columns(entry: CaptureEntry, source: str) -> list[str]:
    """The columns of ``source`` (as ``entry`` read it) a measure other than a row count can take."""
    return [f["name"] for f in _fields(entry, source) if isinstance(f["type"], str) and f["type"].startswith(_NUMERIC)]


class LinkedViews:
    """Charts of ``entries`` (capture versions) linked through ``source`` (default: the
    one source they all read); ``x`` names each chart's labelling column (default: its
    first output column); ``measure`` is what the bars measure (default ``count(*)``)."""

    def __init__(
        self,
        entries: Sequence[CaptureEntry],
        source: str | None = None,
        x: Sequence[str | None] | None = None,
        measure: str | None = None,
    ) -> None:
        if len(entries) < 2:
            raise InvalidArgument("linked views need two captures or more")
        self.source = common_source(entries, source)
        self.measure = Measure.of(measure)
        self.numeric = numeric_columns(entries[0], self.source)  # the columns a measure can sum
        self._columns: dict[str, pa.ChunkedArray] = {}
        self._grouped: dict[tuple[int, str], dict | None] = {}
        self._drills: dict[int, tuple | None] = {}
        engines = [EmbeddedEngine(e) for e in entries]
        self._engine = engines[0]  # reads the source's columns
        pairs = [engine.pairs(self.source) for engine in engines]
        self.rids = distinct_sorted(np.concatenate([p[IN].to_numpy() for p in pairs]))  # the rows charts reach
        self.values = self._measured(entries[0])
        xs = list(x) if x is not None else [None] * len(entries)
        self.charts = [self._chart(e, p, col) for e, p, col in zip(engines, pairs, xs)]
        self._joint: dict[tuple[int, int], States] = {}
        self.routes: dict[tuple[int, int], str] = {}  # (brushed, answering): "drill-down" or "joint"
        n = len(self.charts)
        for i, entry in enumerate(entries):
            for j in range(n):
                table = self._drill_table(i, j, entry) if i != j else None
                if table is None:
                    table = self._table(i, j)
                    route = "joint"
                else:
                    route = "drill-down"
                if table is not None:
                    self._joint[i, j], self.routes[i, j] = table, route

    # the source's columns -------------------------------------------------------------

    def _column(self, name: str) -> pa.ChunkedArray:
        """Source column ``name`` of the rows the charts reach, in rid order (read once)."""
        if name not in self._columns:
            rows = self._engine.source_rows(self.source, self.rids, only={name.lower()})
            self._columns[name] = rows.column(0)
        return self._columns[name]

    def _measured(self, entry: CaptureEntry) -> np.ndarray | None:
        column = self.measure.column
        if column == "*":
            return None
        if self.measure.function == "count":  # of any column: 1 where it holds a value
            found = [f["name"] for f in _fields(entry, self.source) if f["name"].lower() == column.lower()]
            if not found:
                raise InvalidArgument(f"measure {self.measure}: source {self.source!r} has no column {column!r}")
            return np.where(self._column(found[0]).is_null().to_numpy(zero_copy_only=False), np.nan, 1.0)
        found = [c for c in self.numeric if c.lower() == column.lower()]
        if not found:
            raise InvalidArgument(
                f"measure {self.measure} needs a numeric column of source {self.source!r} (numeric: {self.numeric})"
            )
        return _doubles(self._column(found[0]))

    # the charts and their tables -------------------------------------------------------

    def _table(self, i: int, j: int) -> States | None:
        """The measure's state over the rows behind each group of chart ``i`` (one per
        row) and each group of chart ``j``, as matrices; None where chart ``i`` has a
        row in two groups or the matrices would be too large."""
        a, b = self.charts[i], self.charts[j]
        if a.group_of is None or len(a.rids) * len(b.rids) > JOINT_MAX:
            return None
        if b.group_of is not None:
            rows, groups_j = np.arange(len(self.rids)), b.group_of
        else:  # every (row, group) of chart j
            rows = np.repeat(np.arange(len(self.rids)), np.diff(b.row_ptr))
            groups_j = b.row_groups
        groups_i = a.group_of[rows]
        both = (groups_i >= 0) & (groups_j >= 0)
        rows = rows[both]
        cells = groups_i[both] * len(b.rids) + groups_j[both]
        values = self.values[rows] if self.values is not None else None
        states = self.measure.states(cells, values, len(a.rids) * len(b.rids))
        return {k: v.reshape(len(a.rids), len(b.rids)) for k, v in states.items()}

    def _drill(self, i: int, entry: CaptureEntry) -> tuple[tuple[str, ...], dict, pa.Table, np.ndarray] | None:
        """Capture ``entry``'s (chart ``i``'s) drill-down table where it holds the
        measure and no source row is behind two output rows: its grouping columns, the
        columns of the measure's states, the table (read once) and each of its rows'
        group of chart ``i``; None otherwise."""
        if i not in self._drills:
            self._drills[i] = None
            group_by = drill_down.spec(entry, self.source)
            path = drill_down.table_path(entry, self.source)
            wanted = self._drill_states(group_by.parsed()) if group_by is not None else None
            if wanted is not None and path.is_dir() and drill_down.read_meta(path)["disjoint"]:
                names = sorted({name for name in wanted.values() if name})
                by = [f"__sp_b{k}" for k in range(len(group_by.by))]
                table = pq.read_table(path, columns=[OUT, *by, *names])
                a = self.charts[i]
                out = table[OUT].to_numpy()
                order = np.argsort(a.rids)
                found = np.searchsorted(a.rids, out, sorter=order)
                rows_i = order[np.minimum(found, max(len(a.rids) - 1, 0))] if len(a.rids) else found
                if not len(out) or np.array_equal(a.rids[rows_i], out):
                    self._drills[i] = (tuple(group_by.by), wanted, table, rows_i)
        return self._drills[i]

    def _drill_table(self, i: int, j: int, entry: CaptureEntry) -> States | None:
        """Chart ``i``'s joint table with chart ``j`` from the drill-down table capture
        ``entry`` (chart ``i``'s) kept, where it has one grouped by chart ``j``'s column,
        holding the measure, and the lineage shows it answers as the lineage does."""
        a, b = self.charts[i], self.charts[j]
        if a.group_of is None or b.group_of is None:
            return None
        drill = self._drill(i, entry)
        if drill is None:
            return None
        columns, wanted, table, rows_i = drill
        by = [k for k, c in enumerate(columns) if c.lower() == b.x.lower()]
        if not by:
            return None
        # every row behind chart i is behind a group of chart j, and chart j's groups are
        # the column's values: the rows behind i with a value are those behind both
        if (b.group_of[a.group_rows] < 0).any():
            return None
        groups_of_value = self._groups_by_value(j, columns[by[0]])
        if groups_of_value is None:
            return None
        groups_j = np.array([groups_of_value.get(v, -1) for v in table[f"__sp_b{by[0]}"].to_pylist()], np.int64)
        if (groups_j < 0).any():
            return None
        size = len(a.rids) * len(b.rids)
        cells = rows_i * len(b.rids) + groups_j
        states = {}
        for state, name in wanted.items():
            if state == "n" and name is None:  # NULL where no value is behind a cell
                present = ~np.isnan(_doubles(table[wanted["sum" if "sum" in wanted else "ext"]]))
                states["n"] = np.bincount(cells, weights=present, minlength=size).astype(np.int64)
            elif state == "n":
                states["n"] = np.bincount(cells, weights=_doubles(table[name]), minlength=size).astype(np.int64)
            elif state == "sum":
                states["sum"] = np.bincount(cells, weights=np.nan_to_num(_doubles(table[name])), minlength=size)
            else:
                states["ext"] = np.full(size, np.nan)
                self.measure._extreme.at(states["ext"], cells, _doubles(table[name]))
        return {k: v.reshape(len(a.rids), len(b.rids)) for k, v in states.items()}

    def _drill_states(self, parsed: list[tuple[str, str]]) -> dict[str, str | None] | None:
        """The drill-down table's columns holding the measure's states (None for a
        count of values derived from the values themselves), or None if it lacks them."""
        m = self.measure
        same = [(k, fn) for k, (fn, c) in enumerate(parsed) if c.lower() == m.column.lower()]
        for k, fn in same:
            column = f"__sp_a{k}"
            if fn == m.function == "count":
                return {"n": column}
            if fn == "avg" and m.function in ("count", "sum", "avg"):
                return {"n": column + "_n", **({"sum": column} if m.function != "count" else {})}
            if fn == m.function and fn == "sum":
                return {"n": None, "sum": column}
            if fn == m.function:  # min, max
                return {"n": None, "ext": column}
        return None

    def _groups_by_value(self, chart: int, column: str) -> dict | None:
        """Chart ``chart``'s group of each value of source ``column``, if the chart
        groups the rows it reaches by that column; else None."""
        key = (chart, column.lower())
        if key not in self._grouped:
            self._grouped[key] = self._grouping(self.charts[chart], column)
        return self._grouped[key]

    def _grouping(self, chart: Chart, column: str) -> dict | None:
        try:
            values = self._column(column)
            keys = chart.keys.cast(values.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        labels = keys.to_pylist()
        if len(set(labels)) < len(labels):  # x is not all of the grouping: a value names two groups
            return None
        # each row's group as its value says (NULL matching NULL), against its lineage's
        found = pc.fill_null(pc.index_in(values, value_set=keys, skip_nulls=False), -1)
        reached = chart.group_of >= 0
        if not np.array_equal(np.asarray(found)[reached], chart.group_of[reached]):
            return None
        return {v: g for g, v in enumerate(labels)}

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
        values = self.values[group_rows] if self.values is not None else None
        cells = np.repeat(np.arange(n_groups), np.diff(group_ptr))
        return Chart(
            capture=entry.name,
            version=entry.version,
            x=x,
            columns=columns,
            labels=["NULL" if r[x] is None else str(r[x]) for r in data],
            values=[[r[c] for c in columns] for r in data],
            keys=order[x].combine_chunks(),
            rids=rids,
            total=np.diff(group_ptr),
            value=self.measure.value(self.measure.states(cells, values, n_groups)),
            group_of=group_of,
            row_ptr=row_ptr,
            row_groups=row_groups,
            group_ptr=group_ptr,
            group_rows=group_rows,
        )

    # brushing ---------------------------------------------------------------------------

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
        """For every chart, the measure over the brushed rows (those behind ``groups``
        of chart ``chart``) behind each of its groups."""
        picked = self._picked(chart, groups)
        rows = None
        answers = []
        for j, c in enumerate(self.charts):
            table = self._joint.get((chart, j))
            if table is not None:
                answers.append(self.measure.value(self.measure.combined(table, picked)))
                continue
            if rows is None:
                rows = self.brushed_rows(chart, picked)
            if c.group_of is not None:
                hit = c.group_of[rows]
                items, cells = rows[hit >= 0], hit[hit >= 0]
            else:
                cells = _ranges(c.row_ptr, c.row_groups, rows)
                items = np.repeat(rows, np.diff(c.row_ptr)[rows])
            values = self.values[items] if self.values is not None else None
            answers.append(self.measure.value(self.measure.states(cells, values, len(c.rids))))
        return answers

    def _check(self, chart: int) -> Chart:
        if isinstance(chart, bool) or not isinstance(chart, (int, np.integer)) or not 0 <= chart < len(self.charts):
            raise InvalidArgument(f"chart must be 0 to {len(self.charts) - 1}, not {chart!r}")
        return self.charts[chart]
