"""The astronomy workflow's star detection: its payloads read together, as one by one."""

from __future__ import annotations

import numpy as np

from sparkprov.arrays.operators import LineageWriter
from sparkprov.bench.astronomy import Stars, images


def test_every_star_of_a_step_at_once_gives_what_each_pixel_gives():
    image = images(64, 240, seed=3)[0] - 100
    stars, writer = Stars(), LineageWriter("payload", 1)
    stars.run([image], writer)
    log = writer.logs[0]
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


def test_a_stars_payload_is_its_bounding_box():
    from scipy.ndimage import find_objects, label

    from sparkprov.bench.astronomy import STAR_THRESHOLD

    image = images(64, 240, seed=4)[0] - 100
    writer = LineageWriter("composite", 1)
    Stars().run([image], writer)
    log = writer.logs[0]
    labels, count = label(image > STAR_THRESHOLD)
    assert count > 2 and len(log.payloads) == count
    outs, offsets = log.out_cells()
    for k, (rows, cols) in enumerate(find_objects(labels)):
        box = np.frombuffer(log.payloads[k], np.int32).tolist()
        assert box == [rows.start, cols.start, rows.stop - 1, cols.stop - 1]
        assert outs[offsets[k] : offsets[k + 1]].tolist() == np.flatnonzero(labels.ravel() == k + 1).tolist()


def test_an_image_without_stars_keeps_every_pixel_on_itself():
    for mode, pairs in (("full", 30), ("payload", 1), ("composite", 0)):
        writer = LineageWriter(mode, 1)
        assert not Stars().run([np.zeros((5, 6), np.float32)], writer).any()
        assert writer.logs[0].pairs == pairs  # full: a pair per pixel; payload: one empty payload for all
