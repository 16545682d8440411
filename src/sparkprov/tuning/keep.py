"""``sp.choose_keep``: per payload or composite function of a query, whether a capture
stores its input rows as it runs (``"pairs"``) or keeps its payloads for the query
(``"payload"``, SubZero's PayOne), chosen under a disk and a runtime budget from costs
measured on a sample run and a sample workload of traces (SubZero section VII, for
DataFrame functions).

Every function keeping pairs is the base. For each function ``f``, the capture with
``f`` alone keeping payloads changes the stored bytes by ``d_f``, the capture's
seconds by ``r_f`` and the workload's seconds per trace by ``q_f`` (each the difference
of medians over ``repeat`` captures, interleaved with the base's). With ``x_f = 1`` for
payloads kept, the choice solves, by HiGHS through ``scipy.optimize.milp``::

    minimise   Σ_f q_f x_f + ε Σ_f (d_f / D + r_f / R) x_f
    subject to B + Σ_f d_f x_f ≤ max_disk,  T + Σ_f r_f x_f ≤ max_runtime,  x_f ∈ {0, 1}

where ``B`` and ``T`` are the base's bytes and seconds and ``D``, ``R`` scale the tie
break. The costs are added as if each function's were its own (a model: a function
over another's output shares what it stores); the chosen keeps are then captured once
more and ``KeepPlan.explain()`` gives what was measured beside what was predicted.
"""

from __future__ import annotations

import logging
import statistics
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, field

import numpy as np
from pyspark.sql import DataFrame

from ..capture.rules.python import functions_keeping_payloads
from ..errors import InvalidArgument
from ..query.trace import RowsArg
from ..store.lineage_bytes import stored_lineage_bytes

log = logging.getLogger("sparkprov")

EPSILON = 1e-3
DIRECTIONS = ("backward", "forward")


@dataclass(frozen=True)
class Trace:
    """A trace of the sample workload: output ``rows`` traced ``"backward"`` (to
    ``source``, or to every source), or ``rows`` of ``source`` traced ``"forward"``.

    >>> Trace("backward", [0, 1]).direction
    'backward'
    """

    direction: str
    rows: RowsArg
    source: str | None = None

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise InvalidArgument(f"a trace goes 'backward' or 'forward', not {self.direction!r}")
        if self.direction == "forward" and not isinstance(self.source, str):
            raise InvalidArgument("a forward trace starts from rows of a source: give source=")

    def run(self, cap) -> None:
        """The trace on capture ``cap``, its rows fetched as a user would."""
        if self.direction == "backward":
            found = cap.backward(self.rows, self.source)
        else:
            found = cap.forward(self.source, self.rows)
        for frame in found.values() if isinstance(found, dict) else [found]:
            frame.collect()


@dataclass(frozen=True)
class Costs:
    """What a capture costs: stored bytes, its seconds, the workload's seconds per trace."""

    bytes: float
    seconds: float
    trace_seconds: float

    def plus(self, other: Costs) -> Costs:
        return Costs(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def minus(self, other: Costs) -> Costs:
        return Costs(*(a - b for a, b in zip(astuple(self), astuple(other))))


@dataclass
class KeepPlan:
    """The choice: ``keep`` (pass it to ``session.capture(..., keep=...)``), what every
    function keeping pairs costs (``base``), what keeping each function's payloads
    changes (``deltas``), the prediction for the choice and what it measured."""

    keep: dict[str, str]
    base: Costs
    deltas: dict[str, Costs]
    predicted: Costs
    measured: Costs | None = None
    budgets: dict[str, float | None] = field(default_factory=dict)

    def explain(self) -> str:
        """The choice as a table: per function, what it keeps and what payloads change."""
        lines = [
            f"every function keeping pairs: {_said(self.base)}",
            f"  {'function':<32} {'keeps':<8} {'bytes if payload':>16} {'s if payload':>12} {'ms a trace':>10}",
        ]
        for name, d in self.deltas.items():
            change = f"{d.bytes:>+16,.0f} {d.seconds:>+12.2f} {d.trace_seconds * 1000:>+10.1f}"
            lines.append(f"  {name:<32} {self.keep[name]:<8} {change}")
        budgets = ", ".join(f"{k} {v}" for k, v in self.budgets.items())
        lines.append(f"predicted: {_said(self.predicted)} (budgets: {budgets})")
        if self.measured is not None:
            lines.append(f"measured:  {_said(self.measured)}")
        return "\n".join(lines)


def _said(c: Costs) -> str:
    return f"{c.bytes:,.0f} bytes, {c.seconds:.2f} s, {c.trace_seconds * 1000:.1f} ms a trace"


def choose_keep(
    session,
    df: DataFrame,
    workload: Sequence[Trace | tuple],
    *,
    max_disk: float | None = None,
    max_runtime: float | None = None,
    repeat: int = 3,
) -> KeepPlan:
    """How each payload or composite function of ``df`` keeps its lineage, chosen to make
    the ``workload``'s traces fastest within ``max_disk`` bytes stored and
    ``max_runtime`` seconds of capture, from ``repeat`` captures of ``df`` per choice
    measured in ``session`` (run it on a sample of the data), after one to warm up. The
    captures it makes are removed again.

    >>> plan = sp.choose_keep(session, q, [Trace("backward", [0, 5, 9])], max_disk=1e6)  # doctest: +SKIP
    >>> cap = session.capture(q, "q", keep=plan.keep)  # doctest: +SKIP
    """
    traces = _traces(workload)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise InvalidArgument(f"repeat must be a whole number from 1, not {repeat!r}")
    for label, budget in (("max_disk", max_disk), ("max_runtime", max_runtime)):
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int | float) or budget < 0):
            raise InvalidArgument(f"{label} must be a number of at least 0, or None, not {budget!r}")
    names = sorted(functions_keeping_payloads(session._bridge, df))
    if not names:
        raise InvalidArgument(
            "no function of this query declares payload or composite lineage over groups or partitions: "
            "there is no keep to choose"
        )
    pairs = dict.fromkeys(names, "pairs")
    choices = {"": pairs, **{n: {**pairs, n: "payload"} for n in names}}
    name = f"sparkprov-choose-keep-{uuid.uuid4().hex[:12]}"
    measured: dict[str, list[Costs]] = {k: [] for k in choices}
    try:
        _measure(session, df, name, pairs, traces)  # a warm-up: the first capture pays for loading code
        for r in range(repeat):  # interleaved, the order rotated each round
            order = list(choices)
            order = order[r % len(order) :] + order[: r % len(order)]
            for key in order:
                log.info("sparkprov: choose_keep round %d of %d: %s", r + 1, repeat, key or "every function pairs")
                measured[key].append(_measure(session, df, name, choices[key], traces))
        base = _median(measured[""])
        deltas = {n: _median(measured[n]).minus(base) for n in names}
        keep = _solve(base, deltas, max_disk, max_runtime)
        predicted = base
        for n in names:
            if keep[n] == "payload":
                predicted = predicted.plus(deltas[n])
        final = _measure(session, df, name, keep, traces)
    finally:
        if name in session.captures():
            session.remove(name, force=True)
    budgets = {"max_disk": max_disk, "max_runtime": max_runtime}
    return KeepPlan(keep, base, deltas, predicted, final, budgets)


