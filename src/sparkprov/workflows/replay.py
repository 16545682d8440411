"""Executions tracked after they ran (``wf.run(track="later")``): Smoke's lazy capture
for workflows. Such an execution runs untracked; what it wrote stays in the store like
any execution's. When its provenance is first asked for, it runs again with tracking
over the inputs and state versions it read then, and what the second run writes must
equal, row for row and value for value, what the first wrote: the graph then describes
the rows the user has. A module that gives other rows the second time (a random
number, the clock) fails the tracking, and the first run's files are put back.

The first run keeps its inputs as given (``WorkflowFolders.given``): the second run
captures them from there, as an eager run captures the DataFrames it is handed. The
first run's other files are moved aside (``WorkflowFolders.untracked``) while the
second runs; a process that ended in between leaves them there, and the next attempt
puts them back first.

>>> import tempfile
>>> from pathlib import Path
>>> import pyarrow as pa, pyarrow.parquet as pq
>>> a, b = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
>>> pq.write_table(pa.table({"k": [1, 2], "x": [0.1 + 0.2, 1.0]}), a / "part-0.parquet")
>>> pq.write_table(pa.table({"k": [2, 1], "x": [1.0, 0.3], "_sp_rid": [0, 1]}), b / "part-0.parquet")
>>> differences(a, b) is None  # a sum's last bits may differ from run to run
True
>>> pq.write_table(pa.table({"k": [2, 1], "x": [1.0, 0.5]}), b / "part-0.parquet")
>>> differences(a, b)
'1 row(s) with floating-point values further apart than 1e-09'
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from ..capture.later import FLOAT_TOLERANCE
from ..errors import LineageNotBuilt
from ..store.duck import quote
from ..store.layout import WorkflowFolders

_EXECUTION, _STATE = "execution", "state"


def move_aside(folders: WorkflowFolders, execution: int, state: list[str]) -> Path:
    """Move what ``execution`` wrote (its datasets, its versions of the ``state`` tables)
    aside, where :func:`check_same` finds it; returns the folder."""
    aside = folders.untracked(execution)
    put_back(folders, execution)  # an attempt that ended half way
    (aside / _EXECUTION).mkdir(parents=True)
    for dataset in _datasets(folders.execution(execution)):
        dataset.rename(aside / _EXECUTION / dataset.name)
    for name in state:
        if folders.state(name, execution).is_dir():
            (aside / _STATE).mkdir(exist_ok=True)
            folders.state(name, execution).rename(aside / _STATE / name)
    return aside


def put_back(folders: WorkflowFolders, execution: int) -> None:
    """Undo :func:`move_aside`: the first run's files in place again, what the second
    run wrote removed."""
    aside = folders.untracked(execution)
    if not aside.is_dir():
        return
    for written in _datasets(folders.execution(execution)):
        shutil.rmtree(written)
    for kept in _datasets(aside / _EXECUTION):
        kept.rename(folders.execution(execution) / kept.name)
    for kept in sorted((aside / _STATE).iterdir()) if (aside / _STATE).is_dir() else []:
        shutil.rmtree(folders.state(kept.name, execution), ignore_errors=True)
        kept.rename(folders.state(kept.name, execution))
    shutil.rmtree(aside)


def forget(folders: WorkflowFolders, execution: int) -> None:
    """The first run's files, no longer needed: the second run's are equal."""
    shutil.rmtree(folders.untracked(execution), ignore_errors=True)


def check_same(folders: WorkflowFolders, execution: int, workflow: str) -> None:
    """Raise ``LineageNotBuilt`` unless every dataset and state version ``execution``
    wrote again equals what its first run wrote (kept aside)."""
    aside = folders.untracked(execution)
    pairs = [(f"dataset {p.name!r}", p, folders.dataset(execution, p.name)) for p in _datasets(aside / _EXECUTION)]
    pairs += [(f"state table {p.name!r}", p, folders.state(p.name, execution)) for p in _datasets(aside / _STATE)]
    for what, first, second in pairs:
        differ = differences(first, second) if second.is_dir() else "not written"
        if differ:
            raise LineageNotBuilt(
                f"workflow {workflow!r}, execution {execution} (run with track='later'): its {what} came out "
                f"otherwise when run again to track it ({differ}); a module that gives other rows each time "
                "(random numbers, the clock) can be tracked only as it runs: track=True"
            )


def _datasets(folder: Path) -> list[Path]:
    # a dataset is a folder of Parquet files named after it (an identifier): not the
    # graph's folder, nor the inputs as given
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name.isidentifier() and p.name != "graph")


def differences(first: Path, second: Path) -> str | None:
    """How the rows in Parquet folder ``second`` differ from those in ``first`` (None:
    none), compared by value on ``first``'s columns: rows in any order, floating-point
    values within ``FLOAT_TOLERANCE`` (relative; absolute below 1), as lazy captures
    compare theirs (``capture.later``). DuckDB reads the files (spilling to disk for
    large ones); values inside nested columns are compared exactly."""
    with duckdb.connect() as con:
        return _differences(con, _rows(con, first), _rows(con, second))


def _rows(con: duckdb.DuckDBPyConnection, folder: Path) -> duckdb.DuckDBPyRelation:
    files = [str(p) for p in sorted(folder.glob("*.parquet")) if not p.name.startswith(("_", "."))]
    return con.read_parquet(files, union_by_name=True) if files else con.from_arrow(pq.read_table(folder))


def _differences(con: duckdb.DuckDBPyConnection, a: duckdb.DuckDBPyRelation, b: duckdb.DuckDBPyRelation) -> str | None:
    missing = [c for c in a.columns if c not in b.columns]
    if missing:
        return f"no column {missing[0]!r}"
    q = quote
    b = b.select(", ".join(map(q, a.columns)))
    count_a, count_b = a.count("*").fetchone()[0], b.count("*").fetchone()[0]
    if count_a != count_b:
        return f"{count_b} row(s), not {count_a}"
    floats = [c for c, t in zip(a.columns, a.types) if str(t) in ("FLOAT", "DOUBLE")]
    exact = [c for c in a.columns if c not in floats]
    partition = f"partition by {', '.join(map(q, exact))}" if exact else ""
    order = f"order by {', '.join(map(q, floats))}" if floats else ""
    ranked = f"select *, row_number() over ({partition} {order}) as __sp_rank from"
    on = " and ".join([*(f"a.{q(c)} is not distinct from b.{q(c)}" for c in exact), "a.__sp_rank = b.__sp_rank"])
    differs = " or ".join(
        f"not (a.{q(c)} is not distinct from b.{q(c)} or coalesce(abs(a.{q(c)} - b.{q(c)}) <= "
        f"{FLOAT_TOLERANCE!r} * greatest(abs(a.{q(c)}), abs(b.{q(c)}), 1.0), false))"
        for c in floats
    )
    a.create_view("first_rows")
    b.create_view("second_rows")
    unmatched, changed = con.execute(
        f"with a as ({ranked} first_rows), b as ({ranked} second_rows) "
        f"select count(*) filter (where a.__sp_rank is null or b.__sp_rank is null), "
        f"count(*) filter (where a.__sp_rank is not null and b.__sp_rank is not null and ({differs or 'false'})) "
        f"from a full outer join b on {on}"
    ).fetchone()
    if unmatched:
        return f"{unmatched // 2 or 1} row(s) without an equal row"
    if changed:
        return f"{changed} row(s) with floating-point values further apart than {FLOAT_TOLERANCE:g}"
    return None
