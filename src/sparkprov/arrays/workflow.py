"""Array workflows (SubZero sections IV to VII-A): operators run in order, each storing
its lineage as the strategies chosen for it say, and lineage queries traced from an
array back to an ancestor or forward to a descendant, operator by operator.

A strategy is ``"BlackBox"`` (nothing stored: the operator runs again in tracing mode
when a query reaches it), ``"Map"`` (its mapping functions, nothing stored), an
encoding of ``encodings.ENCODINGS`` (``"FullOne←"``, ``"PayMany←"``, ``"Ranges"``...)
or a composite one (``"CompOne←"``, ``"CompMany←"``: the mapping by default, payloads
stored where the operator overrides it). An operator may keep several; a query step
uses the one indexed for its direction, else a mapping, else the others, and switches
to running the operator again when reading stored lineage has taken longer than that
would (so no step costs much more than twice the black box; ``run.switch = False``
turns that off).

>>> import tempfile, numpy as np
>>> from sparkprov.arrays.operators import Elementwise, Transpose
>>> wf = ArrayWorkflow()
>>> wf.add("t", Transpose(), ["image"])
>>> wf.add("neg", Elementwise(np.negative), ["t"])
>>> run = wf.run({"image": np.arange(6.0).reshape(2, 3)}, tempfile.mkdtemp(), {"t": ["Map"], "neg": ["Map"]})
>>> run.backward([(0, 1)], "neg", "image").tolist()  # neg (0, 1) is t (0, 1), image (1, 0)
[3]
>>> run.forward([(1, 0)], "image", "neg").tolist()
[1]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InvalidArgument
from .cells import Shape, cell_ids, distinct, member
from .encodings import ENCODINGS, PayMany, PayOne, StoredLineage, folder_bytes
from .operators import ArrayOperator, LineageWriter, PayloadFunction
from .payload_scans import OverBudget

COMPOSITE = {"CompOne←": PayOne, "CompMany←": PayMany}
STRATEGIES = ("BlackBox", "Map", *ENCODINGS, *COMPOSITE)
CHUNK = 4096  # query cells read from stored lineage between checks of the time spent


@dataclass
class Node:
    op: ArrayOperator
    inputs: list[str]


@dataclass
class StepStats:
    """How one query step was answered."""

    node: str
    method: str  # the strategy used, or "BlackBox (switched)" when reading stored lineage took too long
    cells_in: int
    cells_out: int
    seconds: float
    cells: np.ndarray | None = None  # the cells the step started from


class ArrayWorkflow:
    """Operators over named arrays; a DAG made by naming each operator's inputs."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}

    def add(self, name: str, op: ArrayOperator, inputs: list[str]) -> None:
        if name in self.nodes:
            raise InvalidArgument(f"the workflow already has an operator named {name!r}")
        if not isinstance(op, ArrayOperator):
            raise InvalidArgument(f"{name!r}: an operator is an ArrayOperator, not {type(op).__name__}")
        self.nodes[name] = Node(op, list(inputs))

    def run(
        self, inputs: dict[str, np.ndarray], folder, strategies: dict[str, list[str]] | None = None, costs: bool = False
    ):
        """Run every operator, storing lineage as ``strategies`` say (an operator not
        named keeps none: a black box). ``costs``: run each operator once without
        lineage too, so what each strategy adds is measured (the optimizer's sample run)."""
        strategies = dict(strategies or {})
        unknown = set(strategies) - set(self.nodes)
        if unknown:
            raise InvalidArgument(f"strategies for operators the workflow does not have: {sorted(unknown)}")
        for name, chosen in strategies.items():
            for s in chosen:
                _check_strategy(name, self.nodes[name].op, s)
        return WorkflowRun(self, inputs, Path(folder), strategies, costs)


