"""``sp.Workflow``: modules with state, run again and again, with fine-grained
provenance across invocations and executions (Lipstick).

>>> import tempfile, sparkprov as sp
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> wf = sp.Workflow("shop", sp.LineageSession(spark, store=tempfile.mkdtemp()))
>>> wf.state("stock", spark.createDataFrame([("vw", 1), ("vw", 2), ("bmw", 3)], "model string, car long"))
>>> @wf.module(inputs=["request"], outputs=["offer"], state=["stock"])
... def dealer(request, stock):
...     return request.join(stock, "model").groupBy("model").count()
>>> execution = wf.run(request=spark.createDataFrame([("vw",)], "model string"))
>>> g = wf.graph()
>>> offer = g.tuple("offer", wf.dataset("offer").first()._sp_rid, 1)
>>> car = wf.dataset("stock", 0).where("car = 1").first()._sp_rid
>>> g.depends(offer, on=g.tuple("stock", car, 0))  # another vw is on the lot: the offer stays
False
>>> g.depends(offer, on=g.tuple("request", wf.dataset("request").first()._sp_rid, 1))
True

An execution run with ``track="later"`` costs what an untracked one costs; it is
tracked (run again, with tracking) when its provenance is first asked for:

>>> later = wf.run(track="later", request=spark.createDataFrame([("bmw",)], "model string"))
>>> later.tracked
False
>>> g = wf.graph()
>>> bmw = wf.dataset("stock", 0).where("car = 3").first()._sp_rid
>>> g.depends(g.tuple("offer", wf.dataset("offer", 2).first()._sp_rid, 2), on=g.tuple("stock", bmw, 0))
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from ..api.session import LineageSession
from ..errors import InvalidArgument
from ..plan.written import read_written
from ..store.catalog import check_name
from ..store.layout import StoreFolders, WorkflowFolders
from ..store.workflow_record import (
    ExecutionRecord,
    initial_state,
    records,
    write_initial_state,
    write_record,
)
from . import execution as run_one
from . import replay
from .graph import ProvenanceGraph
from .modules import Module, check_names, check_new, workflow_inputs
from .stored import load_graph


class Workflow:
    """A workflow of modules: Python functions over DataFrames, each declared with the
    datasets it reads (``inputs``), writes (``outputs``) and keeps (``state``). The
    order follows from the names; :meth:`run` is one execution."""

    def __init__(self, name: str, session: LineageSession) -> None:
        if not isinstance(session, LineageSession):
            raise InvalidArgument(f"a Workflow needs a LineageSession, not {type(session).__name__}")
        self.name = check_name(name)
        self.session = session
        self.folders: WorkflowFolders = StoreFolders(session.store.root).workflow(name)
        self.modules: dict[str, Module] = {}
        self._state_tuples: dict = {}  # (state, version, rid) -> node, for the current versions

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, modules={list(self.modules)}, executions={len(self.executions)})"

    def module(
        self,
        inputs: Iterable[str] | str = (),
        outputs: Iterable[str] | str = (),
        state: Iterable[str] | str = (),
        name: str | None = None,
    ) -> Callable[[Callable], Callable]:
        """Declare a module: the decorated function is called with its inputs and state
        tables as DataFrames, by name, and returns a DataFrame (its one output) or a
        dict ``{output or state table: DataFrame}``; a state table it returns is
        replaced by those rows (rows kept from the old version stay the same tuples).
        ``name``: the module's name (default: the function's).

        >>> @wf.module(inputs=["bids"], outputs=["best"])  # doctest: +SKIP
        ... def aggregator(bids):
        ...     return bids.groupBy().min("price")
        """
        ins, outs, kept = check_names("input", inputs), check_names("output", outputs), check_names("state", state)
        if not outs:
            raise InvalidArgument("a module writes at least one output")

        def declare(function: Callable) -> Callable:
            if not callable(function):
                raise InvalidArgument(f"a module is a function, not {type(function).__name__}")
            module = Module(name or getattr(function, "__name__", ""), function, ins, outs, kept)
            if not name and module.name == "<lambda>":
                raise InvalidArgument("a lambda has no name of its own: give the module one, @wf.module(..., name=...)")
            check_names("module", [module.name])
            check_new(module, self.modules)
            self.modules[module.name] = module
            return function

        return declare

    def state(self, name: str, rows: DataFrame) -> None:
        """The initial rows of state table ``name`` (before the first execution)."""
        check_names("state", [name])
        if not isinstance(rows, DataFrame):
            raise InvalidArgument(f"the rows of state table {name!r} are a DataFrame, not {type(rows).__name__}")
        if self.executions:
            raise InvalidArgument(f"workflow {self.name!r} has run already: its state tables carry on from there")
        given = initial_state(self.folders)
        if name in given:
            raise InvalidArgument(f"state table {name!r} has its initial rows already")
        cap = self.session.capture(rows, run_one.capture_name(self.name, name), path=str(self.folders.state(name, 0)))
        write_initial_state(self.folders, {**given, name: [cap.name, cap.version]})

    @property
    def executions(self) -> list[ExecutionRecord]:
        """Every committed execution's record, oldest first."""
        return records(self.folders)

    def run(self, track: bool | str = True, **inputs: DataFrame) -> ExecutionRecord:
        """One execution: ``inputs`` are the workflow's input datasets (those no module
        writes). With ``track=True`` (the default) every dataset a module writes is
        captured and the provenance graph grows; with ``False`` the modules run and
        write alone, and their rows are base tuples to the executions after.

        ``track="later"`` runs as untracked, at untracked cost, and keeps the inputs as
        given: the execution is tracked when its provenance is first asked for
        (:meth:`graph`, :meth:`track`, or a tracked run after it), by running it again
        with tracking, here (the modules are this process's functions). What that second
        run writes must equal what the first wrote, row for row, else tracking fails
        with ``LineageNotBuilt`` and the execution stays as it ran."""
        if track not in (True, False, "later"):
            raise InvalidArgument(f"track is True, False or 'later', not {track!r}")
        if not self.modules:
            raise InvalidArgument(f"workflow {self.name!r} has no modules: declare them with @wf.module(...)")
        expected = workflow_inputs(self.modules.values())
        if set(inputs) != expected:
            missing, unknown = sorted(expected - set(inputs)), sorted(set(inputs) - expected)
            what = f"lacks input {missing[0]!r}" if missing else f"has no input {unknown[0]!r}"
            raise InvalidArgument(f"workflow {self.name!r} {what}; its inputs: {', '.join(sorted(expected))}")
        for name, df in inputs.items():
            if not isinstance(df, DataFrame):
                raise InvalidArgument(f"input {name!r} is a DataFrame, not {type(df).__name__}")
        if track is True:
            self.track()  # an execution's graph follows the graphs of those before it
        done = self.executions
        later = "first" if track == "later" else ""
        plan = self._plan(done, (done[-1].execution if done else 0) + 1, track is True, later)
        record, graph = run_one.run(self.session, plan, inputs)
        return self._commit(record, graph)

    def track(self) -> list[ExecutionRecord]:
        """Track every execution run with ``track="later"`` and not tracked yet, oldest
        first; returns their records. Each runs again with tracking, over the inputs it
        was given and the state versions it read, and must write the rows it wrote
        then (compared by value, in any order; floating-point values within 1e-9).

        >>> [r.execution for r in wf.track()]  # doctest: +SKIP
        [2, 3]
        """
        done = self.executions
        pending = [r for r in done if r.pending]
        if pending and not self.modules:
            raise InvalidArgument(
                f"workflow {self.name!r}: execution {pending[0].execution} ran with track='later' and is tracked by "
                "running it again, which needs its modules: declare them (@wf.module) in this Workflow first"
            )
        tracked = []
        for first in pending:
            before = [r for r in done if r.execution < first.execution]
            plan = self._plan(before, first.execution, True, "again")
            replay.move_aside(self.folders, first.execution, list(first.state))
            try:
                inputs = {n: read_written(self.session.spark, self.folders.given(first.execution, n))
                          for n in first.inputs}  # fmt: skip
                record, graph = run_one.run(self.session, plan, inputs)
            except BaseException:
                replay.put_back(self.folders, first.execution)
                raise
            replay.forget(self.folders, first.execution)  # (tracking it again would find the same rows)
            # the execution is the first run's: its time, when it ran
            tracked.append(self._commit(replace(record, seconds=first.seconds, at=first.at), graph))
            done = self.executions
        return tracked

    def _plan(self, done: list[ExecutionRecord], execution: int, track: bool, later: str) -> run_one.Plan:
        # what execution ``execution`` needs to know, after the executions ``done``
        state = dict(done[-1].state) if done else {}
        for name in initial_state(self.folders):
            state.setdefault(name, 0)
        needed = sorted({s for m in self.modules.values() for s in m.state} - set(state))
        if needed:
            raise InvalidArgument(
                f"state table {needed[0]!r} has no rows yet: give them with wf.state({needed[0]!r}, df)"
            )
        tracked = [r for r in done if r.tracked]
        return run_one.Plan(
            self.name,
            execution,
            self.folders,
            list(self.modules.values()),
            state,
            track,
            {r.execution for r in done if not r.tracked},
            tracked[-1].nodes[1] if tracked else 0,
            self._lookup(state, done),
            later,
        )

    def _commit(self, record: ExecutionRecord, graph) -> ExecutionRecord:
        # the graph's part first, the record last: no record, no execution
        if record.tracked:
            folder = self.folders.graph(record.execution)
            folder.mkdir(parents=True, exist_ok=True)
            for table, file in zip(graph.tables(), ("nodes", "edges", "tuples")):
                pq.write_table(table, folder / f"{file}.parquet")
            self._state_tuples = {k: v for k, v in {**self._state_tuples, **graph.tuples}.items()
                                  if k[0] in record.state and k[1] == record.state[k[0]]}  # fmt: skip
        write_record(self.folders, record)
        return record

    def _lookup(self, state: dict[str, int], done: list[ExecutionRecord]):
        # the nodes of the current state versions' rows: kept from the last execution in
        # this session, else read from the graph of the executions that wrote them
        known = self._state_tuples
        for name, version in state.items():
            if version > 0 and not any(k[0] == name and k[1] == version for k in known):
                path = self.folders.graph(version) / "tuples.parquet"
                if path.exists():
                    rows = pq.read_table(path, filters=[("dataset", "=", name), ("version", "=", version)])
                    known.update({(name, version, r["rid"]): r["node"] for r in rows.to_pylist()})
        return known.get

    def dataset(self, name: str, version: int | None = None) -> DataFrame:
        """The rows of a dataset (an input, an output or a state table) with ``_sp_rid``
        when tracked: as execution ``version`` wrote them (for a state table, its
        version: 0 is its initial rows), else the newest."""
        written = {n: (0, c) for n, c in initial_state(self.folders).items()}  # name -> (version, capture)
        found = [] if name not in written or version not in (None, 0) else [written[name]]
        for r in self.executions:
            if version is not None and r.execution != version:
                continue
            if name in r.inputs:
                found.append((r.execution, r.inputs[name]))
            found += [(r.execution, i.writes[name][1:]) for i in r.invocations if name in i.writes]
        if not found:
            raise InvalidArgument(f"workflow {self.name!r} has no dataset {name!r} at version {version}")
        at, (capture, capture_version) = found[-1]
        if capture_version:
            return self.session.load(capture, capture_version).output
        is_state = name in {s for m in self.modules.values() for s in m.state} or name in written
        path = self.folders.state(name, at) if is_state else self.folders.dataset(at, name)
        if not path.is_dir() and self.folders.given(at, name).is_dir():  # run with track="later", not tracked yet
            path = self.folders.given(at, name)
        return read_written(self.session.spark, path)

    def graph(self, executions: Iterable[int] | None = None) -> ProvenanceGraph:
        """The provenance graph of the tracked executions (all, or those named); those
        run with ``track="later"`` are tracked first (:meth:`track`)."""
        if any(r.pending for r in self.executions):
            self.track()
        return load_graph(self.folders, executions)
