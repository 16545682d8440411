"""Region lineage's strategies measured (SubZero section VIII-C): ``sparkprov bench
functions --suite micro``.

The micro suite is SubZero's microbenchmark: a generated operator over a 1000×1000
array writes lineage for 10% of its output cells, in region pairs of ``fanout``
neighbouring output cells that depend on ``fanin`` input cells in the same area
(payloads of ``fanin × 4`` bytes: the input cells themselves). Each strategy runs the
operator with lineage and stores it; the baseline runs it without. Measured per
strategy (interleaved rounds, medians): the run with lineage over the run without, and
the time it adds (the operator itself takes milliseconds, so the ratio is large);
the lineage's bytes over the input's; opening the stored lineage (files read, the
R-tree built); a backward query of 1000 output cells and a forward query of 1000
input cells (five of each; one forward query over payloads, which runs the payload
function on every stored cell). ``BlackBox`` stores nothing and runs the operator again with lineage at
query time. Every strategy's answers are compared with the black box's.

>>> op = MicroOperator(size=40, fanin=3, fanout=4, seed=1)
>>> log = op.run(op.image(), trace=True)[1]
>>> log.pairs == (40 * 40 // 10) // 4
True
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ..arrays.cells import Shape
from ..arrays.encodings import ENCODINGS, folder_bytes
from ..arrays.regions import RegionLog

QUERY_CELLS = 1000
QUERY_ROUNDS = 5


def _cells_from_payload(cell: int, payload: bytes) -> np.ndarray:
    return np.frombuffer(payload, dtype=np.int32)


class MicroOperator:
    """SubZero's synthetic operator: region pairs over a ``size × size`` array."""

    def __init__(self, size: int = 1000, fanin: int = 10, fanout: int = 10, seed: int = 0) -> None:
        self.shape = Shape((size, size))
        self.fanin, self.fanout = fanin, fanout
        side = math.ceil(math.sqrt(fanout))  # output cells: the first fanout cells of a side × side block
        blocks = (size // side) ** 2
        pairs = min(blocks, self.shape.size // 10 // fanout)
        rng = np.random.default_rng(seed)
        chosen = rng.choice(blocks, pairs, replace=False)
        per_row = size // side
        origins = np.stack([(chosen // per_row) * side, (chosen % per_row) * side], axis=1)
        block = np.stack(np.unravel_index(np.arange(fanout), (side, side)), axis=1)
        out = origins[:, None, :] + block[None, :, :]
        # input cells: random cells in the area around the block
        reach = max(side, math.ceil(math.sqrt(fanin)))
        offsets = rng.integers(-reach, side + reach, size=(pairs, fanin, 2))
        inp = np.clip(origins[:, None, :] + offsets, 0, size - 1)
        self.out = np.ravel_multi_index((out[..., 0], out[..., 1]), self.shape.dims).astype(np.int64)
        self.inp = np.ravel_multi_index((inp[..., 0], inp[..., 1]), self.shape.dims).astype(np.int64)

    def image(self) -> np.ndarray:
        return np.random.default_rng(1).random(self.shape.dims, dtype=np.float32)

    def run(self, image: np.ndarray, trace: bool = False, payload: bool = False) -> tuple[np.ndarray, RegionLog | None]:
        """The output array (each region's cells: the mean of its input cells), and
        with ``trace`` its lineage (region pairs, or with ``payload`` payload pairs)."""
        flat = image.ravel()
        out = np.zeros_like(flat)
        out[self.out] = flat[self.inp].mean(axis=1)[:, None]
        if not trace:
            return out.reshape(image.shape), None
        log = RegionLog()
        if payload:
            for cells, inputs in zip(self.out, self.inp.astype(np.int32)):
                log.write_payload(cells, inputs.tobytes())
        else:
            log.write_many(self.out, self.inp)
        return out.reshape(image.shape), log


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _queries(op: MicroOperator, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Rounds of (output cells for a backward query, input cells for a forward one)."""
    rng = np.random.default_rng(seed)
    outs, ins = np.unique(op.out), np.unique(op.inp)
    return [
        (
            rng.choice(outs, min(QUERY_CELLS, len(outs)), replace=False),
            rng.choice(ins, min(QUERY_CELLS, len(ins)), False),
        )
        for _ in range(QUERY_ROUNDS)
    ]


class _BlackBox:
    """No lineage stored: the operator runs again in tracing mode for every query,
    and the pairs its query cells reach are kept."""

    def __init__(self, op: MicroOperator, image: np.ndarray) -> None:
        self.op, self.image = op, image

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.op.run(self.image, trace=True)[1].cell_pairs()

    def backward(self, cells: np.ndarray) -> np.ndarray:
        out, inp = self._pairs()
        return np.unique(inp[np.isin(out, cells)])

    def forward(self, cells: np.ndarray) -> np.ndarray:
        out, inp = self._pairs()
        return np.unique(out[np.isin(inp, cells)])


def measure(op: MicroOperator, strategies: list[str], repeat: int, work: Path) -> dict:
    """One configuration: every strategy's costs and query times."""
    image = op.image()
    input_bytes = image.nbytes
    plain, built, sizes = [], {s: [] for s in strategies}, {}
    for r in range(repeat):  # interleaved: plain, then each strategy, every round
        plain.append(_timed(lambda: op.run(image))[0])
        for name in strategies:
            if name == "BlackBox":
                built[name].append(0.0)
                continue
            enc = ENCODINGS[name]()
            folder = work / f"{name}-{r}"
            pay = enc.mode == "payload"
            seconds, _ = _timed(
                lambda enc=enc, folder=folder, pay=pay: enc.build(
                    op.run(image, trace=True, payload=pay)[1], folder, op.shape, op.shape, map_p=_cells_from_payload
                )
            )
            run_alone = _timed(lambda: op.run(image))[0]
            built[name].append(seconds + run_alone)
            sizes[name] = folder_bytes(folder)
            if r < repeat - 1:
                shutil.rmtree(folder)
    base = statistics.median(plain)
    queries = _queries(op, seed=7)
    black_box = _BlackBox(op, image)
    truth = [(black_box.backward(b), black_box.forward(f)) for b, f in queries]
    rows = []
    for name in strategies:
        if name == "BlackBox":
            opened, stored = 0.0, black_box
        else:
            folder = work / f"{name}-{repeat - 1}"
            opened, stored = _timed(
                lambda name=name, folder=folder: ENCODINGS[name]().open(folder, _cells_from_payload)
            )
        back_t, fwd_t, agree = [], [], True
        for k, ((b, f), (want_b, want_f)) in enumerate(zip(queries, truth)):
            tb, got_b = _timed(lambda b=b, stored=stored: stored.backward(b))
            back_t.append(tb)
            agree = agree and np.array_equal(got_b, want_b)
            if k and getattr(stored, "scans_payloads", False):
                continue  # a forward query over payloads runs the payload function on every cell: timed once
            tf, got_f = _timed(lambda f=f, stored=stored: stored.forward(f))
            fwd_t.append(tf)
            agree = agree and np.array_equal(got_f, want_f)
        rows.append(
            {
                "strategy": name,
                "runtime_ratio": round(statistics.median(built[name]) / base, 2) if name != "BlackBox" else 1.0,
                "lineage_ms": round((statistics.median(built[name]) - base) * 1000, 1) if name != "BlackBox" else 0.0,
                "lineage_bytes": sizes.get(name, 0),
                "bytes_over_input": round(sizes.get(name, 0) / input_bytes, 3),
                "open_ms": round(opened * 1000, 1),
                "backward_ms": round(statistics.median(back_t) * 1000, 1),
                "forward_ms": round(statistics.median(fwd_t) * 1000, 1),
                "answers_agree": agree,
            }
        )
    return {
        "fanin": op.fanin,
        "fanout": op.fanout,
        "pairs": len(op.out),
        "plain_ms": round(base * 1000, 1),
        "input_bytes": input_bytes,
        "strategies": rows,
    }


def main(args: argparse.Namespace) -> int:
    if args.suite == "rows":
        from .row_functions import main as rows_main

        report = rows_main(args)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(report, indent=1))
        return 0
    if args.suite in ("astronomy", "genomics"):
        from .astronomy import main as astronomy_main
        from .genomics import main as genomics_main

        report = (astronomy_main if args.suite == "astronomy" else genomics_main)(args)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(report, indent=1))
        checked = report["strategies"] + (report["optimizer"] if args.suite == "genomics" else [])
        return 0 if all(s["answers_agree"] for s in checked) else 1
    strategies = [s for s in (args.strategies.split(",") if args.strategies else [*ENCODINGS, "BlackBox"]) if s]
    unknown = [s for s in strategies if s not in ENCODINGS and s != "BlackBox"]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}; strategies: {', '.join([*ENCODINGS, 'BlackBox'])}")
    fanins = [int(x) for x in args.fanin.split(",")]
    fanouts = [int(x) for x in args.fanout.split(",")]
    report = {"suite": args.suite, "size": args.size, "repeat": args.repeat, "configs": []}
    with tempfile.TemporaryDirectory(prefix="sparkprov-bench-functions-") as tmp:
        for fanin in fanins:
            for fanout in fanouts:
                op = MicroOperator(args.size, fanin, fanout)
                work = Path(tmp) / f"in{fanin}-out{fanout}"
                result = measure(op, strategies, args.repeat, work)
                report["configs"].append(result)
                shutil.rmtree(work, ignore_errors=True)
                _print(result)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0 if all(s["answers_agree"] for c in report["configs"] for s in c["strategies"]) else 1


def _print(result: dict) -> None:
    print(
        f"\nfanin {result['fanin']}, fanout {result['fanout']}: {result['pairs']:,} pairs, "
        f"operator alone {result['plain_ms']:.0f} ms"
    )
    print(
        f"  {'strategy':<10} {'runtime':>8} {'added ms':>9} {'bytes/in':>9} {'open ms':>8} {'back ms':>8} "
        f"{'fwd ms':>8}  agree"
    )
    for s in result["strategies"]:
        print(
            f"  {s['strategy']:<10} {s['runtime_ratio']:>8.2f} {s['lineage_ms']:>9.1f} {s['bytes_over_input']:>9.3f} "
            f"{s['open_ms']:>8.1f} "
            f"{s['backward_ms']:>8.1f} {s['forward_ms']:>8.1f}  {s['answers_agree']}"
        )
