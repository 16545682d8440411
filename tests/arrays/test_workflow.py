"""Array workflows: every strategy an operator supports, in any mix, answers backward
and forward queries through the workflow as the operators' lineage, expanded cell by
cell, says; the query-time switch and the entire-array shortcut keep the answers."""

from __future__ import annotations

import random

import numpy as np
import pytest

import sparkprov as sp
from sparkprov.arrays.cells import Box, Shape
from sparkprov.arrays.operators import ArrayOperator, Elementwise, LineageWriter, Transpose, neighbourhood
from sparkprov.arrays.workflow import ArrayWorkflow, valid_strategies


class Shift(ArrayOperator):
    """Each cell takes its left neighbour's value (the first column: its own)."""

    modes = ("map",)

    def run(self, arrays, writer):
        a = arrays[0]
        return np.concatenate([a[:, :1], a[:, :-1]], axis=1)

    def map_b(self, cells, i, shapes):
        r, c = np.unravel_index(cells, shapes[0].dims)
        return np.unique(np.ravel_multi_index((r, np.maximum(c - 1, 0)), shapes[0].dims))

    def map_f(self, cells, i, shapes):
        r, c = np.unravel_index(cells, shapes[0].dims)
        right = c + 1 < shapes[0].dims[1]
        firsts = np.ravel_multi_index((r[c == 0], c[c == 0]), shapes[0].dims)
        nexts = np.ravel_multi_index((r[right], c[right] + 1), shapes[0].dims)
        return np.unique(np.concatenate([firsts, nexts]))


class BrightRuns(ArrayOperator):
    """Labels runs of bright cells along each row: a run's cells depend on the whole
    run; other cells on themselves (full lineage, region pairs)."""

    modes = ("full", "payload")

    def run(self, arrays, writer):
        a = arrays[0]
        bright = a > 0.6
        out = np.zeros(a.shape)
        for r in range(a.shape[0]):
            c = 0
            while c < a.shape[1]:
                end = c + 1
                if bright[r, c]:
                    while end < a.shape[1] and bright[r, end]:
                        end += 1
                cells = np.ravel_multi_index((np.full(end - c, r), np.arange(c, end)), a.shape)
                out[r, c:end] = a[r, c:end].sum() if bright[r, c] else 0
                if writer is not None and writer.mode == "full":
                    writer.write(cells, cells)
                elif writer is not None:
                    for cell in cells:
                        writer.write_payload([cell], np.array([cells[0], cells[-1]], np.int64).tobytes())
                c = end
        return out

    def map_p(self, cell, payload, i):
        lo, hi = np.frombuffer(payload, np.int64)
        return np.arange(lo, hi + 1)


class Blur(ArrayOperator):
    """Each cell: the mean of its neighbourhood, whose radius (0 to 2) its value picks
    (payload lineage: the radius)."""

    modes = ("payload",)

    def run(self, arrays, writer):
        a = arrays[0]
        shape = Shape(a.shape)
        out = np.zeros(a.shape)
        for cell in range(shape.size):
            radius = int(a.flat[cell] * 3) % 3
            out.flat[cell] = a.flat[neighbourhood(np.array([cell]), shape, radius)].mean()
            if writer is not None:
                writer.write_payload([cell], bytes([radius]))
        self._shape = shape
        return out

    def map_p(self, cell, payload, i):
        return neighbourhood(np.array([cell]), self._shape, payload[0])


class CosmicRays(ArrayOperator):
    """A cell above 0.9 is a cosmic ray and depends on its radius-1 neighbourhood;
    every other cell on itself (composite: a mapping, payloads for the rays)."""

    modes = ("payload", "composite")

    def run(self, arrays, writer):
        a = arrays[0]
        self._shape = Shape(a.shape)
        rays = np.flatnonzero(a.ravel() > 0.9)
        if writer is not None:
            for cell in rays if writer.mode == "composite" else range(a.size):
                writer.write_payload([cell], b"1" if a.flat[cell] > 0.9 else b"0")
        out = a.copy()
        out.flat[rays] = 0
        return out

    def map_b(self, cells, i, shapes):
        return np.unique(cells)

    def map_f(self, cells, i, shapes):
        return np.unique(cells)

    def map_p(self, cell, payload, i):
        return neighbourhood(np.array([cell]), self._shape, int(payload))


class AddBoth(ArrayOperator):
    """Two inputs added cell by cell (full lineage over two inputs)."""

    modes = ("full",)

    def run(self, arrays, writer):
        if writer is not None:
            cells = np.arange(arrays[0].size).reshape(-1, 1)
            writer.write_many(cells, cells, cells)
        return arrays[0] + arrays[1]


