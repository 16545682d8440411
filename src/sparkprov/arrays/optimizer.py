"""SubZero's lineage strategy optimizer (section VII): per operator, the strategies to
keep, chosen under a disk budget and a runtime budget from costs measured on a sample
run and the operators a sample workload of lineage queries reaches.

For operator ``i`` and strategy ``j``: ``disk`` (bytes stored), ``run`` (seconds the
strategy adds to the workflow) and the cost of a query step through the operator in
each direction (``qb``, ``qf``, measured with as many cells as the workload's queries
bring there). ``x_ij = 1`` keeps strategy ``j``; ``b_ij`` and ``f_ij`` say which kept
strategy answers the operator's backward and forward steps (the minimum of SubZero's
objective, made linear). The integer program, solved by HiGHS through
``scipy.optimize.milp``::

    minimise   Σ_i pb_i Σ_j b_ij qb_ij + pf_i Σ_j f_ij qf_ij + ε Σ_ij (disk_ij + β run_ij) x_ij
    subject to Σ_ij disk_ij x_ij ≤ max_disk,  Σ_ij run_ij x_ij + Σ_i rerun_i w_i ≤ max_runtime,
               Σ_j b_ij = 1,  Σ_j f_ij = 1,  b_ij ≤ x_ij,  f_ij ≤ x_ij,  x_ij ∈ {0, 1},
               x_ij ≤ z_im (j of mode m),  w_i ≥ Σ_m z_im - 1,  z_im ∈ {0, 1},  w_i ≥ 0

where ``z_im`` says operator ``i`` keeps lineage of mode ``m`` and ``w_i`` how many
times it runs again (once per mode past the first, ``rerun_i`` seconds each: strategies
of one mode share a run, and no strategy's cost alone shows another mode's).
``pb_i qb_ij`` (and ``pf_i qf_ij``) is what the workload's backward (forward) steps
through operator ``i`` take with strategy ``j``, per query: each step timed from the
cells it starts from in a traced run of the sample workload (disk and runtime are scaled
to their totals, so ``ε`` only breaks ties). Strategies the user fixes are kept whatever
they cost.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InvalidArgument
from .workflow import ArrayWorkflow, StepStats, WorkflowRun, valid_strategies, writer_mode

EPSILON = 1e-3


@dataclass(frozen=True)
class LineageQuery:
    """A query of the sample workload: cells of ``start`` traced to ``target``."""

    direction: str  # "backward" or "forward"
    start: str
    target: str
    cells: object  # coordinates, a Box, a mask (cells.cell_ids)

    def run(self, run: WorkflowRun, stats: list | None = None) -> np.ndarray:
        if self.direction not in ("backward", "forward"):
            raise InvalidArgument(f"a lineage query goes backward or forward, not {self.direction!r}")
        trace = run.backward if self.direction == "backward" else run.forward
        return trace(self.cells, self.start, self.target, stats=stats)


@dataclass
class StrategyCost:
    disk: int  # bytes
    run: float  # seconds added to the workflow
    qb: float  # seconds of the workload's backward steps through the operator, per query
    qf: float  # seconds of its forward steps, per query


@dataclass
class Costs:
    """What every candidate strategy of every operator costs; ``steps[k]`` are the
    operators query ``k`` of the workload goes through, each with its direction, and
    ``seconds[(k, operator, strategy)]`` what that step takes with the strategy."""

    strategies: dict[str, dict[str, StrategyCost]]
    pb: dict[str, float]
    pf: dict[str, float]
    steps: list[list[tuple[str, str]]] = field(default_factory=list)
    seconds: dict[tuple[int, str, str], float] = field(default_factory=dict)
    # per operator: each strategy's lineage mode (strategies of one mode share the
    # operator's run), and the seconds of running the operator again for each mode past
    # the first: a cost of keeping strategies together that no strategy alone shows
    modes: dict[str, dict[str, str | None]] = field(default_factory=dict)
    rerun: dict[str, float] = field(default_factory=dict)

    def extra_runs(self, op: str, kept: list[str]) -> int:
        """How many times the operator runs again for the lineage of ``kept``."""
        found = {self.modes.get(op, {}).get(s) for s in kept} - {None}
        return max(len(found) - 1, 0)

    def runtime(self, op: str, kept: list[str]) -> float:
        """The seconds ``kept`` adds to the workflow at ``op``."""
        return sum(self.strategies[op][s].run for s in kept) + self.extra_runs(op, kept) * self.rerun.get(op, 0.0)


def measure(
    workflow: ArrayWorkflow,
    inputs: dict[str, np.ndarray],
    folder,
    workload: list[LineageQuery],
    repeat: int = 3,
    runs: int = 3,
) -> Costs:
    """Run the workflow once keeping every strategy each operator supports, trace the
    workload, and time every strategy on every step the workload takes, from the very
    cells that step started from (the median of ``repeat`` timings).

    What a strategy adds to the workflow's runtime is timed as a run pays it (see
    ``_paid``) over ``runs`` rounds; ``runs=0`` keeps the sample run's in-line timing
    of each write instead, an upper bound (and the cheaper measure without a runtime
    budget)."""
    if not workload:
        raise InvalidArgument("the optimizer needs a sample workload of at least one lineage query")
    every = {name: _candidates(node.op) for name, node in workflow.nodes.items()}
    run = workflow.run(inputs, Path(folder), every, costs=True)
    n = len(workload)
    steps: list[list[tuple[str, str]]] = []
    seconds: dict[tuple[int, str, str], float] = {}
    for k, q in enumerate(workload):
        stats: list[StepStats] = []
        q.run(run, stats)
        cells: dict[str, np.ndarray] = {}
        for s in stats:  # an operator of several inputs: one step per input, from the same cells backward
            cells[s.node] = s.cells if s.node not in cells else np.union1d(cells[s.node], s.cells)
        steps.append([(name, q.direction) for name in cells])
        for name, ids in cells.items():
            for strategy in every[name]:
                timing = [
                    _timed(lambda o=name, s=strategy, i=ids, b=q.direction == "backward": run.step_with(o, s, i, b))
                    for _ in range(repeat)
                ]
                seconds[(k, name, strategy)] = float(np.median(timing))
    inline = {(name, s): cost for name in workflow.nodes for s, cost in run.stored[name].costs.items()}
    paid = _paid(workflow, inputs, Path(folder) / "paid", inline, runs) if runs > 0 else {}
    table: dict[str, dict[str, StrategyCost]] = {}
    for name in workflow.nodes:
        table[name] = {}
        for strategy in every[name]:
            disk, added = inline.get((name, strategy), (0, 0.0))
            added = paid.get((name, strategy), added)
            per = {"backward": 0.0, "forward": 0.0}
            for k, path in enumerate(steps):
                for op, direction in path:
                    if op == name:
                        per[direction] += seconds[(k, name, strategy)] / n
            table[name][strategy] = StrategyCost(disk, added, per["backward"], per["forward"])
    pb = {name: sum((name, "backward") in p for p in steps) / n for name in workflow.nodes}
    pf = {name: sum((name, "forward") in p for p in steps) / n for name in workflow.nodes}
    modes = {name: {s: writer_mode(workflow.nodes[name].op, s) for s in every[name]} for name in workflow.nodes}
    return Costs(table, pb, pf, steps, seconds, modes, dict(run.seconds))


def _paid(workflow: ArrayWorkflow, inputs, folder: Path, inline: dict, runs: int) -> dict[tuple[str, str], float]:
    """What each strategy that stores lineage adds to a run as the run pays it: the
    workflow kept with that strategy alone, its lineage written by the background
    thread while the next operators run, against plain runs of the workflow just before.

    The in-line timing of each write overstates this (the astronomy workflow's four
    composite strategies: 20 ms in line, about 5 ms paid). Runs of one kind in a row
    vary by a millisecond or two, but a run after one of another kind (one that wrote
    megabytes, or whose arrays' memory came from elsewhere) by ten or more, and runs
    alternating plain and kept differed by 20 ms either way. So each strategy is timed
    in a block of its own after a block of plain runs, the first of which, after the
    previous strategy, is not counted: ``runs`` of each for a strategy cheaper than the
    plain run (the median difference), one for a dearer one, whose cost such noise
    hides less. A difference below zero counts as nothing added."""
    import gc
    import shutil
    import statistics

    def timed(strategies: dict, tag: str) -> float:
        out = folder / tag
        gc.collect()  # a collection of the previous run's garbage is not this run's cost
        spent = _timed(lambda: workflow.run(inputs, out, strategies))
        shutil.rmtree(out, ignore_errors=True)  # a strategy's lineage is not kept between runs
        return spent

    plain = timed({}, "warm-up")
    paid: dict[tuple[str, str], float] = {}
    for (name, strategy), (disk, added) in inline.items():
        if not (disk or added):
            continue
        k = runs if added < plain else 1
        plains = [timed({}, "plain") for _ in range(k + 1)][1:]
        kept = [timed({name: [strategy]}, f"{name}-{strategy}") for _ in range(k)]
        plain = statistics.median(plains)
        paid[(name, strategy)] = max(statistics.median(kept) - plain, 0.0)
    return paid


def _candidates(op) -> list[str]:
    """The strategies worth measuring: a mapping operator's black box is its mapping,
    so it is not a choice of its own."""
    found = valid_strategies(op)
    if "map" in op.modes and not {"full", "payload", "composite"} & set(op.modes):
        found.remove("BlackBox")
    return found


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


@dataclass
class Plan:
    """The optimizer's choice: the strategies per operator and what it predicts."""

    strategies: dict[str, list[str]]
    answers: dict[str, tuple[str, str]]  # operator -> (backward strategy, forward strategy)
    disk: int  # predicted bytes
    runtime: float  # predicted seconds added
    query: float  # predicted seconds of the workload's steps, per query on average
    costs: Costs

    def predicted(self, k: int) -> float:
        """The predicted seconds of workload query ``k`` with the chosen strategies."""
        total = 0.0
        for op, direction in self.costs.steps[k]:
            by = self.answers[op][0 if direction == "backward" else 1]
            total += self.costs.seconds.get((k, op, by), 0.0)
        return total

    def explain(self) -> str:
        """The choice as a table: per operator, what it keeps and the predicted costs."""
        lines = [
            f"predicted: {self.disk:,} bytes, {self.runtime:.3f} s added, {self.query * 1000:.1f} ms per query",
            f"  {'operator':<14} {'keeps':<28} {'backward by':<12} {'forward by':<12} {'bytes':>10} {'run s':>7}",
        ]
        for name, kept in self.strategies.items():
            cost = self.costs.strategies[name]
            b, f = self.answers[name]
            disk = sum(cost[s].disk for s in kept)
            run = self.costs.runtime(name, kept)
            lines.append(f"  {name:<14} {', '.join(kept):<28} {b:<12} {f:<12} {disk:>10,} {run:>7.3f}")
        return "\n".join(lines)


def choose(
    costs: Costs,
    max_disk: float | None = None,
    max_runtime: float | None = None,
    beta: float = 1.0,
    fixed: dict[str, list[str]] | None = None,
) -> Plan:
    """The strategies minimising the workload's query cost within the budgets."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    pairs = [(i, j) for i in costs.strategies for j in costs.strategies[i]]
    n = len(pairs)
    disk = np.array([costs.strategies[i][j].disk for i, j in pairs], dtype=float)
    run = np.array([costs.strategies[i][j].run for i, j in pairs], dtype=float)
    qb = np.array([costs.strategies[i][j].qb for i, j in pairs])  # already per query of the workload
    qf = np.array([costs.strategies[i][j].qf for i, j in pairs])
    # an operator keeping strategies of several modes runs again for each mode past the
    # first: z says a mode is kept, w how many runs again (Σ z - 1, or 0)
    kinds = sorted({(i, costs.modes.get(i, {}).get(j)) for i, j in pairs} - {(i, None) for i, _ in pairs})
    modes_of = Counter(i for i, _ in kinds)
    several = sorted(i for i, count in modes_of.items() if count > 1)
    rerun = np.array([costs.rerun.get(i, 0.0) for i in several])
    size = 3 * n + len(kinds) + len(several)  # variables: x, b, f, z, w
    # ties broken by disk and runtime, then by keeping fewer strategies (one that answers
    # nothing, even a free one, is not kept)
    spread = disk / max(disk.sum(), 1.0) + beta * run / max(run.sum(), 1e-9) + EPSILON
    scale = EPSILON * spread * max(qb.sum() + qf.sum(), 1e-9)
    again = EPSILON * (beta * rerun / max(run.sum(), 1e-9) + EPSILON) * max(qb.sum() + qf.sum(), 1e-9)
    c = np.concatenate([scale, qb, qf, np.zeros(len(kinds)), again])
    rows, lb, ub = [], [], []

    def row(entries: dict[int, float], lo: float, hi: float) -> None:
        r = np.zeros(size)
        for k, v in entries.items():
            r[k] = v
        rows.append(r)
        lb.append(lo)
        ub.append(hi)

    for op in costs.strategies:
        mine = [k for k, (i, _) in enumerate(pairs) if i == op]
        row({n + k: 1 for k in mine}, 1, 1)  # one strategy answers its backward steps
        row({2 * n + k: 1 for k in mine}, 1, 1)  # and one its forward steps
        row(dict.fromkeys(mine, 1), 1, np.inf)  # at least one kept
    for k in range(n):
        row({n + k: 1, k: -1}, -np.inf, 0)  # answered only by a kept strategy
        row({2 * n + k: 1, k: -1}, -np.inf, 0)
    for m, (op, mode) in enumerate(kinds):
        for k, (i, j) in enumerate(pairs):
            if i == op and costs.modes.get(i, {}).get(j) == mode:
                row({k: 1, 3 * n + m: -1}, -np.inf, 0)  # a strategy kept keeps its mode
    for w, op in enumerate(several):
        used = {3 * n + m: 1 for m, (i, _) in enumerate(kinds) if i == op}
        row({**used, 3 * n + len(kinds) + w: -1}, -np.inf, 1)
    if max_disk is not None:
        row(dict(enumerate(disk)), -np.inf, max_disk)
    if max_runtime is not None:
        extra = {3 * n + len(kinds) + w: r for w, r in enumerate(rerun)}
        row({**dict(enumerate(run)), **extra}, -np.inf, max_runtime)
    lower = np.zeros(size)
    for op, kept in (fixed or {}).items():
        for s in kept:
            if (op, s) not in pairs:
                can = ", ".join(costs.strategies.get(op, {}))
                raise InvalidArgument(f"{op!r} cannot keep {s!r}; it can keep {can}")
            lower[pairs.index((op, s))] = 1
    upper = np.concatenate([np.ones(3 * n + len(kinds)), [modes_of[op] for op in several]])
    result = milp(
        c,
        constraints=LinearConstraint(np.array(rows), lb, ub),
        integrality=np.ones(size),
        bounds=Bounds(lower, upper),
    )
    if result.x is None:
        budgets = f"max_disk={max_disk}, max_runtime={max_runtime}"
        raise InvalidArgument(f"no choice of strategies fits the budgets ({budgets}) with those fixed")
    x = result.x.round().astype(int)
    strategies: dict[str, list[str]] = {}
    answers: dict[str, list[str]] = {op: ["", ""] for op in costs.strategies}
    for k, (op, s) in enumerate(pairs):
        if x[k]:
            strategies.setdefault(op, []).append(s)
        if x[n + k]:
            answers[op][0] = s
        if x[2 * n + k]:
            answers[op][1] = s
    query = float((qb * x[n : 2 * n]).sum() + (qf * x[2 * n : 3 * n]).sum())
    return Plan(
        strategies,
        {op: (b, f) for op, (b, f) in answers.items()},
        int((disk * x[:n]).sum()),
        sum(costs.runtime(op, kept) for op, kept in strategies.items()),
        query,
        costs,
    )
