import itertools

import numpy as np
import pytest

from sparkprov.arrays.cells import Box, Shape, box_union, distinct, distinct_in, member
from sparkprov.errors import InvalidArgument


def _every_cell(dims):
    return list(itertools.product(*[range(d) for d in dims]))


def _random_shape(rng) -> tuple[int, tuple[int, ...]]:
    k = int(rng.integers(1, 4))
    return k, tuple(int(d) for d in rng.integers(1, 7, k))


@pytest.mark.parametrize("seed", range(4))
def test_a_box_names_every_cell_inside_it_in_order(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        k, dims = _random_shape(rng)
        lo = tuple(int(v) for v in rng.integers(-2, 7, k))
        hi = tuple(int(v) for v in rng.integers(-2, 8, k))
        inside = [c for c in _every_cell(dims) if all(a <= v <= b for v, a, b in zip(c, lo, hi))]
        want = [int(np.ravel_multi_index(c, dims)) for c in inside]
        assert Box(lo, hi).ids(Shape(dims)).tolist() == sorted(want)


@pytest.mark.parametrize("seed", range(3))
def test_a_union_of_boxes_names_every_cell_of_any_of_them_once_in_order(seed):
    # boxes that overlap, touch, lie outside the array or are empty (lo above hi)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        k, dims = _random_shape(rng)
        n = int(rng.integers(0, 6))
        lo = rng.integers(-2, 7, (n, k))
        hi = lo + rng.integers(-1, 4, (n, k))
        inside = {
            int(np.ravel_multi_index(c, dims))
            for c in _every_cell(dims)
            for a, b in zip(lo, hi)
            if all(x <= v <= y for v, x, y in zip(c, a, b))
        }
        assert box_union(Shape(dims), lo, hi).tolist() == sorted(inside)


def test_distinct_ids_by_mask_or_by_sorting_agree():
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 100, 5000):  # from few ids (sorted) to many (a mask)
        ids = rng.integers(0, 1000, n)
        assert distinct_in(ids, 1000).tolist() == sorted(set(ids.tolist()))
        assert distinct(ids).tolist() == sorted(set(ids.tolist()))


def test_distinct_ids_from_sorted_runs_with_repeats():
    # a query step's union: a few sorted parts, overlapping (merged), or one sorted
    # part with repeats (no descent at all)
    rng = np.random.default_rng(2)
    for runs in (1, 2, 3, 40):
        parts = [np.sort(rng.integers(0, 3000, int(rng.integers(0, 400)))) for _ in range(runs)]
        ids = np.concatenate(parts)
        assert distinct(ids).tolist() == sorted(set(ids.tolist()))
    assert distinct([1, 1, 2, 3, 3]).tolist() == [1, 2, 3]
    assert distinct([1, 2, 5]).tolist() == [1, 2, 5]


def test_coordinates_to_ids_and_back():
    shape = Shape((3, 4, 5))
    coords = np.array(_every_cell(shape.dims))
    ids = shape.ids(coords)
    assert ids.tolist() == list(range(shape.size))
    assert shape.coordinates(ids).tolist() == coords.tolist()
    with pytest.raises(InvalidArgument, match=r"cell \(3, 0, 0\) is outside"):
        shape.ids([(3, 0, 0)])


def test_membership_in_sorted_keys():
    rng = np.random.default_rng(1)
    keys = distinct(rng.integers(0, 50, 20))
    ids = rng.integers(-5, 60, 200)
    assert member(ids, keys).tolist() == np.isin(ids, keys).tolist()
    assert member(ids, keys[:0]).tolist() == [False] * 200
