"""One execution of a workflow: its inputs stored, its modules invoked wave by wave
(the modules of a wave at the same time, each in a thread of its own), every dataset a
module writes captured with witnesses into the store, and the execution's part of the
provenance graph built from those captures. A module's capture keeps its side
relations only; its pair table is made in this process from the same witnesses the
graph is built from (``strategy="defer"`` with witnesses).

Each module reads its inputs and state tables from the files the store holds, as
sources named after them, so every capture links to the captures that wrote what it
read (``backward(..., end_to_end=True)`` follows a row through the whole workflow).
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from datetime import datetime, timezone

from pyspark.sql import DataFrame

from ..api.capture import Capture
from ..api.session import LineageSession
from ..errors import InvalidArgument, one_line
from ..plan.replies import quick_replies
from ..plan.small_writes import write_parquet
from ..plan.threads import kept_pool, local_properties_kept, results
from ..plan.written import read_written
from ..query.provenance import write_pairs
from ..store.catalog import Store
from ..store.layout import WorkflowFolders
from ..store.workflow_record import ExecutionRecord, Invocation
from . import replay
from .graph_build import ExecutionGraph, Read
from .modules import Module, waves

# operators over which removing rows can also add or change rows: a deletion that
# reaches them is refused (the graph cannot say what re-running gives)
_NOT_MONOTONE = (
    "Join LeftAnti",
    "Join LeftOuter",
    "Join RightOuter",
    "Join FullOuter",
    "GlobalLimit",
    "LocalLimit",
    "WindowGroupLimit",
    "Sample",
    "Offset",
    "Tail",
    "FlatMapGroupsIn",
    "FlatMapCoGroupsIn",
    "MapInPandas",
    "MapInArrow",
    "PythonMapInArrow",
)
PARALLEL = 4  # modules of one wave run at once, at most


@dataclass
class Plan:
    """What one execution needs to know before it starts."""

    workflow: str
    execution: int
    folders: WorkflowFolders
    modules: list[Module]
    state: dict[str, int]  # state table -> its version before this execution
    track: bool
    untracked: set[int]  # earlier executions run without tracking (their state versions have no graph)
    first_node: int
    lookup: Callable  # tuples named by earlier executions (graph_build.ExecutionGraph.lookup)
    # "first": run with track="later" (untracked; its inputs kept as given, for the second
    # run); "again": that second run, tracked, its datasets checked against the first's
    later: str = ""


def capture_name(workflow: str, dataset: str) -> str:
    """The capture holding a workflow's dataset (one version per execution that wrote it)."""
    return f"{workflow}.{dataset}"


def run(session: LineageSession, plan: Plan, inputs: dict[str, DataFrame]) -> tuple[ExecutionRecord, ExecutionGraph]:
    """Run one execution; returns its record (not yet committed) and its graph part.

    An execution that fails leaves no record; the captures it made get a failed
    version after them (``sparkprov captures`` lists them as part of it), and what it
    wrote is removed when the execution is run again."""
    if plan.later != "again":  # the second run finds the first's files moved aside (replay.py)
        for folder in [
            plan.folders.execution(plan.execution),
            *(plan.folders.state(n, plan.execution) for n in plan.state),
        ]:
            shutil.rmtree(folder, ignore_errors=True)  # a failed attempt's files
    made: list[Capture] = []
    try:
        return _run(session, plan, inputs, made)
    except BaseException as exc:
        reason = f"part of execution {plan.execution} of workflow {plan.workflow!r}, which failed: {one_line(exc)}"
        for cap in made:
            session.store.commit_failed(cap.name, reason, part_of=f"workflow {plan.workflow}")
        raise


def _run(session: LineageSession, plan: Plan, inputs: dict[str, DataFrame], made: list[Capture]):
    started = time.perf_counter()
    graph = ExecutionGraph(plan.execution, plan.first_node, plan.lookup)
    reads: dict[str, Read] = {}
    paths: dict[str, str] = {}
    input_captures: dict[str, list] = {}
    for name, df in sorted(inputs.items()):
        path = (plan.folders.given if plan.later == "first" else plan.folders.dataset)(plan.execution, name)
        cap = _write(session, plan, name, df, path, made, witnesses=False)
        input_captures[name] = [capture_name(plan.workflow, name), cap.version if cap else 0]
        reads[name] = Read("input", plan.execution)
        paths[name] = str(path)
    state = dict(plan.state)
    for name, version in state.items():
        reads[name] = Read("state", version, base=version == 0 or version in plan.untracked)
        paths[name] = str(plan.folders.state(name, version))
    recorded = []  # per module, its invocation: recorded in order, as soon as it has run
    # one thread records the modules one after the other, so the graph's nodes are
    # numbered as if recorded here; its work (reading the witnesses, making the pairs)
    # is done in this process, not by Spark, and need not hold up the modules still
    # running or the next wave: a module is recorded while the rest of its wave runs
    # (Arctic's eight stations: their sixteen captures were recorded while the last
    # module ran, each execution). Both kinds of thread are kept from one execution to
    # the next (plan/threads.py).
    recorder, pool = kept_pool("graph", 1), kept_pool("module", PARALLEL)
    try:
        for wave in waves(plan.modules):
            named = {m.name: _read(session, m, paths) for m in wave}  # named here: session.source is not thread-safe
            invoked = [pool.submit(_invoke, session, plan, m, named[m.name], made) for m in wave]
            for m, f in zip(wave, invoked):  # what it read, before this wave's writes are known
                seen = {n: reads[n] for n in (*m.inputs, *m.state)}
                recorded.append(recorder.submit(_record, session.store, plan, graph, m, f, seen))
            done = results(invoked)  # every module of the wave ended before an error is raised
            for written, _ in done:
                for dataset, (kind, version, _) in written.items():
                    if kind == "output":
                        reads[dataset] = Read("output", plan.execution)
                        paths[dataset] = str(plan.folders.dataset(plan.execution, dataset))
                    else:
                        state[dataset] = version
    finally:
        wait(recorded)
    invocations = [f.result() for f in recorded]
    if plan.later == "again":
        replay.check_same(plan.folders, plan.execution, plan.workflow)
    record = ExecutionRecord(
        plan.execution,
        plan.track,
        input_captures,
        invocations,
        state,
        (plan.first_node, graph.end),
        time.perf_counter() - started,
        datetime.now(timezone.utc).isoformat(timespec="seconds"),
        bool(plan.later),
    )
    return record, graph


