"""sp.lineage declarations and the tracer that checks them, without Spark: what a
declared function does in a plain run, and every wrong declaration caught with the
function and the row named."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import sparkprov as sp
from sparkprov.functions.declare import declaration_of
from sparkprov.functions.frames import python_lists
from sparkprov.functions.tracer import Tracer, declaration_error


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("cell",), {}, "unknown lineage mode 'cell'"),
        (("blackbox",), {}, "blackbox lineage needs column=: the output column naming each row's input positions"),
        (("blackbox",), {"column": "i", "backward": lambda i, m: [i]}, "backward= is for map and composite"),
        (("payload",), {"map_p": lambda i, p, m: p}, "payload lineage needs column="),
        (("payload",), {"column": "p"}, "payload lineage needs map_p="),
        (("payload",), {"column": ("p", "q"), "map_p": lambda i, p, m: p}, "payload lineage needs column="),
        (("composite",), {"column": "p", "map_p": lambda i, p, m: p}, "composite lineage needs backward="),
        (("map",), {"backward": lambda i, m: [i], "map_p": lambda i, p, m: p}, "map_p= is for payload"),
        (
            ("composite",),
            {"column": "p", "map_p": lambda i, p, m: p, "backward": lambda i, m: [i], "forward": lambda j, m: [j]},
            "forward= is for map lineage, not 'composite'",
        ),
        (("full",), {}, "full lineage needs column="),
        (("full",), {"column": ("a", "b", "c")}, "full lineage needs column="),
        (("map",), {}, "map lineage needs backward="),
        (("map",), {"backward": lambda i, m: [i], "forward": 3}, "forward= must be a function"),
        (("rowwise",), {"column": "x"}, "column= is for full, payload, composite and blackbox lineage"),
        (("full",), {"column": "x", "backward": lambda i, m: [i]}, "backward= is for map and composite lineage"),
        (("full",), {"column": "i", "vectorized": True}, "vectorized= is for map, payload and composite lineage, not"),
        (("map",), {"backward": lambda i, m: [i], "vectorized": 1}, "vectorized= must be True or False"),
        (("payload",), {"column": "p", "map_p": lambda i, p, m: p, "keep": "ids"}, "keep= is 'pairs' or 'payload'"),
        (("full",), {"column": "i", "keep": "payload"}, "keep='payload' is for payload and composite lineage, not"),
    ],
)
def test_bad_declarations_are_refused(args, kwargs, message):
    with pytest.raises(sp.InvalidArgument, match=message):
        sp.lineage(*args, **kwargs)


def test_a_declaration_needs_a_function_and_only_one():
    with pytest.raises(sp.InvalidArgument, match="got int"):
        sp.lineage("rowwise")(3)
    once = sp.lineage("rowwise")(lambda pdf: pdf)
    with pytest.raises(sp.InvalidArgument, match="already declares its lineage"):
        sp.lineage("rowwise")(once)


def test_plain_run_drops_the_reported_column_and_numbers_batches():
    @sp.lineage("full", column="inputs")
    def kept(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            out = pdf[pdf.x > 1]
            yield out.assign(inputs=out.index)

    got = list(kept(iter([pd.DataFrame({"x": [1, 2]}), pd.DataFrame({"x": [3]})])))
    assert [g.to_dict("list") for g in got] == [{"x": [2]}, {"x": [3]}]
    assert [list(g.index) for g in got] == [[1], [2]]  # positions across batches

    @sp.lineage("full", column="inputs")
    def arrow(table):
        return table.append_column("inputs", pa.array([[0]] * table.num_rows))

    assert arrow(pa.table({"x": [5]})).column_names == ["x"]


def test_the_wrapper_shows_the_functions_signature_to_pyspark():
    # PySpark picks f(data) or f(key, data), and the iterator forms, from these
    def sized(key: tuple, batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        yield pd.DataFrame({"n": [sum(len(b) for b in batches)]})

    declared = sp.lineage("map", backward=lambda i, meta: range(meta["input_rows"]))(sized)
    assert inspect.getfullargspec(declared).args == ["key", "batches"]
    assert inspect.signature(declared).return_annotation == Iterator[pd.DataFrame]
    assert declared.__name__ == "sized"
    assert declaration_of(declared).describe().endswith("<locals>.sized (a backward mapping over positions)")
    assert declaration_of(sized) is None


def _tracer(mode: str, sides: int = 1, **kwargs) -> Tracer:
    def f(pdf):
        return pdf

    return Tracer(declaration_of(sp.lineage(mode, **kwargs)(f)), "partition 3", sides=sides)


def _ids(arrays) -> list:
    # per side and id column, per output row: the ids, as Python lists
    return [python_lists(a) for a in arrays]


def test_positions_become_the_ids_of_the_rows_received():
    t = _tracer("full", column="inputs")
    t.receive(0, np.array([100, 101]))
    assert _ids(t.lineage(2, [[[1, 0], None]])) == [[[101, 100], []]]
    t.receive(0, np.array([102]))
    assert _ids(t.lineage(1, [[np.int64(2)]])) == [[[102]]]  # positions count across batches
    t.finish()
    both = _tracer("map", sides=2, backward=lambda i, meta: ([0], range(meta["input_rows"][1])))
    both.receive(0, np.array([7]))
    both.receive(1, np.array([8, 9]))
    assert _ids(both.lineage(1)) == [[[7]], [[8, 9]]]


@pytest.mark.parametrize(
    ("tracer", "reported", "message"),
    [
        (
            _tracer("full", column="i"),
            [[[2]]],
            "output row 0 of partition 3: it names input position 2, but the function had received 2 rows",
        ),
        (_tracer("full", column="i"), [[-1]], "input position -1"),
        (_tracer("full", column="i"), [["a"]], "its input positions are not integers"),
        (_tracer("full", column="i"), [[1.5]], "its input positions are not integers"),
        (_tracer("map", backward=lambda i, m: 1 // 0), None, "its backward mapping raised ZeroDivisionError"),
        (_tracer("map", backward=lambda i, m: [i + 5]), None, "input position 5"),
    ],
)
def test_wrong_positions_name_the_function_and_row(tracer, reported, message):
    tracer.receive(0, np.array([10, 11]))
    with pytest.raises(sp.LineageDeclarationWrong, match=r"function '.*\.f' \((full|map) lineage\).*" + message):
        tracer.lineage(1, reported)


def test_payloads_are_read_by_map_p_and_composite_maps_the_rest():
    spans = _tracer("payload", column="p", map_p=lambda i, p, m: range(p[0], p[1]))
    spans.receive(0, np.array([10, 11, 12]))
    assert _ids(spans.lineage(2, [[(0, 2), (2, 3)]])) == [[[10, 11], [12]]]
    mixed = _tracer("composite", column="p", backward=lambda i, m: [i], map_p=lambda i, p, m: range(i - p, i + p + 1))
    mixed.receive(0, np.arange(100, 105))
    # no payload (None, or NaN where pandas made the column float): the mapping
    assert _ids(mixed.lineage(4, [[None, float("nan"), 1, None]])) == [[[100], [101], [101, 102, 103], [103]]]
    wrong = _tracer("payload", column="p", map_p=lambda i, p, m: [int(p)])
    wrong.receive(0, np.arange(2))
    with pytest.raises(
        sp.LineageDeclarationWrong, match=r"output row 0 .* its map_p \(on payload 'x'\) raised ValueError"
    ):
        wrong.lineage(1, [["x"]])
    pair = _tracer("payload", sides=2, column="p", map_p=lambda i, p, m: [p])
    pair.receive(0, np.arange(2))
    pair.receive(1, np.arange(2))
    with pytest.raises(sp.LineageDeclarationWrong, match=r"map_p \(on payload 1\) must give \(left, right\)"):
        pair.lineage(1, [[1]])


def test_rowwise_ids_are_the_input_rows_ids_as_they_came():
    t = Tracer(declaration_of(sp.lineage("rowwise")(lambda pdf: pdf)), "partition 3", widths=(2,))
    t.receive(0, np.array([[10, 20], [11, -1], [12, 22]]))
    assert [a.tolist() for a in t.rowwise(2)] == [[10, 11], [20, -1]]  # -1: no row (an outer join's missing side)
    with pytest.raises(sp.LineageDeclarationWrong, match="output row 3 of partition 3: it names input position 3"):
        t.rowwise(2)


def test_checks_made_when_the_call_ends():
    rows = _tracer("rowwise")
    rows.receive(0, np.array([1, 2, 3]))
    rows.lineage(2)
    with pytest.raises(sp.LineageDeclarationWrong, match="made 2 rows of 3 input rows in partition 3"):
        rows.finish()
    halves = _tracer("map", backward=lambda i, m: [2 * i, 2 * i + 1], forward=lambda j, m: [j // 2 + 1])
    halves.receive(0, np.arange(4))
    assert _ids(halves.lineage(2)) == [[[0, 1], [2, 3]]]
    wrong = r"input row 0 of partition 3: its forward mapping gives \[1\] where backward gives \[0\]"
    with pytest.raises(sp.LineageDeclarationWrong, match=wrong):
        halves.finish()
    exact = _tracer("map", backward=lambda i, m: [2 * i, 2 * i + 1], forward=lambda j, m: [j // 2])
    exact.receive(0, np.arange(4))
    exact.lineage(2)
    exact.finish()


def test_vectorized_mappings_are_called_once_per_batch():
    calls = []

    def shifted(rows, meta):
        calls.append(rows.tolist())
        return rows + 1

    t = _tracer("map", backward=shifted, vectorized=True)
    t.receive(0, np.array([10, 11, 12, 13]))
    assert _ids(t.lineage(2)) == [[[11], [12]]]
    assert _ids(t.lineage(1)) == [[[13]]]
    assert calls == [[0, 1], [2]]  # positions count across batches
    # a sequence per row: several positions, or none
    spans = _tracer("map", backward=lambda rows, m: [range(r + 1) for r in rows], vectorized=True)
    spans.receive(0, np.array([7, 8]))
    assert _ids(spans.lineage(2)) == [[[7], [7, 8]]]
    # cogroup: (left, right), each per row
    both = _tracer("map", sides=2, backward=lambda rows, m: (rows, [[0, 1]] * len(rows)), vectorized=True)
    both.receive(0, np.array([5, 6]))
    both.receive(1, np.array([8, 9]))
    assert _ids(both.lineage(2)) == [[[5], [6]], [[8, 9], [8, 9]]]
    # forward, once over every input row, checked against backward
    halves = _tracer("map", backward=lambda r, m: r // 2, forward=lambda r, m: [[2 * i, 2 * i + 1] for i in r],
                     vectorized=True)  # fmt: skip
    halves.receive(0, np.array([3, 4]))
    assert _ids(halves.lineage(4)) == [[[3], [3], [4], [4]]]
    halves.finish()


@pytest.mark.parametrize(
    ("backward", "message"),
    [
        (lambda r, m: r + 1, "output row 2 of partition 3: it names input position 3, but the function had received 3"),
        (lambda r, m: r[:1], "vectorized backward mapping must give the positions of each of the 3 rows"),
        (lambda r, m: 1 // 0, "output row 0 of partition 3: its vectorized backward mapping raised ZeroDivisionError"),
        (lambda r, m: [[0], "x", [1]], "output row 1 of partition 3: its input positions are not integers"),
    ],
)
def test_wrong_vectorized_mappings_name_the_row(backward, message):
    t = _tracer("map", backward=backward, vectorized=True)
    t.receive(0, np.array([1, 2, 3]))
    with pytest.raises(sp.LineageDeclarationWrong, match=message):
        t.lineage(3)


def test_vectorized_payloads_are_mapped_once_per_batch():
    calls = []

    def spans(rows, payloads, meta):  # a payload per row: the (start, end) of its inputs
        calls.append((rows.tolist(), [tuple(p) for p in payloads]))
        return [range(*p) for p in payloads]

    t = _tracer("payload", column="p", map_p=spans, vectorized=True)
    t.receive(0, np.array([10, 11, 12]))
    assert _ids(t.lineage(2, [np.array([[0, 2], [2, 3]])])) == [[[10, 11], [12]]]
    assert _ids(t.lineage(1, [[(1, 1)]])) == [[[]]]  # payloads as Python values (a UDTF's row): the same
    assert calls == [([0, 1], [(0, 2), (2, 3)]), ([2], [(1, 1)])]
    # one position per row, as an array: no per-row work
    first = _tracer("payload", column="p", map_p=lambda rows, p, m: p.astype(np.int64), vectorized=True)
    first.receive(0, np.array([4, 5]))
    assert _ids(first.lineage(3, [np.array([1.0, 0.0, 1.0])])) == [[[5], [4], [5]]]


def test_vectorized_composite_maps_the_rows_without_a_payload_and_pays_the_others():
    calls = []

    def mapped(rows, meta):
        calls.append(("backward", rows.tolist()))
        return rows

    def paid(rows, payloads, meta):
        calls.append(("map_p", rows.tolist(), list(payloads)))
        return [list(range(p)) for p in payloads]

    t = _tracer("composite", column="p", backward=mapped, map_p=paid, vectorized=True)
    t.receive(0, np.array([10, 11, 12, 13]))
    payloads = pd.Series([None, 2, None, 3], dtype=object).to_numpy()
    assert _ids(t.lineage(4, [payloads])) == [[[10], [10, 11], [12], [10, 11, 12]]]
    assert calls == [("backward", [0, 2]), ("map_p", [1, 3], [2, 3])]
    # NaN is no payload; one position each on both sides stays one array
    calls.clear()
    t = _tracer("composite", column="p", backward=mapped, map_p=lambda r, p, m: p.astype(np.int64), vectorized=True)
    t.receive(0, np.array([10, 11, 12]))
    assert _ids(t.lineage(3, [np.array([np.nan, 0.0, np.nan])])) == [[[10], [10], [12]]]
    assert calls == [("backward", [0, 2])]
    calls.clear()  # NaT too
    t = _tracer("composite", column="p", backward=mapped, map_p=lambda r, p, m: r - 1, vectorized=True)
    t.receive(0, np.array([10, 11]))
    assert _ids(t.lineage(2, [np.array(["NaT", "2026-11-28"], "datetime64[D]")])) == [[[10], [10]]]
    assert calls == [("backward", [0])]
    wrong = _tracer("composite", column="p", backward=mapped, map_p=lambda r, p, m: r + 5, vectorized=True)
    wrong.receive(0, np.array([10, 11, 12]))
    with pytest.raises(sp.LineageDeclarationWrong, match="output row 1 of partition 3: it names input position 6"):
        wrong.lineage(2, [np.array([np.nan, 1.0])])
    raising = _tracer("payload", column="p", map_p=lambda r, p, m: 1 // 0, vectorized=True)
    raising.receive(0, np.array([10]))
    with pytest.raises(sp.LineageDeclarationWrong, match="output row 0 of partition 3: its vectorized map_p raised"):
        raising.lineage(1, [np.array([1])])


def test_a_vectorized_forward_that_differs_is_caught():
    t = _tracer("map", backward=lambda r, m: r, forward=lambda r, m: r[::-1], vectorized=True)
    t.receive(0, np.array([1, 2]))
    t.lineage(2)
    with pytest.raises(sp.LineageDeclarationWrong, match=r"input row 0 .* forward mapping gives \[1\] where backward"):
        t.finish()


def test_the_workers_error_is_found_in_what_spark_reports():
    text = (
        "PythonException: ...\n"
        "sparkprov.errors.LineageDeclarationWrong: function 'f' (full lineage), output row 2\n SQLSTATE: 38000"
    )
    found = declaration_error(RuntimeError(text))
    assert isinstance(found, sp.LineageDeclarationWrong)
    assert str(found) == "function 'f' (full lineage), output row 2"
    assert declaration_error(RuntimeError("something else")) is None


def test_a_udtf_class_declared_drops_what_it_reports_without_capture():
    from pyspark.sql import Row

    class Split:
        def eval(self, text: str):
            for i, w in enumerate(text.split()):
                yield (w, i) if i % 2 else Row(word=w, inputs=[0])

        def terminate(self):
            yield "end", [0]

    declared = sp.lineage("full", column="inputs")(Split)
    assert declaration_of(declared).mode == "full" and declaration_of(declared).function is Split
    handler = declared()
    assert list(handler.eval("a b c")) == [("a",), ("b",), ("c",)] and list(handler.terminate()) == [("end",)]
    assert sp.lineage("rowwise")(Split)().eval is not None  # nothing reported: its rows as they are

    class NoEval:
        pass

    with pytest.raises(sp.InvalidArgument, match="'.*NoEval' is a class without eval"):
        sp.lineage("rowwise")(NoEval)
