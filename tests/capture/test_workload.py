"""Workload-aware capture: lineage kept only for the sources a declared workload names."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch

from .test_rules import lineage_by_output


@pytest.fixture
def joined(spark, session):
    left = session.source(spark.createDataFrame([(0, "a"), (1, "a"), (2, "b")], "k int, g string"), "l")
    right = session.source(spark.createDataFrame([(10, "a"), (11, "b"), (12, "b")], "k int, g string"), "r")
    right = right.select(F.col("k").alias("rk"), F.col("g").alias("rg"))
    return left.join(right, left["g"] == right["rg"]).groupBy("g").agg(F.count("*").alias("n"))


@pytest.mark.parametrize("strategy", ["auto", "logical", "lazy"])
def test_only_the_workload_sources_keep_lineage(session, joined, strategy):
    full = lineage_by_output(session.capture(joined, f"full_{strategy}", strategy=strategy))
    cap = session.capture(joined, f"left_{strategy}", strategy=strategy, workload={"sources": ["l"]})
    assert list(cap.sources) == ["l"]
    # each output row's lineage is the full lineage's rows of l, no more and no fewer
    assert lineage_by_output(cap) == {row: {(s, k) for s, k in found if s == "l"} for row, found in full.items()}
    assert "source r: no lineage kept (not among the workload's sources)" in cap.explain()
    for trace in (lambda: cap.backward([0], source="r"), lambda: cap.forward("r", [0])):
        with pytest.raises(ValueError, match="kept no lineage for source 'r': its workload named only l"):
            trace()


def test_a_bad_workload_is_refused(session, joined):
    with pytest.raises(ValueError, match=r"names source\(s\) \['orders'\] the query does not read; it reads"):
        session.capture(joined, "unknown", workload=sp.Workload(sources=["orders"]))
    for bad, message in [
        ({"source": ["l"]}, "unknown workload field"),
        ({"sources": "l"}, "must be a list of source names"),
        ({"sources": []}, "non-empty list"),
        (["l"], "workload must be a Workload or a dict"),
    ]:
        with pytest.raises(ValueError, match=message):
            session.capture(joined, "bad", workload=bad)


def test_a_tpch_join_keeps_the_lineitem_pairs_alone(spark, tpch_dir, tmp_path):
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    full = session.capture(spark.sql(tpch.query(9)), "q9")
    kept = session.capture(spark.sql(tpch.query(9)), "q9_lineitem", workload={"sources": ["lineitem"]})
    assert list(kept.sources) == ["lineitem"] and len(full.sources) == 6
    pairs = sorted(tuple(r) for r in kept.pairs("lineitem").collect())
    assert pairs and pairs == sorted(tuple(r) for r in full.pairs("lineitem").collect())


def _kept_where(full: dict, source: str, selected) -> dict:
    """``full`` lineage by output row with ``source``'s rows kept only where ``selected(key)``."""
    return {row: {(s, k) for s, k in found if s != source or selected(k)} for row, found in full.items()}


@pytest.mark.parametrize("strategy", ["auto", "logical", "defer", "lazy"])
def test_a_where_keeps_the_lineage_of_the_rows_it_selects(session, joined, strategy):
    full = lineage_by_output(session.capture(joined, f"full_{strategy}", strategy=strategy))
    workload = {"sources": ["l", "r"], "where": {"l": "k > 0"}}
    cap = session.capture(joined, f"where_{strategy}", strategy=strategy, workload=workload)
    with pytest.warns(sp.RestrictedLineageWarning, match="source 'l': only rows where k > 0"):
        restricted = lineage_by_output(cap)
    # the declared query: each output row's rows of l that satisfy k > 0; r untouched
    assert restricted == _kept_where(full, "l", lambda k: k > 0)
    assert "lineage kept only where k > 0 (workload where)" in cap.explain()
    assert cap.forward("r", [0]).count() == 1  # r kept all its lineage
    for engine in ("embedded", "spark"):
        with pytest.raises(sp.LineageRestricted, match="source 'l' only for rows where k > 0"):
            cap.forward("l", [1], engine=engine)
    with pytest.raises(sp.LineageRestricted):
        cap.lineage([1], source="l").go_next()
    assert not any(v.endswith("forward_l") for v in cap.register_views())


