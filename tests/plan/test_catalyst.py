"""The bridge: reading Spark's own accounting, building rid columns as Catalyst nodes."""

from __future__ import annotations

import logging
import threading

import pyarrow.parquet as pq
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import Window
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov.bench import tpch
from sparkprov.plan import catalyst, references
from sparkprov.plan.catalyst import Bridge, task_seconds
from sparkprov.sources.identity import ROW_BITS, rid_column

from .conftest import round_trips


def test_task_seconds_counts_the_stages_of_the_jobs_run_since(spark):
    newest, _ = task_seconds(spark)
    # nothing ran: nothing counted, the newest stage unchanged
    assert task_seconds(spark, newest) == (newest, (0.0, 0.0, 0.0))
    # a shuffle: two stages, both counted, with the CPU their tasks used
    spark.range(200_000, numPartitions=2).groupBy((F.col("id") % 7).alias("k")).count().collect()
    later, (run, cpu, gc) = task_seconds(spark, newest)
    assert later >= newest + 2
    assert run > 0 and cpu > 0 and gc >= 0
    # counted once: asking again from the newest stage finds nothing more
    assert task_seconds(spark, later) == (later, (0.0, 0.0, 0.0))


def _leaf(bridge, df):
    leaf = bridge.analyzed(df)
    while bridge.children(leaf):
        (leaf,) = bridge.children(leaf)
    return leaf


def test_file_rids_built_in_catalyst_are_the_rids_traces_read(spark, tmp_path):
    # several files: a file number and a row index; traces read source rows back with
    # sources.rid_column, so both must give each row the same rid
    path = str(tmp_path / "t")
    spark.range(60).repartition(3).write.parquet(path)
    bridge = Bridge(spark)
    df = spark.read.parquet(path)
    leaf = _leaf(bridge, df)
    files = sorted(bridge.files(bridge.file_relation(leaf)))
    assert len(files) == 3
    paths = [p for p, _, _ in files]
    got = bridge.to_dataframe(bridge.with_file_rids(leaf, paths, ROW_BITS, "rid")).select("id", "rid")
    expected = df.select("id", rid_column(files).alias("rid"))
    assert sorted(got.collect()) == sorted(expected.collect())
    assert {r["rid"] >> ROW_BITS for r in got.collect()} == {0, 1, 2}
    # a file the capture did not list fails the query, naming the file
    missing = bridge.to_dataframe(bridge.with_file_rids(leaf, paths[:2], ROW_BITS, "rid"))
    with pytest.raises(Exception, match="file not known to the capture"):
        missing.collect()
    # one file: the row index alone
    one = _leaf(bridge, spark.read.parquet(paths[0]))
    rids = [r["rid"] for r in bridge.to_dataframe(bridge.with_file_rids(one, paths[:1], ROW_BITS, "rid")).collect()]
    assert sorted(rids) == list(range(len(rids)))


def test_file_rids_stay_right_when_row_groups_are_skipped_and_on_partitioned_sources(spark, tmp_path):
    # the row index is read as a column of its own, not through _metadata: a filter the
    # reader pushes into the files skips row groups, and a partitioned source puts its
    # partition columns after the data columns; the rids must still be the ones traces read
    bridge = Bridge(spark)
    one, parts = str(tmp_path / "one"), str(tmp_path / "parts")
    spark.range(50_000).coalesce(1).write.option("parquet.block.size", 16_384).parquet(one)
    spark.range(300).withColumn("p", F.col("id") % 3).write.partitionBy("p").parquet(parts)
    (one_file,) = spark.read.parquet(one).inputFiles()
    assert pq.ParquetFile(one_file.removeprefix("file:")).num_row_groups > 4
    plans = []
    for path, where in [(one, "id > 40000 and id < 40050"), (parts, "p = 1 and id > 100")]:
        df = spark.read.parquet(path)
        files = sorted(bridge.files(bridge.file_relation(_leaf(bridge, df))))
        paths = [p for p, _, _ in files]
        got = bridge.to_dataframe(bridge.with_file_rids(_leaf(bridge, df), paths, ROW_BITS, "rid")).where(where)
        assert got.columns == [*df.columns, "rid"]
        expected = df.where(where).select(*df.columns, rid_column(files).alias("rid"))
        assert sorted(got.collect()) == sorted(expected.collect()) and got.count() > 0
        plans.append(got._jdf.queryExecution().executedPlan().toString())
    # one file: no _metadata struct is built per row; several: only for the file path
    assert "named_struct" not in plans[0]
    assert "named_struct(file_path" in plans[1]


