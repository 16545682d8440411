import itertools

import numpy as np
import pytest

from sparkprov.arrays.cells import Shape
from sparkprov.arrays.operators import neighbourhood


@pytest.mark.parametrize("many", [False, True], ids=["few cells", "many cells"])
def test_a_neighbourhood_is_every_cell_within_the_radius_inside_the_array(many):
    # few cells take the path that shifts them all at once, many one shift at a time
    rng = np.random.default_rng(int(many))
    for _ in range(8 if many else 100):
        k = int(rng.integers(1, 4))
        dims = tuple(int(d) for d in rng.integers(1, 30 if many else 8, k))
        shape, radius = Shape(dims), int(rng.integers(0, 4))
        cells = rng.integers(0, shape.size, int(rng.integers(1500, 2500) if many else rng.integers(0, 6)))
        want = set()
        for c in cells:
            at = np.unravel_index(int(c), dims)
            ranges = [range(max(0, v - radius), min(d, v + radius + 1)) for v, d in zip(at, dims)]
            want.update(int(np.ravel_multi_index(p, dims)) for p in itertools.product(*ranges))
        assert neighbourhood(cells, shape, radius).tolist() == sorted(want)
