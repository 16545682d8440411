"""Data pipelines of the kind data engineers write, over synthetic shop data, for benchmarks.

:func:`generate` writes a shop's tables for ``rows`` orders with NumPy and PyArrow (no
Spark, so a million orders take seconds) into ``<directory>/rows<rows>/``, in the formats
such data arrives in:

* ``orders.parquet``: ``rows`` orders (order_id, customer_id, product_id, ts, quantity,
  price, status); about 1% of product ids and 2% of statuses are NULL.
* ``customers.csv`` (header): about ``rows / 20`` customers (customer_id, name, region,
  segment, signup_date); a tenth of them never order.
* ``customer_updates.csv`` (header): later snapshots of some customers' region and
  segment (customer_id, region, segment, updated_at), for slowly changing dimensions.
* ``products.json`` (JSON lines): 2,000 products (product_id, category, brand, list_price).
* ``events.parquet``: about ``rows`` click-stream events (event_id, user_id, ts,
  ingest_ts, kind, value) in bursts of a few minutes; about 5% are duplicate deliveries
  of an event, equal but for a later ``ingest_ts``.
* ``returns.parquet``: returns of about 3% of the orders (return_id, order_id,
  return_ts, reason, refund).

:func:`register` makes each table a temporary view named after it, and every pipeline
of :data:`PIPELINES` reads its inputs with ``spark.table`` (so a caller may swap a view
for other rows) and returns its result as a DataFrame, written to nothing. Each is
deterministic: windows order by a unique key where ties could reorder rows, and the
reference date is a literal.

>>> sorted(PIPELINES)[:3]
['customers_without_returns', 'dedup_events', 'etl_star']
>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = generate(200, tmp)
...     sorted(p.name for p in path.iterdir())[:4], pq.read_metadata(path / "orders.parquet").num_rows
(['.done', 'customer_updates.csv', 'customers.csv', 'events.parquet'], 200)
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd  # the pandas UDFs' type hints are resolved in this module's namespace
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ..errors import InvalidArgument

SEED = 20240701
DONE = ".done"
PRODUCTS = 2_000
REGIONS = ("EMEA", "NA", "LATAM", "APAC", "ANZ")
SEGMENTS = ("consumer", "small_business", "corporate")
CATEGORIES = ("books", "toys", "garden", "kitchen", "audio", "video", "sports", "beauty", "office", "pets", "tools")
KINDS = ("view", "click", "add_to_cart", "purchase")
STATUSES = ("completed", "shipped", "cancelled", "pending")
REASONS = ("damaged", "wrong_item", "not_as_described", "changed_mind")
START = np.datetime64("2024-01-01T00:00:00", "s")
SPAN_SECONDS = 182 * 86_400  # the first half of 2024
MONTHS = tuple(f"2024-{m:02d}" for m in range(1, 7))
REFERENCE_DATE = "2024-07-01"  # "today" for recency: a literal keeps reruns equal
SESSION_GAP_SECONDS = 30 * 60

FILES = {
    "orders": "orders.parquet",
    "customers": "customers.csv",
    "customer_updates": "customer_updates.csv",
    "products": "products.json",
    "events": "events.parquet",
    "returns": "returns.parquet",
}
TABLES = tuple(FILES)
# Text formats carry no types: Spark is told them rather than left to infer them (a job).
SCHEMAS = {
    "customers": "customer_id long, name string, region string, segment string, signup_date date",
    "customer_updates": "customer_id long, region string, segment string, updated_at date",
    "products": "product_id long, category string, brand string, list_price double",
}


def _check_rows(rows) -> int:
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows <= 0:
        raise InvalidArgument(f"rows must be a positive whole number of orders, got {rows!r}")
    return int(rows)


def _timestamps(seconds: np.ndarray) -> pa.Array:
    return pa.array((START + seconds).astype("datetime64[us]"), type=pa.timestamp("us", tz="UTC"))


def _pick(rng: np.random.Generator, values: tuple[str, ...], n: int, p=None, nulls: float = 0.0) -> pa.Array:
    idx = rng.choice(len(values), n, p=p)
    mask = rng.random(n) < nulls if nulls else None
    return pa.array(values).take(pa.array(idx, mask=mask))


def _sums_within(groups: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Running sums of ``steps``, starting again at each new value of the sorted ``groups``."""
    total = np.cumsum(steps)
    if not len(steps):
        return total
    first = np.r_[True, groups[1:] != groups[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(steps)), 0))
    return total - total[start] + steps[start]


