"""The data-engineering pipelines of ``sparkprov.bench.pipelines``: their data, what each
computes, and their lineage through ``bench coverage``'s three checks."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import pandas as pd
import pyarrow.parquet as pq
import pytest
from pyarrow import csv as pacsv

from sparkprov.bench import checks, pipelines
from sparkprov.errors import InvalidArgument

ROWS = 2000
CHECKED_ROWS = 1  # output rows per pipeline put through re-execution and consistency


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return pipelines.generate(ROWS, tmp_path_factory.mktemp("pipelines"))


@pytest.fixture(scope="module")
def answers(spark, data) -> dict[str, list[tuple]]:
    """Every pipeline's rows without capture (each pipeline run once for the module)."""
    pipelines.register(spark, data)
    return {name: [tuple(r) for r in build(spark).collect()] for name, build in pipelines.PIPELINES.items()}


def frame(spark, name: str, rows: list[tuple]) -> pd.DataFrame:
    """A pipeline's rows as pandas, timestamps in UTC as in the generated files (collect
    gives them naive, in this process's time zone)."""
    utc = [tuple(v.astimezone(timezone.utc) if isinstance(v, datetime) else v for v in r) for r in rows]
    return pd.DataFrame(utc, columns=pipelines.PIPELINES[name](spark).columns)


def table(data, name: str) -> pd.DataFrame:
    path = data / pipelines.FILES[name]
    return (pacsv.read_csv(path) if path.suffix == ".csv" else pq.read_table(path)).to_pandas()


def test_generate_is_deterministic_and_reused(tmp_path):
    first, second = pipelines.generate(400, tmp_path / "a"), pipelines.generate(400, tmp_path / "b")
    assert first.name == "rows400"
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted([".done", *pipelines.FILES.values()])
    for n in names:
        assert (first / n).read_bytes() == (second / n).read_bytes(), n
    (first / "orders.parquet").write_bytes(b"left alone")  # a finished directory is not looked at again
    assert pipelines.generate(400, tmp_path / "a") == first
    assert (first / "orders.parquet").read_bytes() == b"left alone"
    (first / ".done").unlink()  # without the marker the data is written again, the same
    pipelines.generate(400, tmp_path / "a")
    assert (first / "orders.parquet").read_bytes() == (second / "orders.parquet").read_bytes()


@pytest.mark.parametrize("rows", [0, -3, 2.5, "100", True, None])
def test_generate_refuses_bad_rows(tmp_path, rows):
    with pytest.raises(InvalidArgument, match="rows must be a positive whole number"):
        pipelines.generate(rows, tmp_path)
    assert not any(tmp_path.iterdir())


def test_register_names_missing_data(spark, tmp_path):
    with pytest.raises(FileNotFoundError, match="orders.parquet"):
        pipelines.register(spark, tmp_path)


def test_generated_tables(data):
    orders, events, returns = table(data, "orders"), table(data, "events"), table(data, "returns")
    customers, updates = table(data, "customers"), table(data, "customer_updates")
    products = pd.read_json(data / "products.json", lines=True)
    assert len(orders) == ROWS and orders["order_id"].is_unique
    assert len(customers) == ROWS // 20 and len(products) == pipelines.PRODUCTS
    assert orders["status"].isna().any() and orders["product_id"].isna().any()
    assert set(orders["customer_id"]) < set(customers["customer_id"])  # some customers never order
    assert 0.9 * ROWS <= len(events) <= 1.1 * ROWS
    repeats = events.groupby("event_id")["ingest_ts"].agg(["count", "nunique"])
    assert 0.03 < (repeats["count"] > 1).mean() < 0.07 and (repeats["count"] == repeats["nunique"]).all()
    assert 0.01 * ROWS < len(returns) < 0.05 * ROWS and set(returns["order_id"]) <= set(orders["order_id"])
    assert set(updates["customer_id"]) < set(customers["customer_id"])


def test_every_pipeline_returns_rows(answers):
    assert len(pipelines.PIPELINES) >= 11
    assert {name for name, rows in answers.items() if not rows} == set()


