"""SubZero's genomics benchmark (section VIII-B) on a generated matrix:
``sparkprov bench functions --suite genomics``.

A 96 × 55 patient-feature matrix (generated: correlated features, 5% missing)
replicated 100 times (9600 patients), through built-in mapping operators (clipping, a
log, centring each patient, scaling each feature, a projection, a sigmoid, a
threshold, a transpose) and four user functions that shuffle and extract, all with
payload lineage: imputing a missing value from the three nearest patients (payload:
their rows), sorting patients by risk (payload: the source row), keeping each
patient's five strongest features (payload: the feature), and averaging cohorts of
the sorted patients (payload: the cohort's rows). An equal mix of backward and
forward queries.

Each strategy of the paper's Table II is run with the query-time switch (dynamic) and
without (static); the optimizer chooses under disk budgets from 1 MB to 100 MB, and
its predicted query costs are set beside the measured ones.

>>> x = matrix(patients=4, replicas=2)
>>> x.shape
(8, 55)
"""

from __future__ import annotations

import warnings

import numpy as np

from ..arrays.cells import Box, Shape, distinct
from ..arrays.operators import ArrayOperator, Elementwise, FunctionOperator, Transpose
from ..arrays.optimizer import LineageQuery
from ..arrays.workflow import ArrayWorkflow, WorkflowRun, with_mappings

FEATURES = 55
COHORTS = 100
TOP = 5