def _products(rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "product_id": np.arange(1, PRODUCTS + 1, dtype=np.int64),
        "category": _pick(rng, CATEGORIES, PRODUCTS),
        "brand": pa.array([f"brand_{b:03d}" for b in rng.integers(1, 151, PRODUCTS)]),
        "list_price": np.round(rng.lognormal(3.5, 0.8, PRODUCTS) + 1.0, 2),
    })  # fmt: skip


def _customers(rng: np.random.Generator, n: int) -> tuple[pa.Table, pa.Table]:
    ids = np.arange(1, n + 1, dtype=np.int64)
    signup = np.datetime64("2020-01-01") + rng.integers(0, 4 * 365, n)
    customers = pa.table({
        "customer_id": ids,
        "name": pa.array([f"Customer {i:07d}" for i in ids]),
        "region": _pick(rng, REGIONS, n),
        "segment": _pick(rng, SEGMENTS, n),
        "signup_date": pa.array(signup.astype("datetime64[D]")),
    })  # fmt: skip
    # each update strictly later than the one before, so versions never share a valid_from
    per = rng.choice(4, n, p=[0.6, 0.2, 0.12, 0.08])
    who = np.repeat(np.arange(n), per)
    since_signup = _sums_within(who, rng.integers(1, 200, len(who)))
    updates = pa.table({
        "customer_id": ids[who],
        "region": _pick(rng, REGIONS, len(who)),
        "segment": _pick(rng, SEGMENTS, len(who)),
        "updated_at": pa.array((signup[who] + since_signup).astype("datetime64[D]")),
    })  # fmt: skip
    return customers, updates


def _orders(rng: np.random.Generator, rows: int, customers: int, list_price: np.ndarray) -> pa.Table:
    # a tenth of the customers never order: semi and anti joins then split them
    buyers = max(1, int(customers * 0.9))
    product = rng.integers(1, PRODUCTS + 1, rows)
    no_product = rng.random(rows) < 0.01
    price = np.round(list_price[product - 1] * rng.uniform(0.6, 1.05, rows), 2)
    return pa.table({
        "order_id": np.arange(1, rows + 1, dtype=np.int64),
        "customer_id": rng.integers(1, buyers + 1, rows),
        "product_id": pa.array(product, mask=no_product),
        "ts": _timestamps(np.sort(rng.integers(0, SPAN_SECONDS, rows))),
        "quantity": rng.integers(1, 6, rows).astype(np.int32),
        "price": price,
        "status": _pick(rng, STATUSES, rows, p=[0.8, 0.1, 0.05, 0.05], nulls=0.02),
    })  # fmt: skip


def _returns(rng: np.random.Generator, orders: pa.Table) -> pa.Table:
    n = max(1, round(orders.num_rows * 0.03))
    which = np.sort(rng.choice(orders.num_rows, n, replace=False))
    ts = orders["ts"].to_numpy().astype("datetime64[s]")[which] - START
    amount = orders["price"].to_numpy()[which] * orders["quantity"].to_numpy()[which]
    return pa.table({
        "return_id": np.arange(1, n + 1, dtype=np.int64),
        "order_id": orders["order_id"].to_numpy()[which],
        "return_ts": _timestamps(ts.astype(np.int64) + rng.integers(86_400, 30 * 86_400, n)),
        "reason": _pick(rng, REASONS, n),
        "refund": np.round(amount * rng.uniform(0.5, 1.0, n), 2),
    })  # fmt: skip


