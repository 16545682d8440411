"""The Spark line adapters: each call that differs between lines, made on this session's
line (make test-all-spark runs these on every line)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pyspark.sql import functions as F

from sparkprov.errors import SparkUnsupported
from sparkprov.plan.catalyst import Bridge
from sparkprov.plan.versions import SUPPORTED_LINES, line_of, python_eval_types, spark_version


def _nodes(bridge: Bridge, plan) -> list:
    return [plan] + [n for c in bridge.children(plan) for n in _nodes(bridge, c)]


def test_the_session_gets_the_adapter_of_its_line(spark):
    bridge = Bridge(spark)
    assert bridge.line is SUPPORTED_LINES[spark_version(spark)]
    assert bridge.line.name == ".".join(spark.version.split(".")[:2])


class _Context:  # a SparkContext's stand-in: line_of remembers a line per context
    pass


def test_other_lines_and_connect_sessions_are_refused():
    refused = r"the Spark lines 3\.5, 4\.0, 4\.1, 4\.2, 4\.3; this session runs Spark 3\.4\.1"
    with pytest.raises(SparkUnsupported, match=refused):
        line_of(SimpleNamespace(_jsparkSession=object(), _sc=_Context(), version="3.4.1"))
    with pytest.raises(SparkUnsupported, match="Spark Connect"):
        line_of(SimpleNamespace(version="4.3.0"))


def test_ctes_are_inlined(spark):
    bridge = Bridge(spark)
    query = spark.sql("WITH c AS (SELECT id FROM range(4)) SELECT a.id FROM c a JOIN c b ON a.id = b.id + 1")
    plan = bridge.inline_ctes(bridge.analyzed(query))
    names = {bridge.node_name(n) for n in _nodes(bridge, plan)}
    assert not names & {"WithCTE", "CTERelationDef", "CTERelationRef"}, names
    assert sorted(r.id for r in bridge.checked_dataframe(plan).collect()) == [1, 2, 3]


def test_a_deduplicate_node_keeps_one_row_per_key(spark):
    bridge = Bridge(spark)
    rows = spark.createDataFrame([(1, "a"), (1, "b"), (2, "c")], "k int, v string")
    plan = bridge.analyzed(rows)
    key = [a for a in bridge.output(plan) if bridge.attr_name(a) == "k"]
    kept = bridge.checked_dataframe(bridge.deduplicate(key, plan)).collect()
    assert sorted(r.k for r in kept) == [1, 2]


class _Echo:
    def eval(self, value):
        yield (value,)


class _Rows:
    def eval(self, row):
        yield (row["id"],)


def test_a_udtf_says_when_it_takes_whole_partitions(spark):
    bridge = Bridge(spark)
    spark.udtf.register("sp_versions_echo", F.udtf(_Echo, returnType="v long"))
    spark.udtf.register("sp_versions_rows", F.udtf(_Rows, returnType="v long"))
    spark.range(3).createOrReplaceTempView("sp_versions_t")

    def table_argument(sql: str):
        plan = bridge.optimized(bridge.analyzed(spark.sql(sql)))
        (node,) = [n for n in _nodes(bridge, plan) if bridge.node_name(n).endswith("EvalPythonUDTF")]
        return bridge.python_udtf(node)[1]

    assert table_argument("SELECT u.v FROM sp_versions_t t, LATERAL sp_versions_echo(t.id) u") is None
    assert "takes a table argument" in table_argument("SELECT * FROM sp_versions_rows(TABLE(sp_versions_t))")


def test_eval_types_a_line_lacks_are_left_out():
    assert python_eval_types("SQL_BATCHED_UDF", "SQL_NO_SUCH_UDF") == (100,)
