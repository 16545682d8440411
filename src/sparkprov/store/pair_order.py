"""Pairs put in the order a pair table keeps, in this process: ``(out_rid, in_rid)``
sorted by both, repeats removed where asked.

Both rids, less their smallest values, are packed into one integer where their spans
fit in 63 bits together, and sorted by one NumPy sort: a pair's order is its packed
key's. They fit unless rids span files numbered far apart (a source rid is its file's
number shifted past the row bits, ``plan/files``); then Arrow groups and sorts the two
columns. Over TPC-DS q36's 7.5M pairs at SF 1 (6.1M distinct), DuckDB's ``DISTINCT``
and ``ORDER BY`` took 1.2 s, the packed sort 0.2 s; over 7.5M random pairs Arrow's
``group_by`` and ``sort_by`` took 3.1 s, the packed sort 0.17 s.

>>> import pyarrow as pa
>>> t = pa.table({"out_rid": [1, 0, 1, 0], "in_rid": [5, 9, 5, 2]})
>>> ordered_pairs(t, distinct=True).to_pydict()
{'out_rid': [0, 0, 1], 'in_rid': [2, 9, 5]}
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .format import IN, OUT

PAIRS = pa.schema([(OUT, pa.int64()), (IN, pa.int64())])


def ordered_pairs(table: pa.Table, distinct: bool) -> pa.Table:
    """``table``'s ``(out_rid, in_rid)`` columns as int64, sorted by output rid then
    input rid, each pair once if ``distinct``.

    >>> import pyarrow as pa
    >>> t = pa.table({"out_rid": [3, 3], "in_rid": [-1, -1]})
    >>> ordered_pairs(t, distinct=False).num_rows, ordered_pairs(t, distinct=True).num_rows
    (2, 1)
    """
    pairs = table.select([OUT, IN]).cast(PAIRS)
    outs, ins = pairs.column(OUT), pairs.column(IN)
    if pairs.num_rows < 2 or outs.null_count or ins.null_count:
        return _by_arrow(pairs, distinct)
    outs, ins = outs.to_numpy(), ins.to_numpy()
    out_low, in_low = int(outs.min()), int(ins.min())
    in_bits = (int(ins.max()) - in_low).bit_length()
    if (int(outs.max()) - out_low).bit_length() + in_bits > 63:
        return _by_arrow(pairs, distinct)
    # each span below 2**63: the differences are exact in int64, and so is the key
    keys = ((outs - out_low) << in_bits) | (ins - in_low)
    # pairs already in order (``joined_pairs``' own, then written) are not sorted again
    if not (keys[1:] >= keys[:-1]).all():
        keys.sort()
    if distinct:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    mask = (1 << in_bits) - 1
    return pa.table({OUT: (keys >> in_bits) + out_low, IN: (keys & mask) + in_low}, schema=PAIRS)


def _by_arrow(pairs: pa.Table, distinct: bool) -> pa.Table:
    if distinct:
        pairs = pairs.group_by([OUT, IN]).aggregate([]).select([OUT, IN])
    return pairs.sort_by([(OUT, "ascending"), (IN, "ascending")])