def _traces(workload) -> list[Trace]:
    if isinstance(workload, Trace) or not isinstance(workload, Iterable):
        raise InvalidArgument("workload is a list of traces: Trace(direction, rows, source) or such tuples")
    traces = [w if isinstance(w, Trace) else Trace(*w) if isinstance(w, tuple) else w for w in workload]
    if not traces or not all(isinstance(t, Trace) for t in traces):
        raise InvalidArgument("workload is a non-empty list of traces: Trace(direction, rows, source) or such tuples")
    return traces


def _measure(session, df: DataFrame, name: str, keep: dict[str, str], traces: list[Trace]) -> Costs:
    started = time.perf_counter()
    cap = session.capture(df, name, keep=keep)
    cap.build_lineage()  # a deferred part is part of what the capture costs
    seconds = time.perf_counter() - started
    spent = []
    for t in traces:
        began = time.perf_counter()
        t.run(cap)
        spent.append(time.perf_counter() - began)
    return Costs(float(stored_lineage_bytes(cap._entry)), seconds, sum(spent) / len(spent))


def _median(costs: list[Costs]) -> Costs:
    return Costs(*(statistics.median(v) for v in zip(*map(astuple, costs))))


def _solve(base: Costs, deltas: dict[str, Costs], max_disk: float | None, max_runtime: float | None) -> dict[str, str]:
    from scipy.optimize import Bounds, LinearConstraint, milp

    names = list(deltas)
    q = np.array([deltas[n].trace_seconds for n in names])
    d = np.array([deltas[n].bytes for n in names])
    r = np.array([deltas[n].seconds for n in names])
    # ties (and no workload gain) broken toward fewer bytes, then less capture time
    tie = d / max(np.abs(d).sum(), 1.0) + r / max(np.abs(r).sum(), 1e-9)
    c = q + EPSILON * tie * max(np.abs(q).sum(), 1e-9)
    rows, upper = [], []
    if max_disk is not None:
        rows.append(d)
        upper.append(max_disk - base.bytes)
    if max_runtime is not None:
        rows.append(r)
        upper.append(max_runtime - base.seconds)
    constraints = [LinearConstraint(np.array(rows), -np.inf, np.array(upper))] if rows else []
    result = milp(c, constraints=constraints, integrality=np.ones(len(names)), bounds=Bounds(0, 1))
    if result.x is None:
        least = base.bytes + d[d < 0].sum(), base.seconds + r[r < 0].sum()
        raise InvalidArgument(
            f"no choice of keeps fits the budgets (max_disk={max_disk}, max_runtime={max_runtime}): "
            f"the least measured is {least[0]:,.0f} bytes and {least[1]:.2f} s"
        )
    return {n: "payload" if round(x) else "pairs" for n, x in zip(names, result.x)}