def test_a_one_file_leaf_built_in_the_jvm_reads_the_rids_python_builds(spark, tmp_path):
    # one round trip (a Java helper compiled once) instead of about fifteen; the same
    # columns and rids, partition columns after the index, as the Python-built leaf
    path = str(tmp_path / "t")
    spark.range(500).withColumn("p", F.lit(7)).coalesce(1).write.partitionBy("p").parquet(path)
    df = spark.read.parquet(path)
    results = []
    for helper in (True, False):
        bridge = Bridge(spark)
        if not helper:
            bridge._leaves = False  # as when the helper could not be compiled
        leaf = _leaf(bridge, df)
        files = [p for p, _, _ in bridge.files(bridge.file_relation(leaf))]
        assert len(files) == 1
        got = bridge.to_dataframe(bridge.with_file_rids(leaf, files, ROW_BITS, "rid"))
        assert got.columns == ["id", "p", "rid"]
        results.append(sorted(got.where("id % 7 = 3").collect()))
    assert bridge._leaves is False and Bridge(spark)._leaves_helper()
    expected = df.where("id % 7 = 3").select("id", "p", rid_column([(files[0], 0, 0)]))
    assert results[0] == results[1] == sorted(expected.collect())
    # a data column named as the reader's row index column hides it: refused either way
    hidden = str(tmp_path / "hidden")
    spark.range(3).withColumnRenamed("id", "_tmp_metadata_row_index").coalesce(1).write.parquet(hidden)
    for helper in (True, False):
        bridge = Bridge(spark)
        if not helper:
            bridge._leaves = False
        leaf = _leaf(bridge, spark.read.parquet(hidden))
        with pytest.raises(sp.UnsupportedOperation, match="hides the row index"):
            bridge.with_file_rids(leaf, [p for p, _, _ in bridge.files(bridge.file_relation(leaf))], ROW_BITS, "rid")


def test_a_checked_dataframe_skips_resolution_but_not_the_checks(spark):
    bridge = Bridge(spark)
    child = bridge.analyzed(spark.range(5).withColumn("x", F.col("id") * 2))
    plan = bridge.project(bridge.output(child)[::-1], child)  # built, never analyzed
    assert sorted(bridge.checked_dataframe(plan).collect()) == sorted(bridge.to_dataframe(plan).collect())
    assert bridge.checked_dataframe(plan).columns == ["x", "id"]
    assert not plan.analyzed()  # a copy was marked analyzed, not the plan given
    # an attribute its child does not give is refused, as analysis refuses it
    other = bridge.output(bridge.analyzed(spark.range(3)))[0]
    broken = bridge.project([other], bridge.analyzed(spark.range(5)))
    with pytest.raises(Exception, match="MISSING_ATTRIBUTES|missing"):
        bridge.checked_dataframe(broken)


def _walk(bridge, node, seen):
    kids = bridge.children(node)
    seen.append(
        (
            bridge.node_name(node),
            bridge.simple_string(node),
            [bridge.has_pattern(node, p) for p in ("PLAN_EXPRESSION", "GENERATOR", "SCALAR_SUBQUERY")],
            None if kids else bridge.output_ids(node),  # a leaf's key (its source's, for capture)
        )
    )
    for kid in kids:
        _walk(bridge, kid, seen)
    return seen