def test_etl_star(spark, answers):
    out = frame(spark, "etl_star", answers["etl_star"])
    assert 0 < len(out) <= 15
    assert list(zip(out["region"], out["rank"])) == sorted(zip(out["region"], out["rank"]))
    assert out["rank"].between(0, 3).all() and not out.duplicated(["region", "category_label"]).any()


def test_dedup_keeps_the_latest_delivery(spark, data, answers):
    out = frame(spark, "dedup_events", answers["dedup_events"])
    events = table(data, "events")
    assert out["event_id"].is_unique and set(out["event_id"]) == set(events["event_id"])
    latest = events.groupby("event_id")["ingest_ts"].max()
    assert (out.set_index("event_id")["ingest_ts"] == latest.reindex(out["event_id"])).all()


def test_sessions_have_no_gap_over_30_minutes(spark, data, answers):
    sessions = frame(spark, "sessionize", answers["sessionize"])
    events = table(data, "events").drop_duplicates("event_id")
    assert sessions["events"].sum() == len(events)
    gap = pd.Timedelta(seconds=pipelines.SESSION_GAP_SECONDS)
    for user, mine in sessions.sort_values("session_start").groupby("user_id"):
        times = events.loc[events["user_id"] == user, "ts"].sort_values()
        start, end = mine["session_start"], mine["session_end"]
        assert list(mine["session"]) == list(range(1, len(mine) + 1))
        assert ((start.iloc[1:].to_numpy() - end.iloc[:-1].to_numpy()) > gap).all()  # sessions apart
        for s, e, n in zip(start, end, mine["events"]):
            inside = times[(times >= s) & (times <= e)]
            assert len(inside) == n and (inside.diff().dropna() <= gap).all()


def test_scd2_has_one_current_version_and_no_overlap(spark, data, answers):
    out = frame(spark, "scd2_customers", answers["scd2_customers"])
    customers, updates = table(data, "customers"), table(data, "customer_updates")
    assert len(out) == len(customers) + len(updates)
    current = out[out["is_current"]]
    assert current["customer_id"].is_unique and set(current["customer_id"]) == set(customers["customer_id"])
    for _, versions in out.sort_values("valid_from").groupby("customer_id"):
        starts, ends = list(versions["valid_from"]), list(versions["valid_to"])
        assert ends[:-1] == starts[1:] and ends[-1] is None  # each version ends where the next begins
        assert all(s < e for s, e in zip(starts, ends[:-1])) and list(versions["version"]) == list(
            range(1, len(versions) + 1)
        )


def test_order_features_are_standardized_over_every_order(spark, data, answers):
    out = frame(spark, "order_features", answers["order_features"])
    sold = table(data, "orders").query("status in ('completed', 'shipped')")
    assert len(out) == len(sold) and out["order_id"].is_unique
    assert abs(out["quantity_z"].mean()) < 1e-9 and abs(out["quantity_z"].std() - 1) < 1e-9
    assert abs(float(out["revenue_share"].sum()) - 1) < 1e-6
    assert out["revenue_percentile"].between(0, 1).all() and out["revenue_percentile"].min() == 0


def test_regional_running_totals_end_at_each_regions_total(spark, answers):
    out = frame(spark, "regional_running", answers["regional_running"]).sort_values(["region", "ts", "order_id"])
    last = out.groupby("region").tail(1).set_index("region")
    totals = out.groupby("region")["revenue"].sum()
    assert (last["region_revenue"] == totals).all()
    assert (last["region_orders"] == out.groupby("region").size()).all()
    assert set(out["region"]) == set(pipelines.REGIONS)
    assert (out.groupby("region")["revenue_rank"].min() == 1).all()


def test_rfm_quartiles(spark, answers):
    out = frame(spark, "rfm", answers["rfm"])
    assert out["customer_id"].is_unique
    for score in ("r_score", "f_score", "m_score"):
        assert out[score].between(1, 4).all()
    assert (out["rfm"] == out["r_score"].astype(str) + out["f_score"].astype(str) + out["m_score"].astype(str)).all()


