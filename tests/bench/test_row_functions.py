"""``bench functions --suite rows``: each function measured plain, undeclared and
declared (the grouped top two also blackbox, the batch ones also vectorized, the rolling
means also with payloads kept), and its declared lineage narrower than the undeclared one."""

from __future__ import annotations

from pyspark.sql import functions as F

from sparkprov.bench.row_functions import FUNCTIONS, _measure, choose_keeps


def test_declared_functions_trace_fewer_rows(spark, session, tmp_path):
    data = str(tmp_path / "table")
    x = F.when(F.col("id") % 200 == 0, 0.0).otherwise(F.rand(1))  # the first row of each file an outlier
    spark.range(400).select("id", (F.col("id") % 10).alias("g"), x.alias("x")).write.parquet(data)
    table = session.source(spark.read.parquet(data), "table")
    for name in FUNCTIONS:
        r = _measure(session, table, tmp_path, name, repeat=1)
        traced = r["rows_behind_one_output_row"]
        # the first row of the cleaned batches is an outlier (x below 0.01), from its neighbours
        assert traced["declared"] == (2 if name in ("group top two", "cleaned batches") else 1), (name, traced)
        assert traced["undeclared"] > traced["declared"], (name, traced)
        assert r["declared_ratio"] > 0 and r["undeclared_ratio"] > 0
        if name == "group top two":  # found when asked: as exact as the declared one
            assert traced["blackbox"] == 2 and r["blackbox_ratio"] > 0, traced
            assert set(r["backward_s"]) == {"declared", "undeclared", "blackbox"}
        if name in ("shifted batches", "cleaned batches"):  # called once per batch: the same lineage
            assert traced["vectorized"] == traced["declared"] and r["vectorized_ratio"] > 0, traced
        if name == "group rolling means":  # payloads kept, map_p run when asked: the same lineage
            assert traced["kept payloads"] == traced["declared"] and r["kept_payloads_ratio"] > 0, traced
            assert set(r["lineage_bytes"]) == {"declared", "undeclared", "kept payloads"}, r


def test_keeps_chosen_within_the_budgets(spark, session, tmp_path):
    data = str(tmp_path / "table")
    spark.range(6000).select("id", (F.col("id") % 3).alias("g"), F.rand(1).alias("x")).write.parquet(data)
    table = session.source(spark.read.parquet(data), "table")
    free, halved = choose_keeps(session, table, repeat=1, ids=(0, 3001, 5999))
    assert free["max_disk"] is None and halved["max_disk"] == free["base"]["bytes"] / 2
    assert halved["keep"] == {"rolling": "payload"}, halved["explain"]  # 20 rows' pairs a row, or a payload
    assert halved["measured"]["bytes"] <= halved["max_disk"]