def _events(rng: np.random.Generator, rows: int, users: int) -> pa.Table:
    unique = max(1, round(rows / 1.05))
    # events come in bursts of about six, a few minutes apart (less than a session's gap)
    sessions = max(1, unique // 6)
    session = np.sort(rng.integers(0, sessions, unique))
    gaps = np.minimum(rng.exponential(240.0, unique), 1_500).astype(np.int64)
    ts = rng.integers(0, SPAN_SECONDS, sessions)[session] + _sums_within(session, gaps)
    user = rng.integers(1, users + 1, sessions)[session]
    ingest = ts + rng.integers(0, 120, unique)
    kind = rng.choice(len(KINDS), unique, p=[0.6, 0.25, 0.1, 0.05])
    value = np.round(rng.gamma(2.0, 20.0, unique), 2)
    # a duplicate delivery repeats an event, each at most once, with a later ingest time
    again = rng.choice(unique, rows - unique, replace=False)
    event_id = np.arange(1, unique + 1, dtype=np.int64)
    shuffle = rng.permutation(rows)

    def both(a: np.ndarray, later: np.ndarray | None = None) -> np.ndarray:
        return np.concatenate([a, a[again] if later is None else later])[shuffle]

    return pa.table({
        "event_id": both(event_id),
        "user_id": both(user),
        "ts": _timestamps(both(ts)),
        "ingest_ts": _timestamps(both(ingest, ingest[again] + rng.integers(1, 600, len(again)))),
        "kind": pa.array(KINDS).take(pa.array(both(kind))),
        "value": both(value),
    })  # fmt: skip


def _write_json_lines(table: pa.Table, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for row in table.to_pylist():
            out.write(json.dumps(row) + "\n")


def generate(rows: int, directory: str | Path) -> Path:
    """Write the shop's tables for ``rows`` orders into ``directory/rows<rows>/``; return that path.

    The same ``rows`` always give the same files, byte for byte. A directory holding
    the ``.done`` marker (written last) is reused as it is.
    """
    rows = _check_rows(rows)
    target = Path(directory) / f"rows{rows}"
    if (target / DONE).is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    # a generator per table: a table's rows do not depend on how the others were drawn
    rng = {name: np.random.default_rng([SEED, i]) for i, name in enumerate(TABLES)}
    products = _products(rng["products"])
    customers, updates = _customers(rng["customers"], max(1, rows // 20))
    orders = _orders(rng["orders"], rows, customers.num_rows, products["list_price"].to_numpy())
    pq.write_table(orders, target / FILES["orders"])
    pq.write_table(_returns(rng["returns"], orders), target / FILES["returns"])
    pq.write_table(_events(rng["events"], rows, customers.num_rows), target / FILES["events"])
    pacsv.write_csv(customers, target / FILES["customers"])
    pacsv.write_csv(updates, target / FILES["customer_updates"])
    _write_json_lines(products, target / FILES["products"])
    (target / DONE).write_text("")
    return target


def register(spark: SparkSession, path: str | Path) -> None:
    """Register every table under ``path`` (as :func:`generate` wrote it) as a temporary view named after it."""
    root = Path(path)
    missing = [FILES[t] for t in TABLES if not (root / FILES[t]).is_file()]
    if missing:
        raise FileNotFoundError(f"no pipeline data {', '.join(missing)} under {root}; run generate first")
    for table in TABLES:
        location = str(root / FILES[table])
        if location.endswith(".csv"):
            df = spark.read.schema(SCHEMAS[table]).option("header", True).csv(location)
        elif location.endswith(".json"):
            df = spark.read.schema(SCHEMAS[table]).json(location)
        else:
            df = spark.read.parquet(location)
        df.createOrReplaceTempView(table)


def _revenue(orders: DataFrame) -> DataFrame:
    # money in decimals: sums come out equal whatever order Spark adds them in
    return orders.withColumn("revenue", F.col("price").cast("decimal(10,2)") * F.col("quantity"))


def _sold(spark: SparkSession) -> DataFrame:
    return _revenue(spark.table("orders").where(F.col("status").isin("completed", "shipped")))


def _category_label(category):
    # no type hints: PySpark would take the function for a pandas UDF
    return "Unknown" if category is None else category.replace("_", " ").title()


def _discount(price: pd.Series, list_price: pd.Series) -> pd.Series:
    return (1.0 - price / list_price).clip(-1.0, 1.0)


def _log_amount(amount: pd.Series) -> pd.Series:
    return np.log1p(amount)


def etl_star(spark: SparkSession) -> DataFrame:
    """Completed orders since February joined to customers (inner) and products (left), a
    Python UDF naming categories, five aggregates per region and category (one distinct),
    the top 3 categories per region by a rank window, a union with per-region totals over
    the same join, and the first 15 rows in order."""
    orders = _revenue(
        spark.table("orders").where(
            (F.col("status") == "completed") & (F.col("ts") >= F.lit("2024-02-01").cast("timestamp"))
        )
    )
    joined = (
        orders.join(spark.table("customers"), "customer_id")
        .join(spark.table("products"), "product_id", "left")
        .withColumn("category_label", F.udf(_category_label, "string")("category"))
    )
    measures = [
        F.count("order_id").alias("orders"),
        F.sum("revenue").alias("revenue"),
        F.avg("price").alias("avg_price"),
        F.max("quantity").alias("max_quantity"),
        F.countDistinct("customer_id").alias("customers"),
    ]
    by_category = joined.groupBy("region", "category_label").agg(*measures)
    best = Window.partitionBy("region").orderBy(F.desc("revenue"), "category_label")
    top = by_category.withColumn("rank", F.rank().over(best)).where(F.col("rank") <= 3)
    totals = joined.groupBy("region").agg(*measures)
    totals = totals.select(
        "region", F.lit("(all)").alias("category_label"), *totals.columns[1:], F.lit(0).alias("rank")
    )
    return top.unionByName(totals).orderBy("region", "rank", "category_label").limit(15)


def pandas_features(spark: SparkSession) -> DataFrame:
    """Per-order features from two pandas UDFs (Series to Series: the discount off the
    list price, the log of the amount), aggregated per category and discount band."""
    discount = F.pandas_udf(_discount, "double")
    log_amount = F.pandas_udf(_log_amount, "double")
    features = (
        _sold(spark)
        .join(spark.table("products"), "product_id")
        .withColumn("discount", discount("price", "list_price"))
        .withColumn("log_amount", log_amount(F.col("price") * F.col("quantity")))
        .withColumn("band", F.when(F.col("discount") >= 0.25, "deep").when(F.col("discount") >= 0.1, "some"))
    )
    return features.groupBy("category", F.coalesce("band", F.lit("none")).alias("band")).agg(
        F.count("*").alias("orders"),
        F.avg("discount").alias("avg_discount"),
        F.sum("log_amount").alias("log_amount"),
        F.sum("revenue").alias("revenue"),
    )


def running_totals(spark: SparkSession) -> DataFrame:
    """Per customer over time: the running revenue, a 3-order moving average, the orders
    of the last 30 days (a range frame) and the days since the previous order (``lag``)."""
    orders = _sold(spark)
    # order_id breaks ties in ts: a running total must not depend on how ties are sorted
    by_time = Window.partitionBy("customer_id").orderBy("ts", "order_id")
    last_30_days = Window.partitionBy("customer_id").orderBy(F.col("ts").cast("long")).rangeBetween(-30 * 86_400, 0)
    return orders.select(
        "customer_id",
        "order_id",
        "ts",
        "revenue",
        F.sum("revenue").over(by_time.rowsBetween(Window.unboundedPreceding, 0)).alias("running_revenue"),
        F.avg("revenue").over(by_time.rowsBetween(-2, 0)).alias("moving_avg_3"),
        F.count("order_id").over(last_30_days).alias("orders_30d"),
        F.datediff("ts", F.lag("ts").over(by_time)).alias("days_since_previous"),
    )


def regional_running(spark: SparkSession) -> DataFrame:
    """Per region over time (five regions: partitions of a fifth of the orders each):
    each sold order's running revenue and running order count in its region, and its
    revenue's rank within the region."""
    sold = _sold(spark).join(spark.table("customers").select("customer_id", "region"), "customer_id")
    by_time = Window.partitionBy("region").orderBy("ts", "order_id")
    so_far = by_time.rowsBetween(Window.unboundedPreceding, 0)
    return sold.select(
        "region",
        "order_id",
        "ts",
        "revenue",
        F.sum("revenue").over(so_far).alias("region_revenue"),
        F.count("order_id").over(so_far).alias("region_orders"),
        F.rank().over(Window.partitionBy("region").orderBy(F.desc("revenue"))).alias("revenue_rank"),
    )


def order_features(spark: SparkSession) -> DataFrame:
    """Per sold order, features standardized over all of them, as a model's input is:
    the quantity's z-score, the revenue above the average, the order's share of all
    revenue and its revenue's percentile (windows over the whole input)."""
    everything = Window.partitionBy()
    quantity = F.col("quantity").cast("double")
    return _sold(spark).select(
        "order_id",
        "customer_id",
        ((quantity - F.avg(quantity).over(everything)) / F.stddev(quantity).over(everything)).alias("quantity_z"),
        (F.col("revenue") - F.avg("revenue").over(everything)).alias("revenue_above_avg"),
        (F.col("revenue") / F.sum("revenue").over(everything)).alias("revenue_share"),
        F.percent_rank().over(Window.orderBy("revenue", "order_id")).alias("revenue_percentile"),
    )


def monthly_distinct(spark: SparkSession) -> DataFrame:
    """Distinct products and active days per customer and month."""
    orders = spark.table("orders").withColumn("month", F.date_format("ts", "yyyy-MM"))
    return orders.groupBy("customer_id", "month").agg(
        F.count("*").alias("orders"),
        F.countDistinct("product_id").alias("products"),
        F.countDistinct(F.to_date("ts")).alias("active_days"),
    )


def union_rollup(spark: SparkSession) -> DataFrame:
    """Orders and revenue by region, by category and by month over one shared join,
    unioned with a column naming the dimension."""
    joined = (
        _sold(spark)
        .join(spark.table("customers"), "customer_id")
        .join(spark.table("products"), "product_id")
        .withColumn("month", F.date_format("ts", "yyyy-MM"))
    )

    def by(column: str) -> DataFrame:
        return (
            joined.groupBy(F.col(column).alias("key"))
            .agg(F.count("*").alias("orders"), F.sum("revenue").alias("revenue"))
            .select(F.lit(column).alias("dimension"), "key", "orders", "revenue")
        )

    return by("region").unionByName(by("category")).unionByName(by("month"))


def _latest_events(spark: SparkSession) -> DataFrame:
    latest_first = Window.partitionBy("event_id").orderBy(F.desc("ingest_ts"))
    deliveries = spark.table("events").withColumn("delivery", F.row_number().over(latest_first))
    return deliveries.where(F.col("delivery") == 1).drop("delivery")


def dedup_events(spark: SparkSession) -> DataFrame:
    """Events delivered more than once kept once: the latest delivery (``row_number``
    over the event id by ingest time)."""
    return _latest_events(spark)


def sessionize(spark: SparkSession) -> DataFrame:
    """Deduplicated events cut into sessions per user (a new one after 30 minutes
    without events: ``lag`` and a running sum), with per-session aggregates."""
    by_time = Window.partitionBy("user_id").orderBy("ts", "event_id")
    seconds = F.col("ts").cast("long")
    gap = seconds - F.lag(seconds).over(by_time)
    starts = F.when(gap.isNull() | (gap > SESSION_GAP_SECONDS), 1).otherwise(0)
    events = _latest_events(spark).withColumn("starts", starts)
    events = events.withColumn("session", F.sum("starts").over(by_time.rowsBetween(Window.unboundedPreceding, 0)))
    return events.groupBy("user_id", "session").agg(
        F.min("ts").alias("session_start"),
        F.max("ts").alias("session_end"),
        F.count("*").alias("events"),
        F.countDistinct("kind").alias("kinds"),
        F.sum("value").alias("value"),
        F.max((F.col("kind") == "purchase").cast("int")).alias("purchased"),
    )


def scd2_customers(spark: SparkSession) -> DataFrame:
    """A slowly changing dimension of type 2: each customer's versions (signup, then
    every update) with valid_from, valid_to (the next version's ``lead``) and is_current."""
    customers = spark.table("customers")
    first = customers.select("customer_id", "region", "segment", F.col("signup_date").alias("valid_from"))
    changes = spark.table("customer_updates").select(
        "customer_id", "region", "segment", F.col("updated_at").alias("valid_from")
    )
    by_time = Window.partitionBy("customer_id").orderBy("valid_from")
    versions = (
        first.unionByName(changes)
        .withColumn("version", F.row_number().over(by_time))
        .withColumn("valid_to", F.lead("valid_from").over(by_time))
        .withColumn("is_current", F.col("valid_to").isNull())
    )
    return versions.join(customers.select("customer_id", "name"), "customer_id")


def rfm(spark: SparkSession) -> DataFrame:
    """RFM features per customer (days since the last order, orders, revenue) and their
    quartiles (``ntile``) within the customer's region."""
    per_customer = (
        _sold(spark)
        .groupBy("customer_id")
        .agg(
            F.datediff(F.lit(REFERENCE_DATE).cast("date"), F.max(F.to_date("ts"))).alias("recency_days"),
            F.countDistinct("order_id").alias("frequency"),
            F.sum("revenue").alias("monetary"),
        )
    )
    scored = per_customer.join(spark.table("customers").select("customer_id", "region"), "customer_id")
    region = Window.partitionBy("region")
    # customer_id breaks ties: ntile would otherwise split tied customers arbitrarily
    for score, order in (("r", F.desc("recency_days")), ("f", F.col("frequency")), ("m", F.col("monetary"))):
        scored = scored.withColumn(f"{score}_score", F.ntile(4).over(region.orderBy(order, "customer_id")))
    return scored.withColumn("rfm", F.concat_ws("", "r_score", "f_score", "m_score"))


def top_products(spark: SparkSession) -> DataFrame:
    """The 5 best-selling products per category by revenue (a rank window), joined back
    to the products' brand and list price."""
    products = spark.table("products")
    sales = (
        _sold(spark)
        .groupBy("product_id")
        .agg(F.sum("revenue").alias("revenue"), F.sum("quantity").alias("units"), F.count("*").alias("orders"))
    )
    # product_id breaks ties, so at most 5 per category however revenues tie
    best = Window.partitionBy("category").orderBy(F.desc("revenue"), "product_id")
    ranked = sales.join(products.select("product_id", "category"), "product_id")
    top = ranked.withColumn("rank", F.rank().over(best)).where(F.col("rank") <= 5)
    return top.join(products.select("product_id", "brand", "list_price"), "product_id")


def customers_without_returns(spark: SparkSession) -> DataFrame:
    """Customers who ordered (a left semi join with orders) and returned nothing (a left
    anti join with the customers of returned orders)."""
    orders = spark.table("orders")
    returned = spark.table("returns").join(orders.select("order_id", "customer_id"), "order_id")
    ordered = spark.table("customers").join(orders, "customer_id", "left_semi")
    return ordered.join(returned.select("customer_id"), "customer_id", "left_anti")


def monthly_pivot(spark: SparkSession) -> DataFrame:
    """Revenue per category with one column per month (a pivot over the months given)."""
    sold = _sold(spark).join(spark.table("products"), "product_id")
    sold = sold.withColumn("month", F.date_format("ts", "yyyy-MM"))
    return sold.groupBy("category").pivot("month", list(MONTHS)).agg(F.sum("revenue"))


PIPELINES: dict[str, Callable[[SparkSession], DataFrame]] = {
    "etl_star": etl_star,
    "pandas_features": pandas_features,
    "running_totals": running_totals,
    "regional_running": regional_running,
    "order_features": order_features,
    "monthly_distinct": monthly_distinct,
    "union_rollup": union_rollup,
    "dedup_events": dedup_events,
    "sessionize": sessionize,
    "scd2_customers": scd2_customers,
    "rfm": rfm,
    "top_products": top_products,
    "customers_without_returns": customers_without_returns,
    "monthly_pivot": monthly_pivot,
}
# Pipelines whose result is ordered: their answers compare as lists, the others as multisets.
ORDERED = frozenset({"etl_star"})