def _query(spark):
    left = spark.range(6).where("id > 1").withColumn("pair", F.array("id", "id"))
    right = spark.range(4).select(F.explode(F.array("id", F.lit(9))).alias("v"))
    joined = left.join(right, F.col("id") == F.col("v")).where(
        F.col("id") < F.expr("(SELECT max(id) FROM range(3))")  # a scalar subquery on every line
    )
    return joined.groupBy("v").count()


def test_a_plans_whole_tree_comes_in_one_round_trip(spark, monkeypatch):
    bridge = Bridge(spark)
    plan = bridge.optimized(bridge.analyzed(_query(spark)))
    with bridge.remembering():
        bridge.prefetch(plan)  # compiled once per JVM, on first use
    expected = _walk(Bridge(spark), plan, [])  # Py4J's own answers, node by node
    assert len(expected) > 8 and any(kinds[2] for _, _, kinds, _ in expected)
    assert any(kinds[1] for _, _, kinds, _ in expected)  # the explode's generator
    assert any(ids and "#" in ids for *_, ids in expected)  # name#id of the leaves' columns

    with bridge.remembering():
        sent = round_trips(monkeypatch)
        bridge.prefetch(plan)
        walked = _walk(bridge, plan, [])
        assert len(sent) == 1  # names, children, descriptions and patterns of every node, leaves' outputs
        bridge.prefetch(bridge.children(plan)[0])  # already known: nothing asked
        assert len(sent) == 1
        monkeypatch.undo()
    assert walked == expected
    # outside a walk nothing is remembered, so nothing is fetched ahead
    sent = round_trips(monkeypatch)
    bridge.prefetch(plan)
    assert sent == []


def test_without_the_compiled_walker_trees_are_read_node_by_node(spark, monkeypatch, caplog):
    monkeypatch.delenv(references.STRICT)
    monkeypatch.setattr(references, "_COMPILED", {})
    monkeypatch.setattr(references, "_SOURCES", {"SparkprovTree": "public class SparkprovTree { not java }"})
    bridge = Bridge(spark)
    plan = bridge.analyzed(_query(spark))
    expected = _walk(Bridge(spark), plan, [])
    with bridge.remembering(), caplog.at_level("WARNING", logger="sparkprov"):
        bridge.prefetch(plan)
        assert _walk(bridge, plan, []) == expected
    assert "could not compile the JVM helper SparkprovTree" in caplog.text


def test_analysis_errors_are_not_logged_from_a_quiet_block_but_still_raised(spark):
    from pyspark.logger import PySparkLogger  # PySpark 4's (3.5 logs nothing as it raises)

    logged: list[logging.LogRecord] = []
    collect = logging.Handler()
    collect.emit = logged.append
    logger = PySparkLogger.getLogger("DataFrameQueryContextLogger")
    logger.addHandler(collect)

    def fail() -> None:
        with pytest.raises(AnalysisException, match="nope"):
            spark.range(1).select(F.col("nope")).schema  # noqa: B018

    try:
        fail()
        assert len(logged) == 1  # PySpark logs it as it raises
        with catalyst.quiet_analysis():
            fail()
            # only this thread's: another thread's errors are still logged
            other = threading.Thread(target=fail)
            other.start()
            other.join()
        assert len(logged) == 2 and logged[1].thread == other.ident
        fail()
        assert len(logged) == 3  # the filter is gone after the block
    finally:
        logger.removeHandler(collect)