def _record(
    store: Store, plan: Plan, graph: ExecutionGraph, module: Module, invoked: Future, reads: dict
) -> Invocation:
    """A module's invocation, with its captures' part of the graph and pair tables,
    once it has run (``invoked``; its error is the caller's to raise)."""
    written, seconds = invoked.result()
    node = graph.invocation(module.name) if plan.track else -1
    writes, not_monotone = {}, []
    for dataset, (kind, version, cap) in written.items():
        writes[dataset] = [kind, capture_name(plan.workflow, dataset), cap.version if cap else 0]
        if cap is not None:
            ops = cap.operators()
            every = cap.polynomials()
            graph.add_capture(module.name, node, every, reads, (dataset, kind, version), _blackboxes(ops))
            write_pairs(store.load(cap.name, cap.version), every)  # its pairs, from the same polynomials
            not_monotone += [op for op in ops if op.startswith(_NOT_MONOTONE)]
    module_reads = {n: [r.kind, r.version] for n, r in reads.items()}
    return Invocation(module.name, node, module_reads, writes, seconds, sorted(set(not_monotone)))


def _blackboxes(operators: list[str]) -> list[str]:
    """The Python UDFs a captured plan calls (its BatchEvalPython / ArrowEvalPython
    operators name them: ``BatchEvalPython [calc_bid(cars#1L, ...)#9], ...``)."""
    names: list[str] = []
    for op in operators:
        if op.startswith(("BatchEvalPython", "ArrowEvalPython")):
            depth, start = 0, op.find("[") + 1
            for i, c in enumerate(op[start:], start):  # the calls at the list's top level only
                if c == "(":
                    depth += 1
                    name = re.search(r"(\w+)$", op[start:i]) if depth == 1 else None
                    if name and name.group(1) not in names:
                        names.append(name.group(1))
                elif c == ")":
                    depth -= 1
                elif c in ",]" and depth == 0:
                    start = i + 1
                    if c == "]":
                        break
    return names


def _read(session: LineageSession, module: Module, paths: dict[str, str]) -> dict[str, DataFrame]:
    spark = session.spark
    return {name: session.source(read_written(spark, paths[name]), name) for name in (*module.inputs, *module.state)}


def _invoke(session: LineageSession, plan: Plan, module: Module, frames: dict[str, DataFrame], made: list):
    # the module's function on its inputs and state; every dataset it returns written
    started = time.perf_counter()
    quick_replies(session.spark)  # this thread's connection too, tracked or not (plan/replies.py)
    with local_properties_kept(session.spark):  # a job group the module sets is not the next one's
        result = module.function(**frames)
        returned = _returned(module, result)
        written = {}
        for dataset, df in returned.items():
            if dataset in module.outputs:
                kind, version, path = "output", plan.execution, plan.folders.dataset(plan.execution, dataset)
            else:
                kind, version, path = "state", plan.execution, plan.folders.state(dataset, plan.execution)
            written[dataset] = (kind, version, _write(session, plan, dataset, df, path, made, witnesses=True))
    return written, time.perf_counter() - started


def _returned(module: Module, result) -> dict[str, DataFrame]:
    if isinstance(result, DataFrame) and len(module.outputs) == 1:
        result = {module.outputs[0]: result}
    if not isinstance(result, dict):
        raise InvalidArgument(
            f"module {module.name!r} returned {type(result).__name__}: a module returns a DataFrame (one output) "
            "or a dict {output or state table name: DataFrame}"
        )
    missing = [o for o in module.outputs if o not in result]
    unknown = [k for k in result if k not in module.outputs and k not in module.state]
    if missing or unknown:
        what = (
            f"lacks output {missing[0]!r}" if missing else f"returned {unknown[0]!r}, not one of its outputs or state"
        )
        raise InvalidArgument(f"module {module.name!r} {what} (outputs: {', '.join(module.outputs)}; state: "
                              f"{', '.join(module.state) or 'none'})")  # fmt: skip
    for name, df in result.items():
        if not isinstance(df, DataFrame):
            raise InvalidArgument(f"module {module.name!r} returned {type(df).__name__} as {name!r}, not a DataFrame")
    return result


def _write(session: LineageSession, plan: Plan, dataset: str, df: DataFrame, path, made: list, witnesses: bool):
    """``df`` written to ``path``: captured when tracking (the Capture, also appended to
    ``made``), else as plain Parquet (None)."""
    if not plan.track:
        write_parquet(df, path)  # as a tracked dataset is written: small rows through Arrow
        return None
    # with witnesses, the pairs are made from them after the wave (no Spark job): defer
    strategy = "defer" if witnesses else "auto"
    name = capture_name(plan.workflow, dataset)
    cap = session.capture(df, name, path=str(path), witnesses=witnesses, strategy=strategy)
    made.append(cap)
    return cap
