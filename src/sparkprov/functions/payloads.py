"""Payloads kept for the query (``sp.lineage(..., keep="payload")``, SubZero's PayOne).

As the function runs, each output row gets a few columns instead of its input rows'
ids (``payload_columns``): the call that made it (a group, or a partition of
mapInPandas: an id its wrapper gives it, unique among the function's calls; not an
input row's id, which two calls may share or have none of), its position among the call's
output rows, how many input rows the call had received then, and its payload,
pickled. A call's first row after new input rows also carries their ids (an array per
id column: sorted rids delta-encode in Parquet), the first one's position and the
call's key, so the rows behind any position can be named later. When a trace reaches
some of these rows, ``resolve`` runs the declaration's ``map_p`` (and a composite's
``backward``) over them exactly as the function's run would have (same positions,
payloads and meta), checked the same way, and gives each row's input rows' ids.

>>> import numpy as np, pyarrow as pa
>>> from sparkprov.functions.declare import Declaration
>>> from sparkprov.functions.tracer import Tracer
>>> decl = Declaration("payload", len, ("lo",), map_p=lambda i, lo, meta: range(lo, i + 1), keep="payload")
>>> t = Tracer(decl, "partition 0")
>>> t.receive(0, np.array([40, 41, 42]))
>>> t.call = 5
>>> rows = pa.table(payload_columns(t, 3, [0, 0, 1]) | {"set": [7, 8, 9]})
>>> [found.to_pydict() for found in resolve(decl, rows, "set", width=1)]
[{'set': [7, 8, 8, 9, 9], 'id': [40, 40, 41, 41, 42]}]
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pyarrow as pa

from ..store.format import PAY_GROUP, PAY_IDS, PAY_KEY, PAY_POSITION, PAY_RECEIVED, PAY_START, PAY_VALUE
from .declare import Declaration
from .tracer import Tracer


def payload_columns(tracer: Tracer, rows: int, payloads: list) -> dict[str, Any]:
    """The payload columns of a call's next ``rows`` output rows (``payloads``: their
    values, Python objects); the call is named by ``tracer.call``."""
    ids = tracer.ids()
    received = tracer.received[0]
    start = tracer.produced
    tracer.produced += rows
    sent = tracer.ids_sent
    first, key = [None] * rows, [None] * rows
    new: list[list] = [[None] * rows for _ in range(ids.shape[1])]
    if rows and received > sent:
        first[0], key[0] = sent, pickle.dumps(tracer.key, protocol=5)
        for j, column in enumerate(new):
            column[0] = ids[sent:received, j]
        tracer.ids_sent = received
    try:
        values = [pickle.dumps(v, protocol=5) for v in payloads]
    except Exception as e:
        raise tracer.wrong(start, f"its payload cannot be kept for the query: {type(e).__name__}: {e}") from e
    return {
        PAY_GROUP: np.full(rows, tracer.call, np.int64),
        PAY_POSITION: np.arange(start, start + rows, dtype=np.int64),
        PAY_RECEIVED: np.full(rows, received, np.int64),
        PAY_VALUE: values,
        PAY_START: first,
        PAY_KEY: key,
        **{f"{PAY_IDS}{j}": column for j, column in enumerate(new)},
    }


CALL_BITS = 32  # a call's id: its task's partition, then its number among the worker's calls


def payload_arrow_types(width: int) -> list[pa.DataType]:
    """The Arrow type of each payload column (``payload_columns``' order), for input
    rows carrying ``width`` ids."""
    return [pa.int64()] * 3 + [pa.binary(), pa.int64(), pa.binary()] + [pa.list_(pa.int64())] * width


def resolve(decl: Declaration, rows: pa.Table, key: str, width: int) -> list[pa.Table]:
    """Per id column, ``(key, id)``: the ids of the input rows behind each of ``rows``
    (its payload columns and ``key``, the rows' set ids), as ``decl``'s map_p (and a
    composite's backward) give them from the kept payloads. The rows of the calls
    that carry input ids must be among ``rows``."""
    found: list[list[tuple]] = [[] for _ in range(width)]
    rows = rows.sort_by([(PAY_GROUP, "ascending"), (PAY_POSITION, "ascending")])
    groups = rows[PAY_GROUP].to_numpy()
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]]) if len(groups) else np.empty(0, np.int64)
    for lo, hi in zip(starts, [*starts[1:], len(groups)]):
        for j, part in enumerate(_resolve_call(decl, rows.slice(lo, hi - lo), key, width)):
            found[j].extend(part)
    empty = (np.empty(0, np.int64), np.empty(0, np.int64))
    return [pa.table(dict(zip((key, "id"), map(np.concatenate, zip(empty, *parts))))) for parts in found]


def _resolve_call(decl: Declaration, call: pa.Table, key: str, width: int) -> list[list[tuple]]:
    # one call's rows (sorted by position): its input ids put back in order, then its
    # rows in runs made with the same input rows received, as the function's run made them
    chunks = sorted((s, i) for i, s in enumerate(call[PAY_START].to_pylist()) if s is not None)
    columns = [call[f"{PAY_IDS}{j}"] for j in range(width)]
    ids = np.empty((0, width), np.int64)
    if chunks:
        parts = [np.column_stack([c[i].values.to_numpy() for c in columns]).reshape(-1, width) for _, i in chunks]
        ids = np.concatenate(parts)
    group_key = pickle.loads(call[PAY_KEY][chunks[0][1]].as_py()) if chunks else None
    group = int(call[PAY_GROUP][0].as_py())
    where = f"the group of key {group_key}" if group_key is not None else f"partition {group >> CALL_BITS}"
    tracer = Tracer(decl, where, key=group_key, widths=(width,))
    positions = call[PAY_POSITION].to_numpy()
    received = call[PAY_RECEIVED].to_numpy()
    values = [pickle.loads(b) for b in call[PAY_VALUE].to_pylist()]
    sets = call[key].to_numpy()
    found: list[list[tuple]] = [[] for _ in range(width)]
    # a run: consecutive positions made with the same input rows received
    cut = np.flatnonzero(np.r_[True, (np.diff(positions) != 1) | (np.diff(received) != 0)])
    for lo, hi in zip(cut, [*cut[1:], len(positions)]):
        have = int(received[lo])
        if have > tracer.received[0]:
            if have > len(ids):
                raise tracer.wrong(int(positions[lo]), "its kept input rows are missing from the store")
            tracer.receive(0, ids[tracer.received[0] : have])
        tracer.produced = int(positions[lo])
        reported = values[lo:hi]
        lists = tracer.lineage(int(hi - lo), [_as_array(reported) if decl.vectorized else reported])
        for j, listed in enumerate(lists):
            counts = np.diff(listed.offsets.to_numpy())
            found[j].append((np.repeat(sets[lo:hi], counts), listed.values.to_numpy()))
    return found


def _as_array(values: list):
    # the payloads as one array, as a vectorized map_p gets them when it runs in the function
    try:
        return pa.array(values).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array


class _Named:
    """What a kept declaration holds in place of the function: its name alone (the
    function itself is not needed to run map_p, and may not pickle)."""

    def __init__(self, name: str) -> None:
        self.__qualname__ = name

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"{self.__qualname__} is not kept in the store; only its lineage declaration is")


def kept_declaration(decl: Declaration) -> bytes:
    """``decl`` (without the function) pickled for the store; a map_p that cannot be
    pickled fails here, at capture, not at a later query."""
    import dataclasses

    from pyspark import cloudpickle

    from ..errors import LineageDeclarationWrong

    try:
        return cloudpickle.dumps(dataclasses.replace(decl, function=_Named(decl.name)))
    except Exception as e:
        raise LineageDeclarationWrong(
            f"function {decl.name!r} ({decl.mode} lineage, keep='payload'): its map_p cannot be kept in the store "
            f"({type(e).__name__}: {e}); declare keep='pairs' to run it as the function runs"
        ) from e


def loaded_declaration(data: bytes, where: str) -> Declaration:
    """A kept declaration, as ``kept_declaration`` made it."""
    from ..errors import SparkprovError

    try:
        return pickle.loads(data)
    except Exception as e:
        raise SparkprovError(
            f"{where} keeps payloads whose map_p cannot be loaded in this process ({type(e).__name__}: {e}): "
            "trace it where the modules map_p uses can be imported"
        ) from e
