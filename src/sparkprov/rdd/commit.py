"""An RDD action as a capture: its records written with ids, lineage resolved, committed.

The records are written by the action's own job (``worker.output_partition``), so the
pipeline runs once. Their slots are kept as they are, with links to the side files
the grouping operators wrote; ``resolve.py`` turns them into end-to-end pairs when a
Spark answer first needs them, and the embedded engine traces them directly
(``query/sides.py``).

>>> unified_type([pa.int64(), pa.null(), pa.int64()])
DataType(int64)
>>> unified_type([pa.int64(), pa.string()])
DataType(string)
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import RDD
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from ..api import Capture
from ..capture.lineage import slots_json
from ..capture.output_write import Write, write_for_user
from ..sources.identity import RID
from ..store.catalog import check_name
from ..store.fs import link_files
from ..store.layout import CaptureFolders
from . import worker

ORDER = "_sp_order"  # toDF writes the records' order with them (frames.py): not a value column

if TYPE_CHECKING:
    from .context import LineageContext


def commit_action(
    ctx: LineageContext,
    source: RDD | list,
    slots: list,
    action: str,
    name: str | None,
    run: Callable[[RDD], Any] = RDD.collect,
) -> tuple[Any, Capture]:
    """Commit the capture of an action over the traced records ``source``: an RDD of
    ``(slots, value)``, on which ``run`` does the action to the RDD of values (writing
    the records on the way), or such records already on the driver (``take``).
    Returns what the action returned, and the capture."""
    names, kinds = [s.name for s in slots], [s.kind for s in slots]

    def write(out_path: Path) -> tuple[Any, dict | None]:
        if isinstance(source, list):
            out_path.mkdir()
            table = worker.output_table(
                [r[1] for r in source],
                list(range(len(source))),
                names,
                [[r[0][j] for r in source] for j in range(len(slots))],
                [worker.slot_type(k) for k in kinds],
            )
            pq.write_table(table, out_path / "part-00000.parquet")
            return [r[1] for r in source], None
        return run(source.mapPartitionsWithIndex(worker.output_partition(str(out_path), names, kinds))), None

    return _commit(ctx, slots, action, name, write)


def commit_frame(ctx: LineageContext, staged: DataFrame, display: list[str], slots: list, name: str | None) -> Capture:
    """Commit the capture of ``rdd.toDF()``: ``staged`` holds the DataFrame's columns
    (stored names) then the records' slots. Its rows are written as Parquet files for
    the DataFrame to read (as ``capture(..., path=...)`` writes them), so a DataFrame
    capture reading those files traces on through this one."""
    path = ctx._state.folders.frame(uuid.uuid4().hex)

    def write(out_path: Path) -> tuple[None, dict]:
        return None, write_for_user(ctx.session._bridge, staged, display, Write(str(path)), str(out_path))

    try:
        return _commit(ctx, slots, "toDF", name, write)[1]
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)  # no capture: nothing may read these files
        raise


def _commit(ctx: LineageContext, slots: list, action: str, name: str | None, write) -> tuple[Any, Capture]:
    name = check_name(name if name is not None else f"rdd-{action}")
    session = ctx.session
    store = session.store
    started = time.time()
    capture_id, data = store.new_data_dir()
    out_path = CaptureFolders(data).output
    names, kinds = [s.name for s in slots], [s.kind for s in slots]
    try:
        result, written = write(out_path)
        if not list(out_path.glob("part-*.parquet")):  # an RDD without partitions
            out_path.mkdir(exist_ok=True)
            types = [worker.slot_type(k) for k in kinds]
            table = worker.output_table([], [], names, [[] for _ in slots], types)
            pq.write_table(table, out_path / "part-00000.parquet")
        entry = _lineage_entry(ctx, capture_id, data, slots, action)
        entry["written"] = written
    except BaseException:
        store.discard(capture_id)
        raise
    entry["seconds"] = round(time.time() - started, 3)
    return result, Capture(session, store.commit(name, entry))


def _lineage_entry(ctx: LineageContext, capture_id: str, data: Path, slots: list, action: str) -> dict:
    # Nothing is joined here (Titian's lazy lineage): the entry keeps the records'
    # slots and links the side files behind them, which the operators' own tasks wrote
    state = ctx._state
    spark = ctx.session.spark
    folders = CaptureFolders(data)
    out_path = folders.output
    columns = _unify_output(out_path, {s.name for s in slots} | {ORDER})
    reached = _reachable_sides(slots, state.sides)
    for k in reached:
        _link_side(Path(state.sides[k].path), folders.side(k))
    sources = _reachable_sources(slots, state.sides)
    arrow = pq.read_schema(next(out_path.glob("part-*.parquet")))
    schema = from_arrow_schema(pa.schema([arrow.field(c) for c in [*columns, RID]]))
    operators = sorted({state.sides[k].operator for k in reached})
    explain = [[1, f"RDD.{action}", "exact", "records written with ids by the action's own job"]]
    for op in operators:
        coarse = "coarse: the whole input partition" if op == "mapPartitions" else "exact"
        explain.append([2, f"RDD.{op}", coarse, "partial groups recorded per input partition"])
    return {
        "id": capture_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spark_version": spark.version,
        "plan": f"RDD.{action}",
        "output": {"path": str(out_path), "columns": columns, "stored": columns, "schema": schema.json()},
        "sources": {state.sources[i].name: state.sources[i].to_json() for i in sorted(sources)},
        "lineage": {
            "path": str(folders.lineage),  # the resolved pairs, once a Spark answer needs them
            "sources": {state.sources[i].name: i for i in sorted(sources)},
            "shared": None,
            "rdd": {
                "slots": slots_json(slots),
                "sides": {
                    str(k): {"operator": state.sides[k].operator, "slots": slots_json(state.sides[k].slots)}
                    for k in sorted(reached)
                },
            },
        },
        "operators": [f"RDD.{op}" for op in operators],
        "explain": explain,
        "written": None,
        "witnesses": None,
    }


def _link_side(side: Path, to: Path) -> None:
    """The capture's own copy of a side's files: hard links (no bytes copied), so a
    later job that computes the operator again (replacing its files) leaves them be."""
    link_files(sorted(side.glob("part-*.parquet")), to)


def _reachable_sides(slots: list, sides: list) -> set[int]:
    found: set[int] = set()
    todo = [s.ref for s in slots if s.kind != "source"]
    while todo:
        k = todo.pop()
        if k not in found:
            found.add(k)
            todo.extend(s.ref for s in sides[k].slots if s.kind != "source")
    return found


def _reachable_sources(slots: list, sides: list) -> set[int]:
    found = {s.ref for s in slots if s.kind == "source"}
    for k in _reachable_sides(slots, sides):
        found |= {s.ref for s in sides[k].slots if s.kind == "source"}
    return found


def unified_type(types: list[pa.DataType]) -> pa.DataType:
    """One type for a column the partitions typed apart: theirs if they agree (NULL
    columns aside), Arrow's permissive promotion (int and double: double), else text."""
    known = [t for t in types if t != pa.null()]
    if not known:
        return pa.null()
    if all(t == known[0] for t in known):
        return known[0]
    try:
        return pa.unify_schemas([pa.schema([("c", t)]) for t in known], promote_options="permissive").field("c").type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.string()


def _unify_output(path: Path, slot_names: set[str]) -> list[str]:
    """Give every output file the same schema (each partition typed its own values);
    returns the value columns."""
    files = sorted(path.glob("part-*.parquet"))
    schemas = [pq.read_schema(f) for f in files]
    columns: list[str] = []
    for s in schemas:
        columns.extend(n for n in s.names if n not in columns and n != RID and n not in slot_names)
    types = {c: unified_type([s.field(c).type for s in schemas if c in s.names]) for c in columns}
    rest = [n for n in schemas[0].names if n == RID or n in slot_names]
    target = pa.schema([*((c, types[c]) for c in columns), *(schemas[0].field(n) for n in rest)])
    for f, s in zip(files, schemas):
        if s != target:
            table = pq.read_table(f)
            arrays = [_as_type(table, c, target.field(c).type) for c in target.names]
            pq.write_table(pa.Table.from_arrays(arrays, schema=target), f)
    return columns


def _as_type(table: pa.Table, name: str, to: pa.DataType) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows, to)
    column = table.column(name).combine_chunks()
    if column.type == to:
        return column
    try:
        return column.cast(to)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else repr(v) for v in column.to_pylist()], to)
