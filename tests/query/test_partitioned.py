"""Backward lineage partitioned by a source column: a trace with a predicate on it reads
only the partitions the predicate keeps, and gives the rows a filtered trace gives."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.query import embedded, partitioned
from sparkprov.store.files import write_manifest

from .test_drill_down import sorted_rows


@pytest.mark.parametrize("strategy", ["auto", "lazy"])
def test_a_trace_with_a_predicate_on_the_column_reads_its_partitions_alone(
    session, orders, customers, strategy, monkeypatch
):
    query = orders.join(customers, "cust").groupBy("region").agg(F.sum("price").alias("total"))
    spec = {"sources": ["orders", "customers"], "partition_by": {"orders": "mode"}}
    cap = session.capture(query, f"by_region_{strategy}", strategy=strategy, workload=spec)
    cases = [
        (rows, where)
        for rows in ([0], "total > 0")
        for where in ("mode IN ('0', '2')", "mode IS NULL", "price > 10 AND mode = '2'")
    ]
    for rows, where in cases:
        want = sorted_rows(cap.backward(rows, "orders").where(where))
        for engine in ("embedded", "spark"):  # in this process, or on Spark from the partitions
            got = cap.backward(rows, "orders", where=where, engine=engine)
            assert sorted_rows(got) == want, (rows, where, engine)
        with monkeypatch.context() as m:  # many traced rows: matched against the source's rows DuckDB selects
            m.setattr(embedded, "FILTERED_HERE_MAX", 0)
            assert sorted_rows(cap.backward(rows, "orders", where=where, engine="embedded")) == want
    # a source without partitions
    got = cap.backward([1], "customers", where="region = '1'")
    assert sorted_rows(got) == sorted_rows(cap.backward([1], "customers").where("region = '1'"))
    # the partitions a predicate does not keep are never opened: made unreadable, and the
    # store's list of the table's files written again to match (so the store's own check
    # passes, and only reading them would fail), the answer is the same
    want = {rows: sorted_rows(cap.backward(rows, "orders").where("mode = '1'")) for rows in ((0,), "total > 0")}
    index = partitioned.table_path(cap._entry, "orders")
    others = [d for d in index.iterdir() if d.is_dir() and d.name != "__sp_p=1"]
    assert len(others) == 3  # 0, 2 and NULL
    for part in others:
        for f in part.glob("*.parquet"):
            f.write_bytes(b"not parquet")
    write_manifest(index)
    for rows, rows_want in want.items():
        assert sorted_rows(cap.backward(rows, "orders", where="mode = '1'", engine="spark")) == rows_want
    with pytest.raises(Exception, match="not a Parquet file|Could not read footer|CANNOT_READ"):
        cap.backward([0], "orders", where="mode = '2'", engine="spark").collect()


def test_bad_partitions_and_predicates_are_refused(session, orders):
    query = orders.groupBy("cust").count()
    for column, message in [
        ("nope", "workload partition_by for source 'orders'"),
        ("w", "column w is double; partition by a string, whole-number, date or boolean column"),
    ]:
        with pytest.raises(ValueError, match=message):
            session.capture(query, "bad", workload={"sources": ["orders"], "partition_by": {"orders": column}})
    assert session.captures() == []
    with pytest.raises(ValueError, match=r"partition_by names source\(s\) \['customers'\] not among its sources"):
        sp.Workload(sources=["orders"], partition_by={"customers": "region"})
    with pytest.raises(ValueError, match="must be one column name"):
        sp.Workload(sources=["orders"], partition_by={"orders": ["mode"]})
    cap = session.capture(query, "counts", workload={"sources": ["orders"], "partition_by": {"orders": "mode"}})
    with pytest.raises(ValueError, match="where filters one source's rows: give source"):
        cap.backward([0], where="mode = '1'")
    for rows in ([0], "cust < 0"):  # rows with lineage, and none: the predicate is checked either way
        for engine in ("auto", "embedded", "spark"):
            with pytest.raises(ValueError, match="cannot evaluate predicate 'nope = 1' on source 'orders'"):
                cap.backward(rows, "orders", where="nope = 1", engine=engine)