def matrix(patients: int = 96, replicas: int = 100, seed: int = 0) -> np.ndarray:
    """Patients × features, with correlated features and 5% of the values missing (NaN)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 1, (patients, 8)) @ rng.normal(0, 1, (8, FEATURES)) + rng.normal(0, 0.3, (patients, FEATURES))
    x = np.tile(base, (replicas, 1)) + rng.normal(0, 0.05, (patients * replicas, FEATURES))
    x[rng.random(x.shape) < 0.05] = np.nan
    return x


def _rows_cells(rows: np.ndarray, shape: Shape) -> np.ndarray:
    cols = shape.dims[1]
    return (np.asarray(rows, np.int64)[:, None] * cols + np.arange(cols)).ravel()


class RowWise(FunctionOperator):
    """A mapping operator where an output cell depends on its whole row (centring)."""

    modes = ("map",)

    def map_b(self, cells, i, shapes):
        return _rows_cells(distinct(cells // shapes[0].dims[1]), shapes[0])

    def map_f(self, cells, i, shapes):
        return _rows_cells(distinct(cells // shapes[0].dims[1]), self.output_shape(shapes))


class ColumnWise(FunctionOperator):
    """A mapping operator where an output cell depends on its whole column (scaling)."""

    modes = ("map",)

    def map_b(self, cells, i, shapes):
        rows, cols = shapes[0].dims
        columns = distinct(cells % cols)
        return np.sort((np.arange(rows)[:, None] * cols + columns).ravel())

    map_f = map_b


class Project(ArrayOperator):
    """Each patient's features times fixed weights: a score per patient (its row)."""

    modes = ("map",)

    def __init__(self, width: int) -> None:
        self.weights = np.random.default_rng(1).normal(0, 1, (width, 1))

    def output_shape(self, shapes):
        return Shape((shapes[0].dims[0], 1))

    def run(self, arrays, writer):
        return arrays[0] @ self.weights

    def map_b(self, cells, i, shapes):
        return _rows_cells(distinct(cells), shapes[0])

    def map_f(self, cells, i, shapes):
        return distinct(cells // shapes[0].dims[1])


class Impute(ArrayOperator):
    """A missing value: the mean of its feature over the three patients nearest by
    their first complete feature (payload: those rows); others are kept."""

    modes = ("full", "payload")

    def run(self, arrays, writer):
        x = arrays[0]
        self.shape = Shape(x.shape)
        rows, cols = x.shape
        key = np.nan_to_num(x[:, 1])
        order = np.argsort(key, kind="stable")
        rank = np.empty(rows, np.int64)
        rank[order] = np.arange(rows)
        near = np.stack([order[np.clip(rank + d, 0, rows - 1)] for d in (-1, 1, 2)], axis=1)
        out = x.copy()
        missing = np.argwhere(np.isnan(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # three missing neighbours: 0 (nan_to_num)
            means = np.nanmean(x[near[missing[:, 0]], missing[:, 1][:, None]], axis=1)
        out[missing[:, 0], missing[:, 1]] = np.nan_to_num(means)
        if writer is not None:
            cells = missing[:, 0] * cols + missing[:, 1]
            kept = np.flatnonzero(~np.isnan(x).ravel())
            if writer.mode == "full":
                writer.write_many(kept.reshape(-1, 1), kept.reshape(-1, 1))
                writer.write_many(cells.reshape(-1, 1), near[missing[:, 0]] * cols + missing[:, 1][:, None])
            else:
                writer.write_payload(kept, b"")
                rows = near[missing[:, 0]].astype(np.int32)
                writer.write_payloads(cells.reshape(-1, 1), [r.tobytes() for r in rows])
        return out

    def map_p(self, cell, payload, i):
        if not payload:
            return np.array([cell])
        return np.frombuffer(payload, np.int32).astype(np.int64) * self.shape.dims[1] + cell % self.shape.dims[1]


class SortPatients(ArrayOperator):
    """Patients sorted by their row sum (payload: each output row's source row)."""

    modes = ("full", "payload")

    def run(self, arrays, writer):
        x = arrays[0]
        self.shape = Shape(x.shape)
        perm = np.argsort(x.sum(axis=1), kind="stable")
        if writer is not None:
            cols = x.shape[1]
            out_rows = _rows_cells(np.arange(x.shape[0]), self.shape).reshape(-1, cols)
            if writer.mode == "full":
                sources = _rows_cells(perm, self.shape).reshape(-1, 1)
                writer.write_many(out_rows.reshape(-1, 1), sources)
            else:
                writer.write_payloads(out_rows, [source.tobytes() for source in perm.astype(np.int32)])
        return x[perm]

    def map_p(self, cell, payload, i):
        cols = self.shape.dims[1]
        return np.array([int(np.frombuffer(payload, np.int32)[0]) * cols + cell % cols])

    def map_p_many(self, cells, payload, i):
        cols = self.shape.dims[1]
        return distinct(int(np.frombuffer(payload, np.int32)[0]) * cols + cells % cols)


class TopFeatures(ArrayOperator):
    """Each patient's five features of largest magnitude (payload: the feature)."""

    modes = ("full", "payload")

    def output_shape(self, shapes):
        return Shape((shapes[0].dims[0], TOP))

    def run(self, arrays, writer):
        x = arrays[0]
        self.shape = Shape(x.shape)
        top = np.argsort(-np.abs(x), axis=1, kind="stable")[:, :TOP]
        rows = np.arange(x.shape[0])[:, None]
        if writer is not None:
            out = (rows * TOP + np.arange(TOP)).ravel()
            source = (rows * x.shape[1] + top).ravel()
            if writer.mode == "full":
                writer.write_many(out.reshape(-1, 1), source.reshape(-1, 1))
            else:
                writer.write_payloads(out.reshape(-1, 1), [bytes([f]) for f in top.ravel().tolist()])
        return x[rows, top]

    def map_p(self, cell, payload, i):
        return np.array([(cell // TOP) * self.shape.dims[1] + payload[0]])


class Cohorts(ArrayOperator):
    """Sorted patients averaged in cohorts of consecutive rows (payload: the rows)."""

    modes = ("full", "payload")

    def output_shape(self, shapes):
        return Shape((COHORTS, shapes[0].dims[1]))

    def run(self, arrays, writer):
        x = arrays[0]
        self.shape = Shape(x.shape)
        edges = np.linspace(0, x.shape[0], COHORTS + 1).astype(int)
        out = np.stack([x[a:b].mean(axis=0) for a, b in zip(edges[:-1], edges[1:])])
        if writer is not None:
            cols = x.shape[1]
            for c, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
                cells = c * cols + np.arange(cols)
                if writer.mode == "full":
                    members = np.arange(a, b)[None, :] * cols + np.arange(cols)[:, None]  # per feature, its rows
                    writer.write_many(cells.reshape(-1, 1), members)
                else:
                    writer.write_payload(cells, np.array([a, b - 1], np.int32).tobytes())
        return out

    def map_p(self, cell, payload, i):
        a, b = np.frombuffer(payload, np.int32).tolist()
        cols = self.shape.dims[1]
        return np.arange(a, b + 1) * cols + cell % cols

    def map_p_many(self, cells, payload, i):
        a, b = np.frombuffer(payload, np.int32).tolist()
        cols = self.shape.dims[1]
        return np.sort((np.arange(a, b + 1)[:, None] * cols + distinct(cells % cols)[None, :]).ravel())


def workflow() -> ArrayWorkflow:
    wf = ArrayWorkflow()
    wf.add("clip", Elementwise(lambda x: np.clip(x, -4, 4), "clip"), ["raw"])
    wf.add("impute", Impute(), ["clip"])
    wf.add("log", Elementwise(lambda x: np.sign(x) * np.log1p(np.abs(x)), "log"), ["impute"])
    wf.add("center", RowWise(lambda x: x - x.mean(axis=1, keepdims=True), "centre"), ["log"])
    wf.add("scale", ColumnWise(lambda x: x / (x.std(axis=0, keepdims=True) + 1e-9), "scale"), ["center"])
    wf.add("sorted", SortPatients(), ["scale"])
    wf.add("cohorts", Cohorts(), ["sorted"])
    wf.add("cohorts_t", Transpose(), ["cohorts"])
    wf.add("top", TopFeatures(), ["scale"])
    wf.add("score", Project(TOP), ["top"])
    wf.add("prob", Elementwise(lambda s: 1 / (1 + np.exp(-s)), "sigmoid"), ["score"])
    wf.add("label", Elementwise(lambda p: (p > 0.5).astype(float), "threshold"), ["prob"])
    return wf


USER_FUNCTIONS = ("impute", "sorted", "top", "cohorts")
# the paper's Table II for the four functions; the built-in operators keep their mappings
STRATEGIES = {
    "BlackBox": ["BlackBox"],
    "FullOne": ["FullOne←"],
    "FullMany": ["FullMany←"],
    "FullForw": ["FullOne→"],
    "FullBoth": ["FullOne→", "FullOne←"],
    "PayOne": ["PayOne←"],
    "PayMany": ["PayMany←"],
    "PayBoth": ["PayOne←", "FullOne→"],
}


def mapped(udfs: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Mappings for the built-in operators, ``udfs`` for the functions (else black boxes)."""
    return with_mappings(workflow(), udfs)


def queries(run: WorkflowRun, seed: int = 0) -> dict[str, LineageQuery]:
    """Three backward and three forward queries."""
    rng = np.random.default_rng(seed)
    patients = run.shape("raw").dims[0]
    some = np.sort(rng.choice(patients, 10, replace=False))
    return {
        "BQ0": LineageQuery("backward", "label", "raw", [(p, 0) for p in some]),
        "BQ1": LineageQuery("backward", "cohorts_t", "impute", [(3, 7), (10, 42)]),
        "BQ2": LineageQuery("backward", "top", "clip", Box((100, 0), (199, TOP - 1))),
        "FQ0": LineageQuery("forward", "impute", "top", Box((500, 0), (549, FEATURES - 1))),
        "FQ1": LineageQuery("forward", "scale", "cohorts", [(int(p), 3) for p in some]),
        "FQ2": LineageQuery("forward", "sorted", "cohorts_t", Box((0, 0), (40, 2))),
    }


BUDGETS_MB = "1,5,10,20,50,100"


def main(args) -> dict:
    """Every Table II strategy, static and dynamic; the optimizer under each budget."""
    import statistics
    import tempfile
    import time
    from pathlib import Path

    from ..arrays.optimizer import choose, measure

    x = matrix(replicas=args.replicas)
    inputs = {"raw": x}
    report: dict = {"suite": "genomics", "shape": list(x.shape), "input_bytes": x.nbytes}
    with tempfile.TemporaryDirectory(prefix="sparkprov-bench-genomics-") as tmp:
        work = Path(tmp)

        def timed_run(strategies, label):
            started = time.perf_counter()
            run = workflow().run(inputs, work / label, strategies)
            return time.perf_counter() - started, run

        def timed_query(q, run) -> float:
            started = time.perf_counter()
            q.run(run)
            return time.perf_counter() - started

        base, seconds, runs = [], {s: [] for s in STRATEGIES}, {}
        for r in range(args.repeat):  # interleaved rounds
            base.append(timed_run(mapped(), f"plain-{r}")[0])
            for name, kept in STRATEGIES.items():
                spent, runs[name] = timed_run(mapped({f: kept for f in USER_FUNCTIONS}), f"{name}-{r}")
                seconds[name].append(spent)
        plain = statistics.median(base)
        truth = {k: q.run(runs["BlackBox"]) for k, q in queries(runs["BlackBox"]).items()}
        black_box: dict[str, float] = {}
        rows = []
        for name, run in runs.items():
            qs = queries(run)
            dynamic = {k: statistics.median(timed_query(q, run) for _ in range(3)) for k, q in qs.items()}
            run.switch = False
            static = {k: timed_query(q, run) for k, q in qs.items()}
            run.switch = True
            if name == "BlackBox":
                black_box = dynamic
            rows.append(
                {
                    "strategy": name,
                    "functions": STRATEGIES[name],
                    "runtime_ratio": round(statistics.median(seconds[name]) / plain, 2),
                    "lineage_bytes": run.lineage_bytes(),
                    "bytes_over_input": round(run.lineage_bytes() / x.nbytes, 3),
                    "dynamic_ms": {k: round(t * 1000, 1) for k, t in dynamic.items()},
                    "static_ms": {k: round(t * 1000, 1) for k, t in static.items()},
                    "answers_agree": all(np.array_equal(q.run(run), truth[k]) for k, q in qs.items()),
                }
            )
        for r in rows:
            worst = max(_over(r["dynamic_ms"][k] / 1000, black_box[k]) for k in black_box)
            r["worst_dynamic_over_black_box"] = round(worst, 2)
        report["plain_seconds"] = round(plain, 3)
        report["strategies"] = rows
        workload_names = list(queries(runs["BlackBox"]))
        workload = list(queries(runs["BlackBox"]).values())
        costs = measure(workflow(), inputs, work / "costs", workload, repeat=2, runs=0)  # disk budgets only
        plans = []
        for mb in [float(v) for v in args.max_disk_mb.split(",")]:
            plan = choose(costs, max_disk=mb * 1e6)
            spent, run = timed_run(plan.strategies, f"plan-{mb}")
            named = dict(zip(workload_names, workload))
            measured = {k: statistics.median(timed_query(q, run) for _ in range(3)) for k, q in named.items()}
            predicted = {k: plan.predicted(i) for i, k in enumerate(workload_names)}
            plans.append(
                {
                    "max_disk_mb": mb,
                    "functions": {f: plan.strategies[f] for f in USER_FUNCTIONS},
                    "predicted_bytes": plan.disk,
                    "measured_bytes": run.lineage_bytes(),
                    "runtime_ratio": round(spent / plain, 2),
                    "predicted_ms": {k: round(v * 1000, 1) for k, v in predicted.items()},
                    "measured_ms": {k: round(v * 1000, 1) for k, v in measured.items()},
                    "worst_measured_over_predicted": round(max(_ratio(measured[k], predicted[k]) for k in measured), 2),
                    "worst_over_black_box": round(max(_over(measured[k], black_box[k]) for k in measured), 2),
                    "answers_agree": all(np.array_equal(q.run(run), truth[k]) for k, q in named.items()),
                }
            )
        report["optimizer"] = plans
    _print(report)
    return report


FLOOR = 0.001  # times below a millisecond are compared as a millisecond: below that, ratios are noise


def _over(a: float, b: float) -> float:
    """``a`` over ``b``, seconds, each at least ``FLOOR``."""
    return max(a, FLOOR) / max(b, FLOOR)


def _ratio(a: float, b: float) -> float:
    """How far apart ``a`` and ``b`` are, as a factor of at least 1."""
    return max(_over(a, b), _over(b, a))


def _print(report: dict) -> None:
    shape = "×".join(str(d) for d in report["shape"])
    print(f"\ngenomics: a {shape} matrix ({report['input_bytes']:,} bytes); workflow {report['plain_seconds']} s")
    keys = list(report["strategies"][0]["dynamic_ms"])
    print(f"  {'strategy':<9} {'runtime':>8} {'bytes/in':>9} " + " ".join(f"{k:>15}" for k in keys) + "  worst/BB")
    print(f"  {'':<9} {'':>8} {'':>9} " + " ".join(f"{'dynamic static':>15}" for _ in keys) + "   (ms)")
    for r in report["strategies"]:
        cells = " ".join(f"{r['dynamic_ms'][k]:>7.0f} {r['static_ms'][k]:>7.0f}" for k in keys)
        print(
            f"  {r['strategy']:<9} {r['runtime_ratio']:>8.2f} {r['bytes_over_input']:>9.3f} {cells}"
            f"  {r['worst_dynamic_over_black_box']:>6.2f}"
        )
    print("\noptimizer (unbounded runtime), per disk budget: the functions' strategies, predicted / measured ms")
    for p in report["optimizer"]:
        kept = "; ".join(f"{f} {'+'.join(s)}" for f, s in p["functions"].items())
        times = " ".join(f"{k} {p['predicted_ms'][k]:.0f}/{p['measured_ms'][k]:.0f}" for k in p["measured_ms"])
        print(
            f"  {p['max_disk_mb']:>5g} MB: {p['measured_bytes']:>10,} bytes  {kept}\n"
            f"           {times}  (worst ratio {p['worst_measured_over_predicted']}, "
            f"worst / black box {p['worst_over_black_box']})"
        )
