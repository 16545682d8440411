"""Py4J proxies in batches: released by a background thread, a collection's elements made in one round trip."""

from __future__ import annotations

import gc
import threading
import time

import py4j.clientserver as clientserver
from pyspark.sql import functions as F

from sparkprov.plan import references
from sparkprov.plan.catalyst import Bridge

from .conftest import round_trips


def _bindings(spark):
    return spark.sparkContext._gateway.java_gateway_server.getGateway().getBindings()


def _settle(bindings, at_most: int, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while (n := bindings.size()) > at_most and time.monotonic() < deadline:
        time.sleep(0.02)
    return n


def test_dropped_proxies_cost_the_caller_no_round_trip_and_leave_the_jvm(spark, monkeypatch):
    Bridge(spark)  # a bridge turns it on
    bindings = _bindings(spark)
    kept = spark._jvm.java.util.ArrayList()
    before = _settle(bindings, 0, timeout=0.5)
    made = [spark._jvm.java.lang.StringBuilder(f"x{i}") for i in range(300)]
    assert bindings.size() >= 300

    sent = []
    send = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        sent.append(command[:2])
        return send(self, command)

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", counting)
    del made
    gc.collect()
    # py4j would send 300 memory commands here, one per proxy
    assert sent.count("m\n") == 0
    monkeypatch.undo()
    # all 300 leave the JVM's bindings (the releaser keeps at most two of its own
    # for the next batch), and a proxy still held keeps working
    assert _settle(bindings, before + 2) <= before + 2
    kept.add("still here")
    assert kept.size() == 1
    # releasing does not feed itself: its own proxies go with the next batch, so once
    # settled, its thread sends nothing more (other tests' threads may)
    del kept
    gc.collect()
    time.sleep(3 * references.GATHER_S)  # its batch gathered and sent (the count alone may settle first)
    _settle(bindings, before + 1)
    from_releaser = []

    def releasing(self, command):
        if threading.current_thread().name == "sparkprov-py4j-release":
            from_releaser.append(command[:2])
        return send(self, command)

    monkeypatch.setattr(clientserver.ClientServerConnection, "send_command", releasing)
    time.sleep(0.3)
    assert from_releaser == []


def test_another_gateways_proxies_are_released_as_py4j_does(spark, monkeypatch):
    Bridge(spark)
    released = []
    monkeypatch.setattr(references, "_PY4J_RELEASE", lambda client, target: released.append(target))
    other = object()  # a client of no session sparkprov was given
    references._released(other, "o42")
    assert released == ["o42"]


def test_turned_on_once_per_gateway(spark):
    references.release_in_batches(spark)
    client = spark.sparkContext._gateway._gateway_client
    releaser = references._RELEASERS[client]
    references.release_in_batches(spark)
    Bridge(spark)
    assert references._RELEASERS[client] is releaser
    assert sum(1 for c in references._RELEASERS if c is client) == 1


def test_a_collections_elements_come_in_one_round_trip_and_are_released(spark, monkeypatch):
    jvm = spark._jvm
    bindings = _bindings(spark)
    built = jvm.java.util.ArrayList()
    for i in range(40):
        built.add(jvm.java.lang.StringBuilder(f"x{i}"))
    seq = jvm.org.apache.spark.api.python.PythonUtils.toSeq(built)
    references.elements(spark, seq)  # compiled once per JVM, on first use

    sent = round_trips(monkeypatch)
    proxies = references.elements(spark, seq)
    assert len(sent) == 1  # Py4J's own way: one for the size, one per element
    monkeypatch.undo()
    assert [p.toString() for p in proxies] == [f"x{i}" for i in range(40)]
    # the proxies are Py4J's own: in the gateway's bindings while held, released in
    # batches when Python drops them
    ids = [p._target_id for p in proxies]
    assert all(bindings.containsKey(i) for i in ids)
    del proxies
    gc.collect()
    deadline = time.monotonic() + 10
    while any(bindings.containsKey(i) for i in ids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(bindings.containsKey(i) for i in ids)


def test_a_plans_children_and_output_come_with_their_names_and_ids(spark, monkeypatch):
    bridge = Bridge(spark)
    left = spark.range(5).withColumnRenamed("id", "a")
    plan = bridge.analyzed(left.join(spark.range(3).withColumnRenamed("id", "b"), F.col("a") == F.col("b")))
    with bridge.remembering():
        sent = round_trips(monkeypatch)
        kids = bridge.children(plan)
        names = [bridge.node_name(k) for k in kids]
        out = bridge.output(plan)
        ids = [bridge.expr_id(a) for a in out]
        assert len(sent) == 2  # the children with their names, the output with its ids
        monkeypatch.undo()
    assert names == [k.nodeName() for k in kids] == ["Project", "Project"]
    assert [a.name() for a in out] == ["a", "b"]
    assert ids == [int(a.exprId().id()) for a in out]
    # Catalyst's estimate of the relations a plan reads, summed, in the same way
    leaves = plan.collectLeaves()
    assert bridge.leaf_bytes(plan) == sum(int(str(leaves.apply(i).stats().sizeInBytes())) for i in range(2))


def test_values_py4j_converts_take_its_own_path(spark):
    jvm = spark._jvm
    words = jvm.org.apache.spark.api.python.PythonUtils.toSeq(jvm.java.util.List.of("a", "b"))
    assert references.elements(spark, words) is None
    assert Bridge(spark).to_list(words) == ["a", "b"]


def test_without_the_compiled_lister_lists_are_read_one_element_at_a_time(spark, monkeypatch, caplog):
    monkeypatch.delenv(references.STRICT)
    monkeypatch.setattr(references, "_LISTERS", {})
    monkeypatch.setattr(references, "_COMPILED", {})
    monkeypatch.setattr(references, "_SOURCES", {"SparkprovElements": "public class SparkprovElements { not java }"})
    bridge = Bridge(spark)
    plan = bridge.analyzed(spark.range(3).union(spark.range(2)))
    with caplog.at_level("WARNING", logger="sparkprov"):
        assert [bridge.node_name(k) for k in bridge.children(plan)] == ["Range", "Range"]
    assert "one element per JVM call" in caplog.text
    assert [a.name() for a in bridge.output(plan)] == ["id"]


def test_a_pattern_a_node_lacks_is_not_asked_of_its_children(spark, monkeypatch):
    bridge = Bridge(spark)
    plan = bridge.analyzed(spark.range(5).where("id > 1").select((F.col("id") + 1).alias("x")))
    with bridge.remembering():
        assert not bridge.has_pattern(plan, "SCALAR_SUBQUERY")
        assert bridge.has_pattern(plan, "FILTER")
        (kid,) = bridge.children(plan)
        sent = round_trips(monkeypatch)
        assert not bridge.has_pattern(kid, "SCALAR_SUBQUERY")  # inherited: no round trip
        assert len(sent) == 0
        # a pattern the node has is asked of the child itself
        assert bridge.has_pattern(kid, "FILTER")
        assert len(sent) == 1


def test_an_answer_that_cannot_be_given_whole_takes_py4js_path(spark):
    jvm = spark._jvm
    first, second = jvm.java.lang.StringBuilder("a"), jvm.java.lang.StringBuilder("bc")
    seq = jvm.org.apache.spark.api.python.PythonUtils.toSeq(jvm.java.util.List.of(first, second))
    # a getter the elements do not have, a collection holding a string: no answer
    # (everything is read before any element is put in the bindings)
    assert references.described(spark, seq, None, ("length.nothing",)) is None
    mixed = jvm.org.apache.spark.api.python.PythonUtils.toSeq(jvm.java.util.List.of(first, "b"))
    assert references.elements(spark, mixed) is None
    assert Bridge(spark).to_list(mixed)[1] == "b"
    answered = references.described(spark, seq, None, ("length",))
    assert [(p.toString(), values) for p, values in answered] == [("a", ["1"]), ("bc", ["2"])]