def workflow() -> ArrayWorkflow:
    wf = ArrayWorkflow()
    wf.add("rays", CosmicRays(), ["image"])
    wf.add("runs", BrightRuns(), ["rays"])
    wf.add("shifted", Shift(), ["image"])
    wf.add("blur", Blur(), ["shifted"])
    wf.add("sum", AddBoth(), ["runs", "blur"])
    wf.add("flip", Transpose(), ["sum"])
    return wf


def cell_pairs(run, name: str, i: int) -> set[tuple[int, int]]:
    """The reference: an operator's lineage into input ``i``, cell by cell."""
    node = run.workflow.nodes[name]
    op, shapes = node.op, [run.shape(s) for s in node.inputs]
    size = run.shape(name).size
    if op.modes == ("map",):
        return {(o, int(x)) for o in range(size) for x in op.map_b(np.array([o]), i, shapes)}
    mode = "full" if "full" in op.modes else "payload"
    writer = LineageWriter(mode, len(node.inputs))
    op.run([run.arrays[s] for s in node.inputs], writer)
    out, inp = writer.logs[i if mode == "full" else 0].cell_pairs(lambda c, p: op.map_p(c, p, i))
    return set(zip(out.tolist(), inp.tolist()))


def brute_backward(run, cells: set[int], start: str, target: str) -> list[int]:
    found = {start: set(cells)}
    for name in reversed(run.order):
        here = found.pop(name, set()) if name != target else set()
        for i, source in enumerate(run.workflow.nodes[name].inputs):
            reached = {x for o, x in cell_pairs(run, name, i) if o in here}
            found.setdefault(source, set()).update(reached)
    return sorted(found.get(target, set()))


def brute_forward(run, cells: set[int], start: str, target: str) -> list[int]:
    found = {start: set(cells)}
    for name in run.order:
        for i, source in enumerate(run.workflow.nodes[name].inputs):
            there = found.get(source, set())
            found.setdefault(name, set()).update(o for o, x in cell_pairs(run, name, i) if x in there)
    return sorted(found.get(target, set()))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_any_mix_of_strategies_answers_as_the_operators_say(tmp_path, seed):
    rng = random.Random(seed)
    image = np.random.default_rng(seed).random((5, 6))
    wf = workflow()
    chosen = {n: rng.sample(valid_strategies(node.op), rng.randint(1, 2)) for n, node in wf.nodes.items()}
    run = wf.run({"image": image}, tmp_path, chosen)
    reference = wf.run({"image": image}, tmp_path / "ref")
    np.testing.assert_allclose(run.arrays["flip"], reference.arrays["flip"])  # lineage changes no value
    for start, target in [("flip", "image"), ("sum", "rays"), ("blur", "image"), ("flip", "shifted")]:
        cells = set(rng.sample(range(run.shape(start).size), 4))
        got = run.backward(run.shape(start).coordinates(np.array(sorted(cells))), start, target)
        assert got.tolist() == brute_backward(run, cells, start, target), (chosen, start, target)
    for start, target in [("image", "flip"), ("rays", "sum"), ("image", "blur")]:
        cells = set(rng.sample(range(run.shape(start).size), 4))
        got = run.forward(run.shape(start).coordinates(np.array(sorted(cells))), start, target)
        assert got.tolist() == brute_forward(run, cells, start, target), (chosen, start, target)


def test_query_steps_say_how_they_were_answered(tmp_path):
    image = np.random.default_rng(5).random((5, 6))
    run = workflow().run({"image": image}, tmp_path, {"rays": ["CompOne←"], "runs": ["FullOne→"], "blur": ["PayMany←"]})
    stats = []
    got = run.backward(Box((0, 0), (5, 4)), "flip", "image", stats=stats)
    assert got.tolist() == brute_backward(
        run, set(Box((0, 0), (5, 4)).ids(run.shape("flip")).tolist()), "flip", "image"
    )
    methods = {s.node: s.method for s in stats}
    # a stored read may hand over to the black box if it runs long (a loaded machine)
    assert methods["flip"] == "Map" and methods["rays"] == "CompOne←" and methods["blur"].startswith("PayMany←")
    assert methods["sum"] == "BlackBox" and methods["runs"] in ("FullOne→", "FullOne→, then BlackBox (switched)")
    # reading lineage indexed the other way stops once it costs more than running the operator
    run.trace_seconds["runs"] = 0.0
    import sparkprov.arrays.workflow as W

    chunk, W.CHUNK = W.CHUNK, 2
    try:
        stats = []
        again = run.backward(Box((0, 0), (5, 4)), "flip", "image", stats=stats)
    finally:
        W.CHUNK = chunk
    assert again.tolist() == got.tolist()
    assert {s.node: s.method for s in stats}["runs"] == "FullOne→, then BlackBox (switched)"