def test_top_products_at_most_five_per_category(spark, data, answers):
    out = frame(spark, "top_products", answers["top_products"])
    orders = table(data, "orders")
    products = pd.read_json(data / "products.json", lines=True)
    sold = orders[orders["status"].isin(["completed", "shipped"])].dropna(subset=["product_id"])
    cents = (sold["price"] * 100).round().astype(int) * sold["quantity"]
    revenue = cents.groupby(sold["product_id"].astype(int)).sum().rename("cents").reset_index()
    ranked = revenue.merge(products, on="product_id").sort_values(["cents", "product_id"], ascending=[False, True])
    expected = ranked.groupby("category").head(5)
    assert sorted(out["product_id"]) == sorted(expected["product_id"])
    assert Counter(out["category"]).most_common(1)[0][1] <= 5
    for _, top in out.sort_values("rank").groupby("category"):
        assert list(top["rank"]) == list(range(1, len(top) + 1)) and top["revenue"].is_monotonic_decreasing
    assert out["brand"].notna().all()


def test_aggregates_agree(spark, data, answers):
    orders = table(data, "orders")
    sold = orders[orders["status"].isin(["completed", "shipped"])]
    known = sold["product_id"].notna().sum()
    rollup = frame(spark, "union_rollup", answers["union_rollup"])
    assert rollup.groupby("dimension")["orders"].sum().to_dict() == {"region": known, "category": known, "month": known}
    assert frame(spark, "pandas_features", answers["pandas_features"])["orders"].sum() == known
    monthly = frame(spark, "monthly_distinct", answers["monthly_distinct"])
    assert set(monthly["month"]) == set(pipelines.MONTHS) and monthly["orders"].sum() == len(orders)
    assert (monthly["products"] <= monthly["orders"]).all() and (monthly["active_days"] <= monthly["orders"]).all()
    running = frame(spark, "running_totals", answers["running_totals"]).sort_values(["ts", "order_id"])
    last = running.groupby("customer_id").tail(1).set_index("customer_id")
    assert (last["running_revenue"] == running.groupby("customer_id")["revenue"].sum().reindex(last.index)).all()
    assert (running["orders_30d"] >= 1).all() and running["days_since_previous"].isna().sum() == len(last)


def test_semi_and_anti_joins_split_customers_with_orders(spark, data, answers):
    out = frame(spark, "customers_without_returns", answers["customers_without_returns"])
    orders, returns = table(data, "orders"), table(data, "returns")
    buyers = set(orders["customer_id"])
    returned = set(orders.loc[orders["order_id"].isin(returns["order_id"]), "customer_id"])
    assert set(out["customer_id"]) == buyers - returned and out["customer_id"].is_unique
    assert returned and buyers - returned  # both sides of the split hold customers


def test_monthly_pivot_has_a_column_per_month(spark, answers):
    out = frame(spark, "monthly_pivot", answers["monthly_pivot"])
    assert list(out.columns) == ["category", *pipelines.MONTHS]
    assert out["category"].is_unique


@pytest.mark.parametrize("name", list(pipelines.PIPELINES))
def test_lineage(spark, session, data, answers, name):
    """As ``bench coverage``'s check_query: equal answers with capture on and off, then
    re-execution and forward/backward consistency for the first output rows."""
    build = pipelines.PIPELINES[name]
    pipelines.register(spark, data)
    cap = session.capture(build(spark), name=name)
    assert set(cap.sources) <= set(pipelines.TABLES)
    assert checks.same_answers(answers[name], checks.output_rows(cap), ordered=name in pipelines.ORDERED)

    def rerun(restricted):
        try:
            for source, df in restricted.items():
                df.createOrReplaceTempView(source)
            result = build(spark)
            # collected before the full views come back in `finally`
            return spark.createDataFrame(result.collect(), result.schema)
        finally:
            pipelines.register(spark, data)

    problems = []
    for r in cap.output.limit(CHECKED_ROWS).collect():
        found = checks.check_row(cap, r["_sp_rid"], rerun)
        only_rerun = found and all(p.startswith("re-execution") for p in found)
        if only_rerun and checks.reexecution_by_occurrence(session, lambda: build(spark), cap, r["_sp_rid"]):
            continue  # a source read twice with a negation between the reads (checks.reexecution_by_occurrence)
        problems.extend(found)
    assert problems == []