def test_a_where_on_tpch_keeps_the_selected_pairs_exactly(spark, tpch_dir, tmp_path):
    # Q11 reads partsupp twice, once in its HAVING's scalar subquery (shared lineage)
    tpch.register(spark, tpch_dir)
    session = sp.LineageSession(spark, store=tmp_path / "store")
    where = {11: ("partsupp", "ps_availqty > 5000"), 3: ("lineitem", "l_shipmode IN ('AIR', 'MAIL')")}
    for n, strategy in [(11, "auto"), (11, "defer"), (3, "auto")]:
        source, pred = where[n]
        full = session.capture(spark.sql(tpch.query(n)), f"q{n}_{strategy}", strategy=strategy)
        cap = session.capture(
            spark.sql(tpch.query(n)),
            f"q{n}_{strategy}_where",
            strategy=strategy,
            workload={"sources": list(full.sources), "where": {source: pred}},
        )
        rows = full.sources[source].rows()
        kept = {r[0] for r in rows.where(pred).select("_sp_rid").collect()}
        assert 0 < len(kept) < rows.count()
        expected = {tuple(p) for p in full.pairs(source).collect() if p[1] in kept}
        found = {tuple(p) for p in cap.pairs(source).collect()}
        assert found and found == expected
        for other in set(full.sources) - {source}:
            assert {tuple(p) for p in cap.pairs(other).collect()} == {tuple(p) for p in full.pairs(other).collect()}


def test_a_bad_where_is_refused(session, joined):
    for where, message in [
        ({"l": "no_such_column > 0"}, r"workload where for source 'l': 'no_such_column > 0' is not a predicate"),
        ({"l": "rand() > 0.5"}, "must be deterministic"),
        ({"x": "k > 0"}, r"names source\(s\) \['x'\] not among its sources"),
        ({"l": ""}, "workload where for source 'l': empty predicate"),
        ({"l": "k > 0; DROP TABLE x"}, "workload where for source 'l': predicate .* is not one expression"),
        ("k > 0", "must map source names to predicates"),
    ]:
        for strategy in ("auto", "lazy"):
            with pytest.raises(ValueError, match=message):
                session.capture(joined, "bad", strategy=strategy, workload={"sources": ["l"], "where": where})
    with pytest.raises(ValueError, match="witnesses=True keeps how every row was derived"):
        session.capture(joined, "bad", witnesses=True, workload={"sources": ["l"], "where": {"l": "k > 0"}})


@pytest.mark.parametrize("strategy", ["auto", "lazy"])
def test_a_workload_reaches_the_parts_of_a_marked_capture(spark, session, strategy):
    orders = session.source(
        spark.createDataFrame([(i, i % 3, float(i)) for i in range(20)], "oid int, cust int, price double"), "orders"
    )
    customers = session.source(
        spark.createDataFrame([(i, "ab"[i % 2]) for i in range(3)], "cust int, region string"), "customers"
    )
    cleaned = sp.mark(orders.where("price > 2"), "cleaned")
    query = cleaned.join(customers, "cust").groupBy("region").agg(F.sum("price").alias("total"))
    workload = {
        "sources": ["orders"],
        "where": {"orders": "oid > 5"},
        "group_by": {"orders": ["cust"]},
        "partition_by": {"orders": "cust"},
    }
    cap = session.capture(query, f"m_{strategy}", strategy=strategy, workload=workload)
    inner = session.load(f"m_{strategy}.cleaned")
    # the outer part keeps the lineage of the mark, not of customers; the mark's part
    # keeps that of orders, for the rows the where selects
    assert list(cap.sources) == ["cleaned"] and list(inner.sources) == ["orders"]
    with pytest.warns(sp.RestrictedLineageWarning):
        traced = cap.backward("region = 'a'", end_to_end=True)
    want = {r.oid for r in orders.collect() if r.price > 2 and r.cust % 2 == 0 and r.oid > 5}
    assert set(traced) == {f"m_{strategy}.cleaned/orders"}
    assert {r.oid for r in traced[f"m_{strategy}.cleaned/orders"].collect()} == want
    # the mark's part, which reads orders, has its drill-down and partitions
    with pytest.warns(sp.RestrictedLineageWarning):
        drilled = {r.cust: r["count(*)"] for r in inner.drill_down("oid >= 0", "orders").collect()}
        where = {r.oid for r in inner.backward("oid >= 0", "orders", where="cust = 1", engine="spark").collect()}
    kept = [r for r in orders.collect() if r.price > 2 and r.oid > 5]
    assert drilled == {c: sum(1 for r in kept if r.cust == c) for c in (0, 1, 2)}
    assert where == {r.oid for r in kept if r.cust == 1}
    with pytest.raises(ValueError, match=r"names source\(s\) \['nope'\] the query does not read; it reads \['cleaned'"):
        session.capture(query, f"bad_{strategy}", strategy=strategy, workload={"sources": ["nope"]})
    # the mark's part ran before the outer part refused: it is recorded as not made
    with pytest.raises(sp.CaptureFailed, match=rf"part of capture 'bad_{strategy}', which failed: InvalidArgument"):
        session.load(f"bad_{strategy}.cleaned")
    assert session.store.load(f"bad_{strategy}.cleaned", failed_ok=True).failed["part_of"] == f"bad_{strategy}"
    assert list(session.load(f"m_{strategy}.cleaned").sources) == ["orders"]  # another capture's part is untouched