def test_cells_named_by_a_predicate_over_the_arrays_values(tmp_path):
    image = np.random.default_rng(2).random((5, 6))
    run = workflow().run({"image": image}, tmp_path, {"runs": ["FullOne←"]})
    bright = run.arrays["flip"] > 0.7
    assert bright.any() and not bright.all()
    assert run.backward(lambda v: v > 0.7, "flip", "image").tolist() == run.backward(bright, "flip", "image").tolist()
    assert (
        run.forward(lambda v: v < 0.1, "image", "flip").tolist() == run.forward(image < 0.1, "image", "flip").tolist()
    )


def test_entire_array_shortcut_and_opaque_operators(tmp_path):
    class Invert(ArrayOperator):
        all_to_all = True  # a matrix inverse: every output cell depends on every input cell

        def run(self, arrays, writer):
            return np.linalg.inv(arrays[0])

    class Opaque(ArrayOperator):  # states nothing: all to all, as SubZero assumes
        def run(self, arrays, writer):
            return arrays[0] * 2

    wf = ArrayWorkflow()
    wf.add("inv", Invert(), ["m"])
    wf.add("twice", Opaque(), ["m"])
    run = wf.run({"m": np.eye(3) * 2}, tmp_path)
    stats = []
    assert run.backward([(0, 0)], "inv", "m", stats=stats).tolist() == list(range(9))
    assert stats[0].method == "entire array"
    assert run.forward([(1, 1)], "m", "twice").tolist() == list(range(9))


def test_bad_workflows_and_strategies_are_refused(tmp_path):
    wf = ArrayWorkflow()
    wf.add("t", Transpose(), ["image"])
    with pytest.raises(sp.InvalidArgument, match="already has an operator named 't'"):
        wf.add("t", Transpose(), ["image"])
    with pytest.raises(sp.InvalidArgument, match="does not support full lineage, which FullOne← stores"):
        wf.run({"image": np.zeros((2, 2))}, tmp_path, {"t": ["FullOne←"]})
    with pytest.raises(sp.InvalidArgument, match="unknown strategy 'Fast'"):
        wf.run({"image": np.zeros((2, 2))}, tmp_path, {"t": ["Fast"]})
    with pytest.raises(sp.InvalidArgument, match="strategies for operators the workflow does not have"):
        wf.run({"image": np.zeros((2, 2))}, tmp_path, {"u": ["Map"]})
    with pytest.raises(sp.InvalidArgument, match="reads 'image', which is neither an input nor an operator"):
        wf.run({"other": np.zeros((2, 2))}, tmp_path)
    run = wf.run({"image": np.zeros((2, 3))}, tmp_path)
    with pytest.raises(sp.InvalidArgument, match="'t' is not an ancestor of 'image'"):
        run.backward([(0, 0)], "image", "t")
    with pytest.raises(sp.InvalidArgument, match="does not support composite lineage, which CompOne← stores"):
        wf2 = ArrayWorkflow()
        wf2.add("b", Blur(), ["image"])
        wf2.run({"image": np.zeros((2, 2))}, tmp_path, {"b": ["CompOne←"]})
    assert Elementwise(np.negative, "neg").name == "neg"


def test_lineage_written_in_the_background_is_on_disk_when_the_run_returns(tmp_path, monkeypatch):
    image = np.random.default_rng(4).random((5, 6))
    run = workflow().run({"image": image}, tmp_path / "ok", {"runs": ["FullOne←"], "blur": ["PayMany←"]})
    assert run.stored["runs"].bytes > 0 and run.stored["blur"].bytes > 0
    assert (tmp_path / "ok" / "lineage" / "runs" / "FullOne←").is_dir()
    import sparkprov.arrays.workflow as W

    def broken(self, name, *args):  # a write that fails fails the run, whichever thread wrote it
        if name == "blur":
            raise OSError("disk full")
        return original(self, name, *args)

    original = W.WorkflowRun._store
    monkeypatch.setattr(W.WorkflowRun, "_store", broken)
    with pytest.raises(OSError, match="disk full"):
        workflow().run({"image": image}, tmp_path / "broken", {"runs": ["FullOne←"], "blur": ["PayMany←"]})
