"""What ``LineageContext`` refuses before an RDD program runs."""

from __future__ import annotations

import pytest
from pyspark import SparkConf

import sparkprov as sp


def test_speculation_is_refused_by_name(spark, session, monkeypatch):
    # the SparkContext's settings as Spark reports them, speculation on (it cannot be
    # turned on in a running context: the scheduler reads it when it starts)
    conf = SparkConf(loadDefaults=False).setAll(spark.sparkContext.getConf().getAll()).set("spark.speculation", "True")
    monkeypatch.setattr(spark.sparkContext, "getConf", lambda: conf)
    with pytest.raises(sp.UnsupportedOperation, match=r"speculative task attempts \(spark.speculation=true\)") as e:
        sp.LineageContext(spark.sparkContext, session=session)
    assert "spark.speculation=false" in str(e.value) and "DataFrame capture" in str(e.value)
    monkeypatch.undo()
    words = sp.LineageContext(spark.sparkContext, session=session).parallelize(["a b", "b"]).flatMap(str.split)
    assert sorted(words.collect()) == ["a", "b", "b"]
