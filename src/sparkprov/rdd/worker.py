"""Code that runs in Python workers: combining records by key while recording which
input records each partial group holds, and writing an action's records with ids.

Records of a traced RDD are ``(slots, value)``: ``slots`` is a tuple with one entry per
slot of the RDD (a source row's rid, or a list of group handles), ``value`` the
user's record. Lineage is written per partition, as Parquet, with pyarrow: no call
into the JVM per record.

A grouping operator (``reduceByKey``, ``groupByKey``, ``distinct``...) combines the
records of each input partition by key, as Spark's own map-side combine does, and
gives each partial group a handle ``partition << 33 | number``. The partition's side
file maps every input record's slots to the handle of the group it joined. After the
shuffle, an output record carries the handles of its partial groups (one per input
partition that had its key): a few numbers, not its input records.

>>> handle(3, 5) == (3 << 33) | 5
True
"""

from __future__ import annotations

import os
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain, groupby
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.rdd import portable_hash

from ..store.format import HANDLE, RID, slot_type

_POSITION_BITS = 33
SIDE_ROW_GROUP = 64 * 1024  # side rows per row group: what a trace reads to find one group


def handle(partition: int, number: int) -> int:
    """The id of a partial group, or of an output record: unique across partitions."""
    return (partition << _POSITION_BITS) | number


def write_side(path: str, partition: int, kinds: list[str], names: list[str], members: list) -> None:
    """Write one partition's side file ``<path>/part-<partition>.parquet``: per partial
    group, in handle order, the slots of the records it holds, one row per record.

    ``members`` has, per group (group ``n`` has handle ``handle(partition, n)``), an
    ``array("q")`` of rids when the only slot is a source's, else a list of slot tuples.
    Rows sorted by handle, in small row groups, let a trace read only the groups it
    needs (their statistics bound the handles). A record repeated within a group (a
    line that holds a word twice) is written once. Written under a temporary name and
    renamed, so a retried task replaces the file rather than adding to it.
    """
    lengths = np.fromiter((len(m) for m in members), np.int64, len(members))
    handles = np.repeat(np.arange(len(members), dtype=np.int64) | (partition << _POSITION_BITS), lengths)
    if kinds == ["source"]:
        rids = np.frombuffer(b"".join(m.tobytes() for m in members), np.int64)
        keep = np.ones(len(rids), dtype=bool)
        keep[1:] = (rids[1:] != rids[:-1]) | (handles[1:] != handles[:-1])
        columns = [pa.array(handles[keep]), pa.array(rids[keep])]
    else:
        rows = [(h, s) for h, group in enumerate(members) for i, s in enumerate(group) if not i or s != group[i - 1]]
        base = partition << _POSITION_BITS
        columns = [pa.array([base | h for h, _ in rows], pa.int64())]
        columns.extend(pa.array([s[j] for _, s in rows], slot_type(k)) for j, k in enumerate(kinds))
    table = pa.Table.from_arrays(columns, schema=pa.schema([(HANDLE, pa.int64()), *zip(names, map(slot_type, kinds))]))
    os.makedirs(path, exist_ok=True)
    tmp = os.path.join(path, f".tmp-{partition:05d}-{uuid.uuid4().hex}")
    # handles and rids ascend within a group: delta encoding stores them in a few bits
    # (three times smaller than dictionary pages with zstd, and seven times faster to write)
    ints = [n for n, f in zip(table.column_names, table.schema) if f.type == pa.int64()]
    pq.write_table(
        table,
        tmp,
        row_group_size=SIDE_ROW_GROUP,
        compression="zstd",
        use_dictionary=[n for n in table.column_names if n not in ints],
        column_encoding=dict.fromkeys(ints, "DELTA_BINARY_PACKED"),
    )
    os.replace(tmp, os.path.join(path, f"part-{partition:05d}.parquet"))


def new_members(kinds: list[str]) -> Callable[[], Any]:
    """An empty member list for a partial group (see ``write_side``)."""
    return (lambda: array("q")) if kinds == ["source"] else list


def expander(ops: tuple) -> Callable[[Any], Iterable]:
    """One value to the values that ``ops`` (``(kind, f, preserves)``: ``map``,
    ``flatMap``, ``filter``, in order) make of it, through C iterators."""
    steps = []
    for kind, f, _ in ops:
        if kind == "map":
            steps.append(partial(map, f))
        elif kind == "flatMap":
            steps.append(lambda values, f=f: chain.from_iterable(map(f, values)))
        else:
            steps.append(partial(filter, f))

    def expand(value: Any) -> Iterable:
        values: Iterable = (value,)
        for step in steps:
            values = step(values)
        return values

    return expand


def combine_partition(
    path: str,
    slot_names: list[str],
    slot_kinds: list[str],
    create: Callable[[Any], Any],
    merge: Callable[[Any, Any], Any],
    expand: Callable[[Any], Iterable] | None = None,
) -> Callable[[int, Iterable], Iterator]:
    """A ``mapPartitionsWithIndex`` function: records ``(slots, (key, value))`` in,
    ``(key, (combined, [handle]))`` out, one per key of the partition, with the side
    file written as a side effect. With ``expand`` (pending ``map``/``flatMap``/
    ``filter``), records are ``(slots, value)`` and ``expand(value)`` gives the
    ``(key, value)`` pairs, each with the record's slots."""
    members = new_members(slot_kinds)
    first_only = slot_kinds == ["source"]

    def run(partition: int, records: Iterable) -> Iterator:
        groups: dict[Any, list] = {}
        base = partition << _POSITION_BITS
        made = expand if expand is not None else _alone
        for slots, value in records:
            member = slots[0] if first_only else slots
            for key, v in made(value):
                group = groups.get(key)
                if group is None:
                    groups[key] = group = [create(v), members()]
                else:
                    group[0] = merge(group[0], v)
                group[1].append(member)
        ordered = in_stable_order(groups)
        for n, (_, group) in enumerate(ordered):
            group.append(base | n)
        write_side(path, partition, slot_kinds, slot_names, [group[1] for _, group in ordered])
        # in the order the keys came, as Spark's own combine gives them (a script's
        # printed results keep their order when captured)
        for key, (combined, _, h) in groups.items():
            yield key, (combined, [h])

    return run


