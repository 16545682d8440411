"""Python-worker code of RDD capture: a grouping task run again (its map output lost
with an executor, or a speculative copy) while its records come in another order, as
records read after a shuffle do, writes the side file it wrote before and gives each
key the same handle, so the output Spark kept still matches the side file."""

from __future__ import annotations

import random

import pyarrow.parquet as pq

from sparkprov.rdd import worker


def _run(folder, records: list) -> tuple[dict, list]:
    combine = worker.combine_partition(str(folder), ["s"], ["source"], lambda v: v, lambda a, b: a + b)
    handles = {key: h for key, (_, [h]) in combine(3, iter(records))}
    side = pq.read_table(folder / "part-00003.parquet").to_pylist()
    return handles, sorted(tuple(sorted(r.items())) for r in side)


def test_a_task_run_again_on_reordered_records_numbers_its_groups_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "0")  # as PySpark sets it for its workers
    # keys whose hashes tie (-1 and -2), strings, tuples and None; some keys share records
    keys = [-1, -2, "a", "b", ("x", 1), None, 7]
    records = [((rid,), (keys[rid % len(keys)], 1)) for rid in range(60)] + [((5,), (-2, 1)), ((5,), (-1, 1))]
    first = _run(tmp_path / "first", records)
    for attempt in range(5):
        shuffled = random.Random(attempt).sample(records, len(records))
        again = _run(tmp_path / f"again{attempt}", shuffled)
        assert again == first
        # yielded in the order the keys came, as Spark's own combine yields them
        assert list(again[0]) == list(dict.fromkeys(key for _, (key, _) in shuffled))
    handles, side = first
    assert sorted(handles.values()) == [(3 << 33) | n for n in range(len(keys))]
    assert len(side) == 62  # every (group, record) once: rid 5 is in None's group, -1's and -2's