def test_capture_optimizes_under_settings_of_its_own_leaving_the_sessions_alone(spark, monkeypatch):
    # a query planned in another thread meanwhile (a lazy capture's own output) must be
    # optimized as the user set the session, not with capture's excluded rules
    bridge = Bridge(spark)
    assert bridge.optimizes_apart()
    monkeypatch.setattr(Bridge, "settings", lambda *_: pytest.fail("the session's settings were changed"))
    counted = (
        spark.range(6).withColumn("g", F.col("id") % 2).withColumn("n", F.count("*").over(Window.partitionBy("g")))
    )
    plan = bridge.analyzed(counted.select("id", (F.lit(1) + F.lit(2)).alias("three")))
    # the rules that fold 1 + 2 (3.5's ReorderAssociativeOperator folds it too)
    folding = ",".join(
        f"org.apache.spark.sql.catalyst.optimizer.{rule}" for rule in ("ConstantFolding", "ReorderAssociativeOperator")
    )
    spark.conf.set("spark.sql.optimizer.excludedRules", folding)
    try:
        text = bridge.tree_string(bridge.optimized(plan))
        assert spark.conf.get("spark.sql.optimizer.excludedRules") == folding
    finally:
        spark.conf.unset("spark.sql.optimizer.excludedRules")
    # capture's settings: the window nothing reads kept (no column pruning) ...
    assert "Window [count(1)" in text
    # ... added to the user's own (the sum not folded)
    assert "(1 + 2) AS three" in text
    plain = spark._jsparkSession.sessionState().optimizer().execute(plan.clone()).treeString()
    assert "Window" not in plain and "3 AS three" in plain


def test_without_the_compiled_optimizer_helper_settings_change_for_a_moment(spark, tpch_dir, monkeypatch, caplog):
    expected = Bridge(spark)
    assert expected.optimizes_apart()
    monkeypatch.delenv(references.STRICT)
    monkeypatch.setattr(references, "_COMPILED", {})
    monkeypatch.setattr(references, "_SOURCES", {"SparkprovOptimize": "public class SparkprovOptimize { not java }"})
    bridge = Bridge(spark)
    with caplog.at_level("WARNING", logger="sparkprov"):
        assert not bridge.optimizes_apart()
    assert "could not compile the JVM helper SparkprovOptimize" in caplog.text
    # either way capture sees the same plans: the 22 TPC-H queries' included
    tpch.register(spark, tpch_dir)
    for df in [_query(spark)] + [spark.sql(tpch.query(n)) for n in range(1, tpch.N_QUERIES + 1)]:
        plan = bridge.inline_ctes(bridge.analyzed(df))
        assert bridge.tree_string(bridge.optimized(plan)) == expected.tree_string(expected.optimized(plan))
    assert spark.conf.get("spark.sql.optimizer.excludedRules", None) is None  # restored


def test_an_error_of_the_jvm_is_a_sparkprov_error_naming_the_call(spark):
    bridge = Bridge(spark)
    with pytest.raises(sp.SparkFailed, match="Bridge.to_dataframe: .*Dataset.ofRows") as raised:
        bridge.to_dataframe(bridge.jvm.java.lang.String("not a plan"))
    assert type(raised.value.__cause__).__module__ == "py4j.protocol"


def test_every_method_of_the_bridges_mixins_raises_jvm_errors_as_sparkprov_errors():
    # the mixins are not decorated themselves: Bridge's decorator wraps what they define
    for mixin in Bridge.__mro__[1:-1]:
        for name, defined in vars(mixin).items():
            if name.startswith("__"):
                continue
            wrapper = vars(Bridge)[name]
            assert getattr(wrapper, "__func__", wrapper).__wrapped__ is getattr(defined, "__func__", defined), name


def test_a_capture_keeps_every_method_it_calls_in_py4js_cache(spark, tmp_path):
    # Py4J's cache of resolved methods held 100 per JVM thread: a capture calling more
    # resolved them again by reflection on every call (a new thread: a new JVM thread)
    def cached() -> int:
        field = spark._jvm.java.lang.Class.forName("py4j.reflection.ReflectionEngine").getDeclaredField("cacheHolder")
        field.setAccessible(True)
        return field.get(None).get().size()

    sizes = []

    def capture() -> None:
        session = sp.LineageSession(spark, store=tmp_path / "store")
        t = session.source(spark.range(20).selectExpr("id", "id % 3 as k"), "t")
        joined = t.join(t.select("k", F.col("id").alias("w")), "k")
        session.capture(joined.groupBy("k").agg(F.sum("id"), F.countDistinct("w")), "sums")
        sizes.append(cached())

    thread = threading.Thread(target=capture)
    thread.start()
    thread.join()
    assert sizes and sizes[0] > 100
