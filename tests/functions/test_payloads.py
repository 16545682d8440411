"""Payloads kept for the query (keep="payload"), without Spark: what ``resolve`` makes of
the columns a function's run kept equals, row for row, what the same declaration gives
as the function runs (keep="pairs"), for random calls that receive their rows in
batches and make rows between them; wrong declarations are caught at query time with
the function and row named, and payloads or map_p that cannot be kept fail at capture."""

from __future__ import annotations

import dataclasses
import random
import threading

import numpy as np
import pyarrow as pa
import pytest

import sparkprov as sp
from sparkprov.functions.declare import Declaration
from sparkprov.functions.payloads import (
    kept_declaration,
    loaded_declaration,
    payload_arrow_types,
    payload_columns,
    resolve,
)
from sparkprov.functions.tracer import Tracer
from sparkprov.store.format import pay_columns


def _spans(i, payload, meta):  # a payload (lo, step): every step-th input row from lo up to the last received
    lo, step = payload
    return list(range(lo, meta["input_rows"], step))


def _spans_at_once(rows, payloads, meta):
    return [_spans(int(i), p, meta) for i, p in zip(rows, payloads)]


def _own(i, meta):  # composite's default: the input row of the same position, if received
    return [i] if i < meta["input_rows"] else []


def _own_at_once(rows, meta):
    return [_own(int(i), meta) for i in rows]


WIDTH = 2  # ids per input row (a source's rid each, as for a join's rows)


def _schema(width: int) -> pa.Schema:
    return pa.schema([*zip(pay_columns(width), payload_arrow_types(width)), ("set", pa.int64())])


SCHEMA = _schema(WIDTH)
DECLARATIONS = {
    "payload": Declaration("payload", len, ("p",), map_p=_spans),
    "payload-vectorized": Declaration("payload", len, ("p",), map_p=_spans_at_once, vectorized=True),
    "composite": Declaration("composite", len, ("p",), backward=_own, map_p=_spans),
    "composite-vectorized": Declaration(
        "composite", len, ("p",), backward=_own_at_once, map_p=_spans_at_once, vectorized=True
    ),
}


def _run(decl: Declaration, rng: random.Random, calls: int):
    """Random calls of a function: batches of input rows, each with ``WIDTH`` ids (the
    first from a few shared by every call, as a row joined to several that are
    grouped apart; the second unique; either -1 now and then: no row, as where an
    outer join pads or a workload's predicate leaves a row's rid out), rows made after
    each; the ids each output row gets as it runs (per id column), and the kept
    columns with set ids."""
    expected, kept, next_id, next_set = [[] for _ in range(WIDTH)], [], 0, 0
    for call in range(calls):
        run = Tracer(decl, f"call {call}", key=("g", call), widths=(WIDTH,))
        keep = Tracer(dataclasses.replace(decl, keep="payload"), f"call {call}", key=("g", call), widths=(WIDTH,))
        keep.call = call  # as the capture's wrapper names it
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(0, 5)
            ids = np.arange(next_id, next_id + n * WIDTH, dtype=np.int64).reshape(n, WIDTH)
            ids[:, 0] = [rng.randint(-1, 3) for _ in range(n)]
            ids[:, 1][np.array([rng.random() < 0.3 for _ in range(n)], dtype=bool)] = -1
            next_id += n * WIDTH
            run.receive(0, ids)
            keep.receive(0, ids)
            made = rng.randint(0, 4) if run.received[0] else 0
            payloads = [
                None if decl.mode == "composite" and rng.random() < 0.5 else (rng.randint(0, 3), rng.randint(1, 2))
                for _ in range(made)
            ]
            reported = np.array(payloads, dtype=object) if decl.vectorized else payloads
            for j, found in enumerate(run.lineage(made, [reported])):
                expected[j].extend(zip(range(next_set, next_set + made), found.to_pylist()))
            columns = payload_columns(keep, made, payloads)
            columns["set"] = np.arange(next_set, next_set + made, dtype=np.int64)
            next_set += made
            kept.append(pa.table(columns, schema=SCHEMA))
    return expected, pa.concat_tables(kept)


@pytest.mark.parametrize("name", sorted(DECLARATIONS))
def test_resolved_payloads_equal_the_lineage_as_the_function_runs(name):
    rng = random.Random(name)
    decl = DECLARATIONS[name]
    for _ in range(20):
        expected, kept = _run(decl, rng, calls=rng.randint(1, 4))
        kept = kept.take(np.array(rng.sample(range(kept.num_rows), kept.num_rows), dtype=np.int64))  # any order
        resolved = resolve(dataclasses.replace(decl, keep="payload"), kept, "set", WIDTH)
        for want, found in zip(expected, resolved):
            got: dict[int, list[int]] = {s: [] for s, _ in want}
            for s, i in zip(found["set"].to_pylist(), found["id"].to_pylist()):
                got[s].append(i)
            assert {s: sorted(ids) for s, ids in got.items()} == {s: sorted(ids) for s, ids in want}


def test_a_wrong_map_p_is_caught_when_a_trace_runs_it():
    decl = Declaration("payload", len, ("p",), map_p=lambda i, p, meta: [p], keep="payload")
    t = Tracer(decl, "call 0")
    t.receive(0, np.array([5, 6]))
    t.call = 0
    kept = pa.table(payload_columns(t, 2, [1, 7]) | {"set": [0, 1]}, schema=_schema(1))
    with pytest.raises(sp.LineageDeclarationWrong, match=r"output row 1 of partition 0: it names input position 7"):
        resolve(decl, kept, "set", 1)
    raising = dataclasses.replace(decl, map_p=lambda i, p, meta: 1 / 0)
    with pytest.raises(sp.LineageDeclarationWrong, match="output row 0 .* map_p .* raised ZeroDivisionError"):
        resolve(raising, kept, "set", 1)


def test_what_cannot_be_kept_fails_at_capture():
    lock = threading.Lock()
    decl = Declaration("payload", len, ("p",), map_p=lambda i, p, meta: [lock and 0], keep="payload")
    with pytest.raises(sp.LineageDeclarationWrong, match="its map_p cannot be kept in the store"):
        kept_declaration(decl)
    t = Tracer(dataclasses.replace(decl, map_p=_spans), "call 0")
    t.receive(0, np.array([5]))
    with pytest.raises(sp.LineageDeclarationWrong, match="output row 0 of call 0: its payload cannot be kept"):
        payload_columns(t, 1, [lock])
    loaded = loaded_declaration(kept_declaration(dataclasses.replace(decl, map_p=_spans)), "capture 'x'")
    assert (loaded.name, loaded.map_p, loaded.mode) == ("len", _spans, "payload")
    with pytest.raises(sp.SparkprovError, match="capture 'x' keeps payloads whose map_p cannot be loaded"):
        loaded_declaration(b"not a pickle", "capture 'x'")
