"""A region log expanded to cell pairs, with and without the cells a query names,
against a plain Python expansion."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkprov.arrays.regions import RegionLog
from sparkprov.errors import InvalidArgument

cells = st.lists(st.integers(0, 30), max_size=5)


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(cells, cells), max_size=8), outs=cells, ins=cells)
def test_cell_pairs_are_every_pair_of_every_region(pairs, outs, ins):
    log = RegionLog()
    for o, i in pairs:
        log.write(o, i)
    every = sorted({(a, b) for o, i in pairs for a in o for b in i})
    assert list(zip(*[x.tolist() for x in log.cell_pairs()])) == every
    by_out = log.cell_pairs(outs=sorted(set(outs)))
    assert list(zip(*[x.tolist() for x in by_out])) == [p for p in every if p[0] in outs]
    by_in = log.cell_pairs(ins=sorted(set(ins)))
    assert list(zip(*[x.tolist() for x in by_in])) == [p for p in every if p[1] in ins]


@settings(max_examples=30, deadline=None)
@given(pairs=st.lists(st.tuples(cells, st.integers(0, 3)), max_size=6), outs=cells)
def test_payload_pairs_go_through_the_payload_function(pairs, outs):
    log = RegionLog()
    for o, k in pairs:
        log.write_payload(o, bytes([k]))

    def map_p(cell, payload):
        return [cell + d for d in range(payload[0])]

    every = sorted({(a, a + d) for o, k in pairs for a in o for d in range(k)})
    assert list(zip(*[x.tolist() for x in log.cell_pairs(map_p)])) == every
    by_out = log.cell_pairs(map_p, outs=sorted(set(outs)))
    assert list(zip(*[x.tolist() for x in by_out])) == [p for p in every if p[0] in outs]


@settings(max_examples=30, deadline=None)
@given(pairs=st.lists(st.tuples(cells, st.integers(0, 3)), max_size=6))
def test_payload_pairs_written_at_once_are_those_written_one_by_one(pairs):
    one, many = RegionLog(), RegionLog()
    for o, k in pairs:
        one.write_payload(o, bytes([k]))
    many.write_payloads([o for o, _ in pairs], [bytes([k]) for _, k in pairs])
    assert [x.tolist() for x in many.out_cells()] == [x.tolist() for x in one.out_cells()]
    assert many.payloads == one.payloads


def test_payloads_written_at_once_are_checked():
    with pytest.raises(InvalidArgument, match="2 sets of output cells but 1 payloads"):
        RegionLog().write_payloads([[1], [2]], [b"a"])
    with pytest.raises(InvalidArgument, match="a payload is bytes, not str"):
        RegionLog().write_payloads([[1]], ["a"])