def in_stable_order(groups: dict) -> list:
    """A partition's groups (key -> [combined, members]) in an order that does not
    depend on the order their records came in, so a task run again numbers them as
    before: records read after a shuffle come in any order, and a task run again (its
    map output lost with an executor, or a speculative copy) replaces the side file
    that the output Spark kept was numbered by. By the key's portable hash (as Spark
    partitions keys), and where hashes tie, by the records held: groups that hold the
    same records are interchangeable.

    >>> import os
    >>> _ = os.environ.setdefault("PYTHONHASHSEED", "0")  # as PySpark sets it for its workers
    >>> came = {5: [0, [(9,)]], -2: [0, [(4,)]], -1: [0, [(3,)]]}
    >>> [k for k, _ in in_stable_order(came)], [k for k, _ in in_stable_order(dict(reversed(came.items())))]
    ([-1, -2, 5], [-1, -2, 5])
    """
    hashed = sorted(((portable_hash(k), k, g) for k, g in groups.items()), key=itemgetter(0))
    ordered = []
    for _, alike in groupby(hashed, key=itemgetter(0)):
        tied = list(alike)
        if len(tied) > 1:  # -1 and -2 hash alike, among others
            tied.sort(key=lambda t: sorted(repr(_canonical(m)) for m in t[2][1]))
        ordered.extend((k, g) for _, k, g in tied)
    return ordered


def _canonical(member: Any) -> Any:
    # a slot's list of handles is in the order partial groups were merged, which
    # differs between attempts as the records' order does
    if isinstance(member, tuple):
        return tuple(sorted(s) if isinstance(s, list) else s for s in member)
    return member


def _alone(pair: Any) -> tuple:
    return (pair,)


def merge_partials(merge_combiners: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """Merges two partial groups of one key after the shuffle: values and handles."""

    def run(a, b):
        return merge_combiners(a[0], b[0]), a[1] + b[1]

    return run


def opaque_partition(path: str, slot_names: list[str], slot_kinds: list[str], func: Callable) -> Callable:
    """A ``mapPartitionsWithIndex`` function for an opaque partition function (the
    user's ``mapPartitions``): every record it consumed is behind every record it
    returns, so the partition is one group (coarse lineage)."""
    first_only = slot_kinds == ["source"]

    def run(partition: int, records: Iterable) -> Iterator:
        held = new_members(slot_kinds)()

        def values():
            for slots, value in records:
                held.append(slots[0] if first_only else slots)
                yield value

        out = list(func(values()))
        write_side(path, partition, slot_kinds, slot_names, [held])
        h = handle(partition, 0)
        for value in out:
            yield ([h],), value

    return run


def output_partition(path: str, slot_names: list[str], slot_kinds: list[str]) -> Callable:
    """A ``mapPartitionsWithIndex`` function writing an action's records: their values
    as columns (``_1``, ``_2``... for tuples, ``value`` otherwise), ``_sp_rid`` and the
    slots, to ``<path>/part-<partition>.parquet``. Yields the values, for the action."""

    def run(partition: int, records: Iterable) -> Iterator:
        rows = list(records)
        table = output_table(
            [r[1] for r in rows],
            [handle(partition, i) for i in range(len(rows))],
            slot_names,
            [[r[0][j] for r in rows] for j in range(len(slot_names))],
            [slot_type(k) for k in slot_kinds],
        )
        os.makedirs(path, exist_ok=True)
        tmp = os.path.join(path, f".tmp-{partition:05d}-{uuid.uuid4().hex}")
        pq.write_table(table, tmp, row_group_size=SIDE_ROW_GROUP)  # rids ascending: a trace reads few groups
        os.replace(tmp, os.path.join(path, f"part-{partition:05d}.parquet"))
        yield from (r[1] for r in rows)

    return run


def output_table(values: list, rids: list[int], slot_names, slot_values, slot_types) -> pa.Table:
    """Records as a table: tuples as columns ``_1``.., anything else as ``value``; a column
    pyarrow cannot type is kept as each value's ``repr``."""
    width = {len(v) for v in values if isinstance(v, tuple)}
    if not values:  # an empty partition says nothing about the columns
        names, columns = [], []
    elif len(width) == 1 and all(isinstance(v, tuple) for v in values):
        names = [f"_{i + 1}" for i in range(width.pop())]
        columns = [[v[i] for v in values] for i in range(len(names))]
    else:
        names, columns = ["value"], [values]
    arrays = [_typed(c) for c in columns]
    arrays.append(pa.array(rids, pa.int64()))
    arrays.extend(pa.array(v, t) for v, t in zip(slot_values, slot_types))
    return pa.Table.from_arrays(arrays, names=[*names, RID, *slot_names])


def _typed(column: list) -> pa.Array:
    plain = [list(v) if _is_iterable_result(v) else v for v in column]
    try:
        return pa.array(plain)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return pa.array([None if v is None else repr(v) for v in column], pa.string())


def _is_iterable_result(value: Any) -> bool:
    # groupByKey's values (ResultIterable) are stored as lists
    return type(value).__name__ == "ResultIterable"
