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


def test_groups_whose_keys_hash_alike_are_numbered_by_their_records_whatever_their_order(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    # records read after a shuffle: a slot lists its partial groups' handles in the
    # order they were merged, which differs between attempts as the records' order does
    records = [(([10 + n, 20 + n, 30 + n],), (-1 if n % 2 else -2, 1)) for n in range(8)]
    combine = worker.combine_partition
    seen = set()
    for attempt in range(6):
        rnd = random.Random(attempt)
        shuffled = [((rnd.sample(s[0], 3),), kv) for s, kv in rnd.sample(records, len(records))]
        run = combine(str(tmp_path / str(attempt)), ["g"], ["group"], lambda v: v, lambda a, b: a + b)
        handles = {key: h for key, (_, [h]) in run(0, iter(shuffled))}
        side = pq.read_table(tmp_path / str(attempt) / "part-00000.parquet").to_pylist()
        held = {h: sorted(tuple(sorted(r["g"])) for r in side if r["__sp_h"] == h) for h in handles.values()}
        seen.add(tuple(sorted((key, tuple(held[h])) for key, h in handles.items())) + tuple(sorted(handles.items())))
    assert len(seen) == 1
