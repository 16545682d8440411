"""Bad input to any public function raises a SparkprovError that says what was wrong.

Each case is what a user could mistype; the error must be one of sparkprov's (which
may also be a ValueError, KeyError or FileNotFoundError) and name the problem.
"""

from __future__ import annotations

import pytest

import sparkprov as sp
from sparkprov.store.catalog import Store


@pytest.fixture(scope="module")
def made(spark, tmp_path_factory):
    session = sp.LineageSession(spark, store=str(tmp_path_factory.mktemp("store")))
    df = session.source(spark.createDataFrame([("a", 1), ("b", 2)], ["k", "v"]), "nums")
    return session, df, session.capture(df.groupBy("k").sum("v"), "sums")


CASES = {
    "a session of something else": (lambda s, df, cap: sp.LineageSession("spark"), "must be a SparkSession"),
    "a store that is no path": (lambda s, df, cap: sp.LineageSession(s.spark, store=5), "a store is a directory"),
    "a store that is not there": (lambda s, df, cap: Store("/nonexistent/store", create=False), "no sparkprov store"),
    "capture of SQL text": (lambda s, df, cap: s.capture("select 1", "x"), "must be a DataFrame"),
    "a capture name with a slash": (lambda s, df, cap: s.capture(df, "a/b"), "invalid capture name"),
    "a capture name that is a number": (lambda s, df, cap: s.capture(df, 3), "invalid capture name"),
    "an unknown strategy": (lambda s, df, cap: s.capture(df, "x", strategy="fast"), "strategy must be one of"),
    "an unknown workload field": (lambda s, df, cap: s.capture(df, "x", workload={"nope": 1}), "unknown workload"),
    "a workload of another type": (lambda s, df, cap: s.capture(df, "x", workload=5), "must be a Workload"),
    "both path and table": (lambda s, df, cap: s.capture(df, "x", path="/tmp/a", table="t"), "not both"),
    "a source of something else": (lambda s, df, cap: s.source(5, "x"), "must be a DataFrame"),
    "a checkpoint of something else": (lambda s, df, cap: s.checkpoint(5, "x"), "must be a DataFrame"),
    "a capture not in the store": (lambda s, df, cap: s.load("nope"), "no capture named 'nope'"),
    "a version not in the store": (lambda s, df, cap: s.load("sums", 7), "no version 7"),
    "a version that is no number": (lambda s, df, cap: s.load("sums", "x"), "whole number"),
    "backward to an unknown source": (lambda s, df, cap: cap.backward("k = 'a'", "nope"), "no source 'nope'"),
    "an unknown engine": (lambda s, df, cap: cap.backward("k = 'a'", engine="fast"), "engine must be one of"),
    "a predicate that does not parse": (lambda s, df, cap: cap.backward("k = = 1"), "cannot parse predicate"),
    "rows of another type": (lambda s, df, cap: cap.backward(object()), "rows must be"),
    "rids that are not integers": (lambda s, df, cap: cap.backward(["a"]), "rids must be integers"),
    "where without a source": (lambda s, df, cap: cap.backward("k = 'a'", where="v > 1"), "give source"),
    "a predicate on no column": (lambda s, df, cap: cap.backward("nocol = 1", engine="spark"), "cannot evaluate"),
    "the same, embedded": (lambda s, df, cap: cap.backward("nocol = 1", engine="embedded"), "cannot evaluate"),
    "forward from an unknown source": (lambda s, df, cap: cap.forward("nope", "v > 1"), "no source 'nope'"),
    "forward with an unknown engine": (lambda s, df, cap: cap.forward("nums", "v > 1", engine="x"), "engine must"),
    "pairs of an unknown source": (lambda s, df, cap: cap.pairs("nope"), "no source 'nope'"),
    "a drill-down not declared": (lambda s, df, cap: cap.drill_down("k = 'a'", "nums"), "no drill-down"),
    "how without witnesses": (lambda s, df, cap: cap.how("k = 'a'"), "without witness"),
    "a cursor to an unknown source": (lambda s, df, cap: cap.lineage("k = 'a'", "nope"), "no source 'nope'"),
    "a step to an unknown source": (lambda s, df, cap: cap.lineage("k = 'a'").go_back("nope"), "no source 'nope'"),
    "a step to no position": (lambda s, df, cap: cap.lineage("k = 'a'").go_back(9), "no position 9"),
    "a step past the outputs": (lambda s, df, cap: cap.lineage("k = 'a'").go_next(), "already at the outputs"),
    "a replay of an unknown source": (lambda s, df, cap: cap.replay({"nope": df}), "no source 'nope'"),
    "a replay by no column": (lambda s, df, cap: cap.replay({"nums": df}, key="zz"), "not output columns"),
    "workload sources of another type": (lambda s, df, cap: sp.Workload(sources=5), "must be a list"),
    "a mark of something else": (lambda s, df, cap: sp.mark(5, "x"), "must be a DataFrame"),
    "an RDD context of something else": (lambda s, df, cap: sp.LineageContext("sc"), "must be a SparkContext"),
    "a text file that is not there": (lambda s, df, cap: s.rdd.textFile("/nonexistent/in.txt"), "no such file"),
    "a collection that is none": (lambda s, df, cap: s.rdd.parallelize(5), "collection"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_a_sparkprov_error_naming_it(made, case):
    call, says = CASES[case]
    with pytest.raises(sp.SparkprovError, match=says):
        call(*made)
