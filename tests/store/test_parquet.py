"""Pair tables read by their row groups' statistics: a lookup finds every row a brute-force
filter finds, whatever the row order, and reads fewer row groups where a second sort
column bounds them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sparkprov.store.parquet import PairTable


def _write(path, table: pa.Table, rows_per_group: int) -> str:
    pq.write_table(table, path, row_group_size=rows_per_group)
    return str(path)


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


@pytest.mark.parametrize("seed", range(6))
def test_lookup_finds_what_a_filter_finds(tmp_path, seed):
    rng = np.random.default_rng(seed)
    files = []
    for i in range(3):
        n = int(rng.integers(0, 400))
        key, value = rng.integers(0, 60, n), rng.integers(0, 1000, n)
        if i == 1:  # one sorted file, the others in any order
            key = np.sort(key)
        files.append(_write(tmp_path / f"{i}.parquet", pa.table({"k": key, "v": value}), int(rng.integers(1, 50))))
    table = PairTable(files, "k", ("k", "v"))
    everything = pa.concat_tables(pq.read_table(f) for f in files)
    keys = np.unique(rng.integers(0, 70, int(rng.integers(0, 12))))
    expected = everything.filter(pc.is_in(everything["k"], value_set=pa.array(keys, pa.int64())))
    assert _rows(table.lookup(keys)) == _rows(expected)


def test_a_second_sort_column_narrows_the_row_groups_read(tmp_path):
    # components of 100 rows each whose set numbers interleave (as node numbers do
    # across copies of a workflow), sorted by component then set
    component = np.repeat(np.arange(10), 100)
    cset = (np.arange(1000) % 100) * 10 + component
    order = np.lexsort((cset, component))
    data = pa.table({"component": component[order], "cset": cset[order], "row": np.arange(1000)})
    path = _write(tmp_path / "sets.parquet", data, 25)
    table = PairTable([path], "cset", ("cset", "row"), bound="component")
    wanted = np.array([3, 13, 993])  # sets of component 3
    expected = _rows(data.filter(pc.is_in(data["cset"], value_set=pa.array(wanted))).select(["cset", "row"]))
    assert _rows(table.lookup(wanted, within=np.array([3]))) == expected == _rows(table.lookup(wanted))
    # of component 3's four row groups, the first (sets 3 to 243) and the last (753 to 993)
    assert table.rows_to_read(wanted, within=np.array([3])) == 50
    # by set alone: the first or last row group of every component spans one of them
    assert table.rows_to_read(wanted) >= 8 * 50


def test_a_file_without_the_second_column_is_read_by_key_alone(tmp_path):
    path = _write(tmp_path / "old.parquet", pa.table({"cset": [1, 2, 3, 4], "row": [0, 1, 2, 3]}), 2)
    table = PairTable([path], "cset", ("cset", "row"), bound="component")
    assert table.lookup(np.array([2, 3]), within=np.array([7]))["row"].to_pylist() == [1, 2]
