"""JVM objects Python lets go of: released in batches by a background thread."""

from __future__ import annotations

import gc
import threading
import time

import py4j.clientserver as clientserver

from sparkprov.plan import references
from sparkprov.plan.catalyst import Bridge


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
