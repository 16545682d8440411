"""Every encoding answers what the log it stored says: random region and payload logs,
random query cells, each answer equal to the one computed from the log's cell pairs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkprov as sp
from sparkprov.arrays.cells import Box, Shape, as_mask, cell_ids, distinct
from sparkprov.arrays.encodings import ENCODINGS, FullMany, PayOne, Ranges, folder_bytes
from sparkprov.arrays.regions import RegionLog

SHAPE = Shape((6, 7))


def neighbours(cell: int, payload: bytes) -> list[int]:
    """A payload function: the cells within a radius (the payload) of ``cell``."""
    radius = int(payload.decode())
    r, c = divmod(cell, SHAPE.dims[1])
    box = Box((r - radius, c - radius), (r + radius, c + radius))
    return box.ids(SHAPE).tolist()


regions = st.lists(
    st.tuples(
        st.lists(st.integers(0, SHAPE.size - 1), min_size=0, max_size=6),
        st.lists(st.integers(0, SHAPE.size - 1), min_size=0, max_size=6),
    ),
    max_size=12,
)
payloads = st.lists(
    st.tuples(st.lists(st.integers(0, SHAPE.size - 1), min_size=1, max_size=5), st.integers(0, 2)), max_size=10
)
queries = st.lists(st.integers(0, SHAPE.size - 1), max_size=15)


def brute(out: np.ndarray, inp: np.ndarray, cells: list[int], backward: bool) -> list[int]:
    wanted = set(cells)
    return sorted({int(b) for a, b in (zip(out, inp) if backward else zip(inp, out)) if a in wanted})


@settings(max_examples=25, deadline=None)
@given(pairs=regions, query=queries)
def test_region_encodings_answer_what_the_log_says(tmp_path_factory, pairs, query):
    log = RegionLog()
    for outcells, incells in pairs:
        log.write(outcells, incells)
    out, inp = log.cell_pairs()
    folder = tmp_path_factory.mktemp("enc")
    for name, make in ENCODINGS.items():
        enc = make()
        if enc.mode == "payload":
            continue
        stored = enc.build(log, folder / name, SHAPE, SHAPE)
        assert stored.backward(query).tolist() == brute(out, inp, query, True), name
        assert stored.forward(query).tolist() == brute(out, inp, query, False), name
        reopened = enc.open(folder / name)  # the answers come from the files
        assert reopened.backward(query).tolist() == brute(out, inp, query, True), name


@settings(max_examples=25, deadline=None)
@given(pairs=payloads, query=queries)
def test_payload_encodings_answer_what_the_payload_function_says(tmp_path_factory, pairs, query):
    log = RegionLog()
    for outcells, radius in pairs:
        log.write_payload(outcells, str(radius).encode())
    out, inp = log.cell_pairs(neighbours)
    folder = tmp_path_factory.mktemp("pay")
    for name in ("PayOne←", "PayMany←", "Ranges", "CellPairs"):
        stored = ENCODINGS[name]().build(log, folder / name, SHAPE, SHAPE, map_p=neighbours)
        assert stored.backward(query).tolist() == brute(out, inp, query, True), name
        assert stored.forward(query).tolist() == brute(out, inp, query, False), name
        if name in ("PayOne←", "PayMany←"):  # a composite step's split: stored cells, their inputs
            cells = distinct(query)
            kept, found = stored.split(cells)
            assert cells[kept].tolist() == sorted(set(out.tolist()) & set(query)), name
            assert found.tolist() == brute(out, inp, cells[kept].tolist(), True), name


def test_queries_name_cells_by_coordinates_boxes_and_masks():
    assert cell_ids(SHAPE, [(0, 0), (5, 6), (0, 0)]).tolist() == [0, 41]
    assert cell_ids(SHAPE, Box((4, 5), (9, 9))).tolist() == [33, 34, 40, 41]  # clipped to the array
    mask = np.zeros(SHAPE.dims, dtype=bool)
    mask[1, 2] = True
    assert cell_ids(SHAPE, mask).tolist() == [9]
    assert as_mask(np.array([1, 3]), 4).tolist() == [False, True, False, True]
    with pytest.raises(sp.InvalidArgument, match=r"cell \(6, 0\) is outside an array of shape \(6, 7\)"):
        cell_ids(SHAPE, [(6, 0)])
    with pytest.raises(sp.InvalidArgument, match="positive sizes"):
        Shape((3, 0))
    values = np.arange(SHAPE.size).reshape(SHAPE.dims)
    assert cell_ids(SHAPE, lambda v: (v % 20 == 0) & (v > 0), values).tolist() == [20, 40]
    for predicate, message in [
        (lambda v: v + 1, "must give a boolean mask of the array's shape, not int64"),
        (lambda v: v.ravel() > 3, r"a mask of shape \(42,\) over an array of shape \(6, 7\)"),
        (lambda v: v.nope, "the predicate raised AttributeError"),
    ]:
        with pytest.raises(sp.InvalidArgument, match=message):
            cell_ids(SHAPE, predicate, values)


def test_misused_encodings_say_why(tmp_path):
    with pytest.raises(sp.InvalidArgument, match="backward only"):
        PayOne("forward")
    with pytest.raises(sp.InvalidArgument, match="backward- or forward-optimized"):
        FullMany("sideways")
    log = RegionLog()
    log.write([1], [2])
    with pytest.raises(sp.InvalidArgument, match="stores payload pairs; the log holds region pairs"):
        PayOne().build(log, tmp_path / "p", SHAPE, SHAPE)
    with pytest.raises(sp.InvalidArgument, match="cannot take payload pairs too"):
        log.write_payload([1], b"1")
    paid = RegionLog()
    paid.write_payload([1], b"1")
    with pytest.raises(sp.InvalidArgument, match="needs the payload function"):
        PayOne().build(paid, tmp_path / "q", SHAPE, SHAPE)


def test_offsets_make_few_runs(tmp_path):
    # a one-to-one operator over the whole array: one run, whatever the size
    big = Shape((300, 400))
    log = RegionLog()
    ids = np.arange(big.size)
    log.write_many(ids.reshape(-1, 1), ids.reshape(-1, 1))
    stored = Ranges().build(log, tmp_path / "r", big, big)
    assert stored.backward([5, 70_000]).tolist() == [5, 70_000]
    assert len(stored.groups) == 1 and len(stored.groups[0][1]) == 1
    assert folder_bytes(tmp_path / "r") < 5_000


def test_a_payload_scan_that_would_miss_its_deadline_gives_up_early(tmp_path):
    import time

    from sparkprov.arrays.payload_scans import OverBudget

    big = Shape((40, 50))
    log = RegionLog()
    for cell in range(big.size):  # one payload per cell: nothing to group
        log.write_payload([cell], str(cell).encode())

    def slow(cell, payload):  # about 1 ms a cell: 2 s for the whole scan
        time.sleep(0.001)
        return [int(payload)]

    stored = ENCODINGS["PayOne←"]().build(log, tmp_path / "p", big, big, map_p=slow)
    started = time.perf_counter()
    with pytest.raises(OverBudget):
        stored.forward([3], deadline=started + 0.5)
    # the rate of its first cells says it cannot end in time: it stops there, not at 0.5 s
    assert time.perf_counter() - started < 0.35
    assert stored.forward([3, 7], deadline=time.perf_counter() + 60).tolist() == [3, 7]
