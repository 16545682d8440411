"""A window side's ranges flattened by indices (store/window_ranges.py) against the
pairs each range names, position by position."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkprov.sources.identity import RID
from sparkprov.store import joined_pairs, window_ranges

STRUCTURE = {
    "output": [{"name": "w", "kind": "window", "ref": 0}, {"name": "v", "kind": "window", "ref": 0}],
    "sides": {"0": {"ranged": True, "path": "", "slots": [{"name": "s", "kind": "source", "ref": 0}]}},
}


def _case(tmp_path, seed: int, gap: bool = False):
    # partitions keyed by a struct with a NULL field in one, of 1 to 30 rows; each output
    # row two ranges, some reaching past their partition's ends, some on a key no side
    # row has, some empty
    rng = np.random.default_rng(seed)
    keys = [{"c": i, "d": None if i == 2 else f"k{i}"} for i in range(8)]
    sizes = rng.integers(1, 30, len(keys))
    side_rows = [(k, p, 1000 * i + p) for i, (k, n) in enumerate(zip(keys, sizes)) for p in range(1, n + 1)]
    if gap:  # positions 1, 3, 4, ... in one partition: not row numbers
        side_rows = [(k, p + (p > 1 and k["c"] == 0), s) for k, p, s in side_rows]
    order = rng.permutation(len(side_rows))
    side = pa.table(
        {
            "__sp_h": [side_rows[i][0] for i in order],
            "__sp_pos": [side_rows[i][1] for i in order],
            "s": [side_rows[i][2] for i in order],
        }
    )
    ranges, expected = {"w": [], "v": []}, set()
    positions = {(k["c"], p): s for k, p, s in side_rows}
    for out in range(40):
        for column in ranges:
            c = int(rng.integers(0, len(keys) + 1))  # len(keys): a key without rows
            lo, hi = sorted(int(x) for x in rng.integers(-2, 34, 2))
            if rng.random() < 0.1:
                lo, hi = hi + 1, hi  # empty
            key = {"c": c, "d": None if c == 2 else f"k{c}"}
            ranges[column].append({"h": key, "lo": lo, "hi": hi})
            expected |= {(out, positions[(c, p)]) for p in range(lo, hi + 1) if (c, p) in positions}
    (tmp_path / "out").mkdir()
    (tmp_path / "side").mkdir()
    pq.write_table(pa.table({RID: list(range(40)), **ranges}), tmp_path / "out" / "part-0.parquet")
    pq.write_table(side, tmp_path / "side" / "part-0.parquet")
    structure = {**STRUCTURE, "sides": {"0": {**STRUCTURE["sides"]["0"], "path": str(tmp_path / "side")}}}
    return structure, sorted(expected)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ranges_flatten_to_the_rows_they_name(tmp_path, monkeypatch, seed):
    structure, expected = _case(tmp_path, seed)
    taken = []

    def spy(*args):
        taken.append(window_ranges.flatten(*args))
        return taken[-1]

    monkeypatch.setattr(joined_pairs, "flatten", spy)
    found = joined_pairs.pairs_by_source(str(tmp_path / "out"), structure)
    assert taken == [True]
    assert [(p["out_rid"], p["in_rid"]) for p in found[0].to_pylist()] == expected


def test_positions_that_are_not_row_numbers_are_joined_instead(tmp_path):
    structure, expected = _case(tmp_path, 4, gap=True)
    found = joined_pairs.pairs_by_source(str(tmp_path / "out"), structure)
    assert [(p["out_rid"], p["in_rid"]) for p in found[0].to_pylist()] == expected


def test_sizes_weigh_the_arrays_side_rows_hold(tmp_path):
    # two partitions of rows holding arrays of rids; one output row reads rows 1..2 of
    # the first (3 + 1 rids), the other all of the second (2 rids)
    handle = pa.array([{"g": 1}, {"g": 1}, {"g": 1}, {"g": 2}])
    side = pa.table({"__sp_h": handle, "__sp_pos": [1, 2, 3, 1], "r": [[5, 6, 7], [8], None, [9, 10]]})
    (tmp_path / "side").mkdir()
    pq.write_table(side, tmp_path / "side" / "part-0.parquet")
    ranges = pa.array([{"h": {"g": 1}, "lo": 1, "hi": 2}, {"h": {"g": 2}, "lo": 1, "hi": 5}])
    (tmp_path / "out").mkdir()
    pq.write_table(pa.table({RID: [0, 1], "w": ranges}), tmp_path / "out" / "part-0.parquet")
    structure = {
        "output": [{"name": "w", "kind": "window", "ref": 0}],
        "sides": {
            "0": {"ranged": True, "path": str(tmp_path / "side"), "slots": [{"name": "r", "kind": "rids", "ref": 0}]}
        },
    }
    seen = []
    found = joined_pairs.pairs_by_source(str(tmp_path / "out"), structure, lambda k, sizes: seen.append(sizes) or True)
    assert seen == [window_ranges.RangeSizes(positions=3, ranges=2, rows=4, pairs=6, side_pairs=6)]
    assert found[0].to_pylist() == [
        {"out_rid": o, "in_rid": i} for o, i in [(0, 5), (0, 6), (0, 7), (0, 8), (1, 9), (1, 10)]
    ]
    declined = joined_pairs.pairs_by_source(str(tmp_path / "out"), structure, lambda k, sizes: False)
    assert declined is None
