"""A small store for the page's tests, the page's server over it, and a real browser:
Debian's Chromium driven by Playwright (never a browser Playwright downloads)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyspark.sql.functions as F
import pytest

import sparkprov as sp
from sparkprov.errors import SparkprovError
from sparkprov.web.browser import launch
from sparkprov.web.server import UiServer

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("SPARKPROV_SCREENSHOTS", ROOT / "test-screenshots"))
# values a page that put them in as markup would run
SCRIPT = "<script>window.__pwned = 1</script>"
IMAGE = '<img src=x onerror="window.__pwned = 1">'
WHO = ["ann", "bob", SCRIPT, IMAGE]


@pytest.fixture(scope="session")
def ui_session(spark, tmp_path_factory) -> sp.LineageSession:
    """A store with two aggregates ('totals' by who, 'buckets' by id % 10), a filter with
    133 rows ('big') over a Parquet source whose values hold markup, and a failed
    capture ('broken')."""
    root = tmp_path_factory.mktemp("ui")
    rows = [(i, WHO[i % 4], i * 1.5) for i in range(200)]
    spark.createDataFrame(rows, "id long, who string, amount double").coalesce(2).write.parquet(str(root / "orders"))
    session = sp.LineageSession(spark, store=root / "store")
    orders = spark.read.parquet(str(root / "orders"))
    session.capture(orders.groupBy("who").agg(F.sum("amount").alias("total"), F.count("*").alias("n")), name="totals")
    session.capture(orders.filter("amount > 100").select("id", "who", "amount"), name="big")
    session.capture(orders.groupBy((F.col("id") % 10).alias("bucket")).count(), name="buckets")
    session.capture(orders.select("who").distinct(), name="whos", witnesses=True)
    # a mark: 'marked' reads the rows of its point 'pricey', kept as capture 'marked.pricey'
    session.capture(sp.mark(orders.where("amount > 150"), "pricey").groupBy("who").count(), name="marked")
    # two jobs: 'clean' writes what 'by_who' reads
    session.capture(orders.where("amount > 30"), name="clean", path=str(root / "clean"))
    session.capture(spark.read.parquet(str(root / "clean")).groupBy("who").count(), name="by_who")
    # slow to replay while SLOW_FLAG exists (a file the workers see): a job to cancel
    flag = str(root / "slow")

    def slow(who):
        import os
        import time

        if os.path.exists(flag):
            time.sleep(0.5)
        return who

    session.capture(orders.select(F.udf(slow, "string")("who").alias("who")).groupBy("who").count(), name="slow")
    session.slow_flag = root / "slow"
    session.store.commit_failed("broken", "the script raised ZeroDivisionError")
    return session


@pytest.fixture(scope="session")
def ui(ui_session):
    with UiServer(str(ui_session.store.root), port=0) as server:
        yield server


@pytest.fixture(scope="session")
def ui_replaying(ui_session):
    """The page served from the session that made the captures: what-if replays them."""
    with UiServer(str(ui_session.store.root), port=0, session=ui_session) as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        try:
            chromium = launch(p)
        except SparkprovError as exc:  # said once, plainly, not as a trace
            pytest.fail(f"the page's tests need a browser: {exc}", pytrace=False)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, request):
    """A fresh page (no cookies), its errors collected; a screenshot of it is saved
    when the test ends, named after the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda msg: msg.type == "error" and page.errors.append(msg.text))
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    context.close()
