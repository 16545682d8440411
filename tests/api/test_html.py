"""What a notebook shows: captures, trace answers and cursors as HTML tables with
counts, every value escaped."""

from __future__ import annotations

import pyspark.sql.functions as F


def test_captures_traces_and_cursors_render_as_tables_with_counts(session, spark):
    df = spark.createDataFrame([("<script>x()</script>", 1), ("<script>x()</script>", 2), ("b", 5)], ["k", "v"])
    cap = session.capture(df.groupBy("k").agg(F.sum("v").alias("total")), name="sums")
    page = cap._repr_html_()
    assert "<b>capture sums</b> version 1" in page and "all exact" in page
    assert "<td>dataframe_0</td>" in page and "Aggregate" in page

    traced = cap.backward("total = 3")
    assert isinstance(traced, dict) and list(traced) == ["dataframe_0"]
    shown = traced._repr_html_()
    assert "<caption>dataframe_0: 2 rows</caption>" in shown
    assert "&lt;script&gt;x()&lt;/script&gt;" in shown and "<script>" not in shown

    cursor = cap.lineage("total = 5").go_back()
    assert "<caption>sums/dataframe_0: 1 row</caption>" in cursor._repr_html_()