def with_mappings(workflow: ArrayWorkflow, chosen: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """Strategies for every operator: ``chosen``'s, else its mapping (a mapping
    operator), else none (a black box)."""
    found = {}
    for name, node in workflow.nodes.items():
        default = ["Map"] if "map" in node.op.modes else ["BlackBox"]
        found[name] = list((chosen or {}).get(name, default))
    return found


def valid_strategies(op: ArrayOperator) -> list[str]:
    """The strategies ``op`` can keep, from the lineage modes it supports."""
    found = []
    for s in STRATEGIES:
        needs = "map" if s == "Map" else writer_mode(op, s)
        if needs is None or needs in op.modes:
            found.append(s)
    return found


def writer_mode(op: ArrayOperator, strategy: str) -> str | None:
    """The lineage mode the operator runs in to store ``strategy`` (None: nothing to
    store). Strategies of one mode share a run; each other mode runs the operator again.

    >>> from sparkprov.arrays.operators import Transpose
    >>> writer_mode(Transpose(), "CompOne←"), writer_mode(Transpose(), "Map")
    ('composite', None)
    """
    if strategy in ("BlackBox", "Map"):
        return None
    if strategy in COMPOSITE:
        return "composite"
    if ENCODINGS[strategy]().mode == "payload":
        return "payload"
    if ENCODINGS[strategy]().mode == "any" and "full" not in op.modes:
        return "payload"
    return "full"


def _check_strategy(name: str, op: ArrayOperator, strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise InvalidArgument(f"{name!r}: unknown strategy {strategy!r}; strategies: {', '.join(STRATEGIES)}")
    needs = {"Map": "map", None: None}.get(strategy) if strategy in ("Map", "BlackBox") else writer_mode(op, strategy)
    if needs is not None and needs not in op.modes:
        raise InvalidArgument(f"{name!r} ({op.name}) does not support {needs} lineage, which {strategy} stores")


@dataclass
class _Stored:
    readers: dict[str, list[StoredLineage]] = field(default_factory=dict)  # strategy -> one per input
    bytes: int = 0
    seconds: float = 0.0  # the operator's run(s) and the encoding
    # per strategy: its bytes, and the seconds it adds (the traced run's extra time, the encoding)
    costs: dict[str, tuple[int, float]] = field(default_factory=dict)


class WorkflowRun:
    """One execution of a workflow: its arrays, its stored lineage, and queries."""

    def __init__(
        self, wf: ArrayWorkflow, inputs: dict[str, np.ndarray], folder: Path, strategies: dict, costs: bool = False
    ) -> None:
        self.workflow, self.folder, self.strategies = wf, folder, strategies
        self.arrays: dict[str, np.ndarray] = {}
        for name, array in inputs.items():
            self.arrays[name] = np.asarray(array)
        self.stored: dict[str, _Stored] = {}
        # a run's arrays are only added to, never replaced: their order, shapes and the
        # arrays between two of them are found once (a query of a millisecond would
        # otherwise spend a third of it finding them again)
        self._shape_of: dict[str, Shape] = {}
        self._paths: dict[tuple[str, str], tuple[set[str], list[str]]] = {}
        # each operator's run (with the lineage of its first mode when it keeps some,
        # except in a run measuring costs)
        self.seconds: dict[str, float] = {}
        self.trace_seconds: dict[str, float] = {}  # each operator's run in tracing (full) mode, once measured
        # SubZero VII-A's query-time switch from reading stored lineage to running the
        # operator again (off: stored lineage is read to the end, "static")
        self.switch = True
        # Lineage is written by one background thread while the next operators run
        # (Parquet writes and NumPy release the GIL), and the run returns once all of it
        # is on disk; a run measuring costs writes in line, so each write is timed alone.
        # The arrays are only added to, never changed, while a write reads them.
        from concurrent.futures import ThreadPoolExecutor

        writing: dict[str, object] = {}
        self.order = self._order()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkprov-lineage") as writer_thread:
            for name in self.order:
                node = wf.nodes[name]
                missing = [i for i in node.inputs if i not in self.arrays]
                if missing:
                    raise InvalidArgument(f"{name!r} reads {missing[0]!r}, which is neither an input nor an operator")
                chosen = strategies.get(name, [])
                # as SubZero's run(): the output and the lineage of the first mode a chosen
                # strategy needs in one pass (apart when the optimizer measures what each adds)
                modes = [m for m in dict.fromkeys(writer_mode(node.op, s) for s in chosen) if m]
                writer = LineageWriter(modes[0], len(node.inputs)) if modes and not costs else None
                started = time.perf_counter()
                self.arrays[name] = np.asarray(node.op.run([self.arrays[i] for i in node.inputs], writer))
                self.seconds[name] = time.perf_counter() - started
                logs = {modes[0]: writer.logs} if writer else {}
                # an operator run again for another mode's lineage runs here, never beside
                # the next operator: operators need not be safe to run in two threads
                traced = self._trace_other_modes(name, node, chosen, logs)
                if costs or not chosen:
                    self.stored[name] = self._store(name, node, chosen, logs, traced)
                else:
                    writing[name] = writer_thread.submit(self._store, name, node, chosen, logs, traced)
        for name, future in writing.items():
            self.stored[name] = future.result()  # a write that failed fails the run

    def _order(self) -> list[str]:
        order, seen = [], set()

        def visit(name: str, path: tuple) -> None:
            if name in path:
                raise InvalidArgument(f"the workflow has a cycle through {name!r}")
            if name in seen or name not in self.workflow.nodes:
                return
            for i in self.workflow.nodes[name].inputs:
                visit(i, (*path, name))
            seen.add(name)
            order.append(name)

        for name in self.workflow.nodes:
            visit(name, ())
        return order

    def shape(self, name: str) -> Shape:
        found = self._shape_of.get(name)
        if found is None:
            if name not in self.arrays:
                raise InvalidArgument(f"no array named {name!r}; arrays: {', '.join(self.arrays)}")
            found = self._shape_of[name] = Shape(tuple(int(d) for d in self.arrays[name].shape))
        return found

    def _shapes(self, node: Node) -> list[Shape]:
        return [self.shape(i) for i in node.inputs]

    def _map_p(self, node: Node, i: int) -> PayloadFunction:
        return PayloadFunction(node.op, i)

    def _trace_other_modes(self, name: str, node: Node, chosen: list[str], logs: dict[str, list]) -> dict[str, float]:
        """The lineage of every mode ``chosen`` needs beyond those in ``logs``, each from
        a run of the operator again (added to ``logs``); per mode, what its traced run
        adds to the plain one (unknown, so 0, for a mode recorded in the operator's own run)."""
        traced: dict[str, float] = dict.fromkeys(logs, 0.0)
        for strategy in chosen:
            mode = writer_mode(node.op, strategy)
            if mode is None or mode in logs:
                continue
            writer = LineageWriter(mode, len(node.inputs))
            ran = time.perf_counter()
            node.op.run([self.arrays[i] for i in node.inputs], writer)
            traced[mode] = max(time.perf_counter() - ran - self.seconds[name], 0.0)
            logs[mode] = writer.logs
        return traced

    def _store(
        self, name: str, node: Node, chosen: list[str], logs: dict[str, list], traced: dict[str, float]
    ) -> _Stored:
        stored = _Stored()
        started = time.perf_counter()
        for strategy in chosen:
            mode = writer_mode(node.op, strategy)
            if mode is None:
                stored.costs[strategy] = (0, 0.0)
                continue
            enc = COMPOSITE[strategy]() if strategy in COMPOSITE else ENCODINGS[strategy]()
            readers, size, encoding = [], 0, time.perf_counter()
            shared = enc.mode == "payload"  # payloads serve every input: stored once, read per input
            for i, source in enumerate(node.inputs):
                folder = self.folder / "lineage" / name / strategy / str(0 if shared else i)
                if shared and i > 0:
                    readers.append(enc.open(folder, self._map_p(node, i)))
                    continue
                log = logs[mode][i if mode == "full" else 0]
                readers.append(enc.build(log, folder, self.shape(name), self.shape(source), self._map_p(node, i)))
                size += folder_bytes(folder)
            stored.readers[strategy] = readers
            stored.bytes += size
            stored.costs[strategy] = (size, traced[mode] + time.perf_counter() - encoding)
        stored.seconds = time.perf_counter() - started
        return stored

    def lineage_bytes(self) -> int:
        return sum(s.bytes for s in self.stored.values())

    # queries

    def backward(self, cells, start: str, target: str, stats: list | None = None) -> np.ndarray:
        """The cells of ``target`` (an ancestor of ``start``) that cells of ``start`` depend on;
        ``cells``: coordinates, a Box, a boolean mask, or a predicate over ``start``'s
        values (``lambda v: v > 100``)."""
        return self._trace(cells, start, target, backward=True, stats=stats)

    def forward(self, cells, start: str, target: str, stats: list | None = None) -> np.ndarray:
        """The cells of ``target`` (a descendant of ``start``) that depend on cells of ``start``."""
        return self._trace(cells, start, target, backward=False, stats=stats)

    def _trace(self, cells, start: str, target: str, backward: bool, stats: list | None) -> np.ndarray:
        ids = cell_ids(self.shape(start), cells, self.arrays[start])
        between, order = self._path(target, start) if backward else self._path(start, target)
        if start not in between:
            kind = "an ancestor" if backward else "a descendant"
            raise InvalidArgument(f"{target!r} is not {kind} of {start!r}")
        found: dict[str, list[np.ndarray]] = {start: [ids]}
        for name in reversed(order) if backward else order:
            node = self.workflow.nodes[name]
            if name == (target if backward else start):
                continue  # the trace stops (backward) or starts (forward) at this operator's output
            if backward:
                here = _union(found.pop(name, []))
                for i, source in enumerate(node.inputs):
                    if source in between and len(here):
                        found.setdefault(source, []).append(self._step(name, i, here, True, stats))
            else:
                for i, source in enumerate(node.inputs):
                    there = _union(found.get(source, []))
                    if source in between and len(there):
                        found.setdefault(name, []).append(self._step(name, i, there, False, stats))
        return _union(found.get(target, []))

    def _path(self, ancestor: str, descendant: str) -> tuple[set[str], list[str]]:
        """Arrays on some path from ``ancestor`` to ``descendant``, both included, and
        the operators among them in the order they ran."""
        key = (ancestor, descendant)
        if key not in self._paths:
            nodes = self.workflow.nodes
            below = {descendant}
            for name in reversed(self.order):  # ancestors of descendant
                if name in below:
                    below.update(nodes[name].inputs)
            above = {ancestor}
            for name in self.order:  # descendants of ancestor
                if any(i in above for i in nodes[name].inputs):
                    above.add(name)
            between = below & above
            self._paths[key] = between, [n for n in self.order if n in between]
        return self._paths[key]

    def _step(self, name: str, i: int, ids: np.ndarray, backward: bool, stats: list | None) -> np.ndarray:
        node = self.workflow.nodes[name]
        shapes = self._shapes(node)
        here, there = (self.shape(name), shapes[i]) if backward else (shapes[i], self.shape(name))
        started = time.perf_counter()
        op = node.op
        if op.all_to_all or (op.entire_array and len(ids) == here.size):
            method, found = "entire array", np.arange(there.size, dtype=np.int64)
        else:
            method, found = self._answer(name, node, i, ids, backward)
        if stats is not None:
            stats.append(StepStats(name, method, len(ids), len(found), time.perf_counter() - started, ids))
        return found

    def _answer(self, name: str, node: Node, i: int, ids: np.ndarray, backward: bool) -> tuple[str, np.ndarray]:
        op, readers = node.op, self.stored[name].readers
        direction = "backward" if backward else "forward"
        indexed = [s for s in readers if _indexed_for(s, direction)]
        if indexed:  # read it, unless that costs more than running the operator again
            return self._read_or_rerun(name, node, i, indexed[0], ids, backward)
        for s in (s for s in readers if s in COMPOSITE):
            return s, self._by(s, name, node, i, ids, backward)
        if "map" in op.modes:
            return "Map", self._by("Map", name, node, i, ids, backward)
        if "BlackBox" in self.strategies.get(name, ()):  # chosen over reading lineage indexed the other way
            return "BlackBox", self._by("BlackBox", name, node, i, ids, backward)
        if readers:  # stored, but indexed the other way: read it, unless the black box is cheaper
            strategy = next(iter(readers))
            return self._read_or_rerun(name, node, i, strategy, ids, backward)
        return "BlackBox", self._by("BlackBox", name, node, i, ids, backward)

    def _by(self, strategy: str, name: str, node: Node, i: int, ids: np.ndarray, backward: bool) -> np.ndarray:
        """A step through input ``i`` of operator ``name`` answered by ``strategy``."""
        if strategy == "BlackBox":
            return self._black_box(name, node, i, ids, backward)
        if strategy == "Map":
            mapping = node.op.map_b if backward else node.op.map_f
            return distinct(mapping(ids, i, self._shapes(node)))
        reader = self.stored[name].readers[strategy][i]
        if strategy in COMPOSITE:
            return self._composite(node, i, reader, ids, backward)
        return _read(reader, ids, backward)

    def step_with(self, name: str, strategy: str, ids: np.ndarray, backward: bool) -> np.ndarray:
        """One query step through operator ``name`` (every input), answered by ``strategy``
        alone, as a query answers it (the optimizer's cost measurements): stored lineage
        read until running the operator again is cheaper, as the query-time switch does."""
        node = self.workflow.nodes[name]
        if strategy in ("BlackBox", "Map") or strategy in COMPOSITE:
            parts = [self._by(strategy, name, node, i, ids, backward) for i in range(len(node.inputs))]
        else:
            parts = [self._read_or_rerun(name, node, i, strategy, ids, backward)[1] for i in range(len(node.inputs))]
        return _union(parts)

    def _composite(self, node: Node, i: int, reader: StoredLineage, ids: np.ndarray, backward: bool) -> np.ndarray:
        # the mapping by default; the cells a payload was written for answered from
        # their payloads
        shapes = self._shapes(node)
        if backward:
            special, found = reader.split(ids)
            if special.all():
                return found
            default = node.op.map_b(ids[~special], i, shapes)
            return _union([np.asarray(default, dtype=np.int64), found])
        default = np.asarray(node.op.map_f(ids, i, shapes), dtype=np.int64)
        return _union([default[~member(default, reader.out_cells())], reader.forward(ids)])

    def _read_or_rerun(self, name, node, i, strategy, ids, backward) -> tuple[str, np.ndarray]:
        # SubZero VII-A: read stored lineage chunk by chunk; once that has taken longer
        # than running the operator again would (as measured when it last ran in
        # tracing mode, else twice its plain run), run it again for the rest: a step
        # then costs at most about twice the black box's
        budget = self.trace_seconds.get(name, 2 * self.seconds[name] + 0.01) if self.switch else float("inf")
        started, parts = time.perf_counter(), []
        reader = self.stored[name].readers[strategy][i]
        switched = f"{strategy}, then BlackBox (switched)"
        if reader.scans_payloads and not backward:  # one scan of every payload, whatever the cells
            try:
                return strategy, reader.forward(ids, deadline=started + budget)
            except OverBudget:
                return switched, self._black_box(name, node, i, ids, backward)
        for k in range(0, len(ids), CHUNK):
            if time.perf_counter() - started > budget:
                parts.append(self._black_box(name, node, i, ids[k:], backward))
                return switched, _union(parts)
            parts.append(_read(reader, ids[k : k + CHUNK], backward))
        return strategy, _union(parts)

    def _black_box(self, name: str, node: Node, i: int, ids: np.ndarray, backward: bool) -> np.ndarray:
        op = node.op
        mode = next((m for m in ("full", "payload", "composite") if m in op.modes), None)
        if mode is not None:
            writer = LineageWriter(mode, len(node.inputs))
            started = time.perf_counter()
            op.run([self.arrays[s] for s in node.inputs], writer)
            log = writer.logs[i if mode == "full" else 0]
            self.trace_seconds[name] = time.perf_counter() - started

            def back(cells):  # only the region pairs the cells reach are expanded
                return distinct(log.cell_pairs(self._map_p(node, i), outs=cells)[1])

            def forth(cells):
                return distinct(log.cell_pairs(self._map_p(node, i), ins=cells)[0])

            if mode == "composite":
                return self._composite(node, i, distinct(log.out_cells()[0]), back, forth, ids, backward)
            return back(ids) if backward else forth(ids)
        if "map" in op.modes:
            return distinct((op.map_b if backward else op.map_f)(ids, i, self._shapes(node)))
        # an operator that states nothing: every output cell depends on every input cell
        there = self._shapes(node)[i] if backward else self.shape(name)
        return np.arange(there.size, dtype=np.int64)


def _indexed_for(strategy: str, direction: str) -> bool:
    if strategy in COMPOSITE:
        return False
    return strategy in ("Ranges", "CellPairs") or ENCODINGS[strategy]().direction == direction


def _read(reader: StoredLineage, ids: np.ndarray, backward: bool) -> np.ndarray:
    return reader.backward(ids) if backward else reader.forward(ids)


def _union(parts: list[np.ndarray]) -> np.ndarray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(0, np.int64)
    return parts[0] if len(parts) == 1 else distinct(np.concatenate(parts))
