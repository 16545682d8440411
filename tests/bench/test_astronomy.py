"""The astronomy workflow's star detection: its payloads read together, as one by one."""

from __future__ import annotations

import numpy as np

from sparkprov.arrays.regions import RegionLog
from sparkprov.bench.astronomy import Stars, images


def test_every_star_of_a_step_at_once_gives_what_each_pixel_gives():
    image = images(64, 240, seed=3)[0] - 100
    stars, log = Stars(), RegionLog()

    class Writer:  # the payload writer a run in payload mode gets
        mode = "payload"

        def write_payload(self, cells, payload):
            log.write_payload(cells, payload)

    stars.run([image], Writer())
    outs, offsets = log.out_cells()
    assert len(log.payloads) > 2 and any(log.payloads)  # stars, and the background's empty payload
    rng = np.random.default_rng(0)
    for _ in range(20):
        picked = rng.choice(len(log.payloads), size=min(5, len(log.payloads)), replace=False)
        payloads = [log.payloads[k] for k in picked]
        cells = [outs[offsets[k] : offsets[k + 1]][:7] for k in picked]
        one_by_one = set()
        for p, cs in zip(payloads, cells):
            for c in cs:
                one_by_one.update(np.asarray(stars.map_p(int(c), p, 0)).tolist())
        assert stars.map_p_groups(payloads, cells, 0).tolist() == sorted(one_by_one)
