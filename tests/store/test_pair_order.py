import numpy as np
import pyarrow as pa
import pytest

from sparkprov.store.pair_order import ordered_pairs


def _expected(outs, ins, distinct):
    pairs = list(zip(outs, ins))
    return sorted(set(pairs)) if distinct else sorted(pairs)


@pytest.mark.parametrize("distinct", [True, False])
@pytest.mark.parametrize(
    ("out_span", "in_span"),
    [
        (10, 50),  # small: packed
        (3, 1 << 45),  # source rids of files numbered far apart, few output rows: packed
        (1 << 30, 1 << 40),  # both wide: Arrow's sort
    ],
)
def test_pairs_come_sorted_and_once_as_asked(out_span, in_span, distinct):
    rng = np.random.default_rng(7)
    outs = rng.integers(-2, out_span, 5_000).tolist()
    ins = rng.integers(-(1 << 20), in_span, 5_000).tolist()
    # repeats, as many paths through a plan give
    outs, ins = outs + outs[:1_000], ins + ins[:1_000]
    table = pa.table({"out_rid": pa.array(outs, pa.int32() if out_span < 1 << 31 else pa.int64()), "in_rid": ins})
    found = ordered_pairs(table, distinct)
    assert found.schema.types == [pa.int64(), pa.int64()]
    assert list(zip(found.column("out_rid").to_pylist(), found.column("in_rid").to_pylist())) == _expected(
        outs, ins, distinct
    )


def test_extreme_rids_and_nulls_keep_their_values():
    low, high = -(1 << 63), (1 << 63) - 1
    table = pa.table({"out_rid": [1, 0, 1, 1, None], "in_rid": [high, low, high, 5, 2]})
    found = ordered_pairs(table, distinct=True)
    # a NULL last, as Arrow places it
    assert found.to_pydict() == {"out_rid": [0, 1, 1, None], "in_rid": [low, 5, high, 2]}


def test_a_sorted_table_and_an_empty_one():
    table = pa.table({"out_rid": [0, 0, 2], "in_rid": [1, 1, 0]})
    assert ordered_pairs(table, distinct=False).to_pydict() == {"out_rid": [0, 0, 2], "in_rid": [1, 1, 0]}
    assert ordered_pairs(table.slice(0, 0), distinct=True).num_rows == 0
