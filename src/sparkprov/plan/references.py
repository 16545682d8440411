"""The JVM objects Python lets go of, released in batches by a background thread.

Py4J keeps every JVM object a Python proxy refers to in its gateway's bindings, and
when the proxy is garbage collected it sends a command to drop it: one JVM round trip
per object, in whichever thread Python's garbage collector happens to run. A capture
reads and builds Catalyst plans through hundreds of proxies (TPC-H Q11: about 700), so
dropping them cost as much again as making them: about 0.1 s per capture of Q11 or
Q20, paid by the capture (or any later code) the collector ran in.

``release_in_batches(spark)`` sends the drops of that session's gateway to a queue
that one daemon thread empties, removing each batch of ids from the bindings with
three JVM calls, whatever its size. A dropped object stays in the JVM a few
milliseconds longer; nothing else changes. Proxies of any other gateway are released
as Py4J releases them.

>>> from pyspark.sql import SparkSession
>>> release_in_batches(SparkSession.builder.getOrCreate())  # idempotent
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

import py4j.java_gateway as _gateway
from py4j.finalizer import ThreadSafeFinalizer
from py4j.protocol import smart_decode
from pyspark.sql import SparkSession

log = logging.getLogger("sparkprov")

GATHER_S = 0.01  # a collection drops its proxies together: one batch for the burst
_LOCK = threading.Lock()
_RELEASERS: dict[Any, _Releaser] = {}  # by gateway client
_PY4J_RELEASE = _gateway._garbage_collect_object


def release_in_batches(spark: SparkSession) -> None:
    """Release the JVM objects of ``spark``'s gateway in batches, off the caller's path."""
    gateway = spark.sparkContext._gateway
    client = gateway._gateway_client
    with _LOCK:
        if client in _RELEASERS:
            return
        _RELEASERS[client] = _Releaser(client, gateway.java_gateway_server, spark._jvm)
        # Py4J's finalizers look this name up when they run, so every proxy (made
        # before or after) goes through _released
        _gateway._garbage_collect_object = _released


def _released(client: Any, target_id: str) -> None:
    # runs inside weakref callbacks, in any thread: no I/O, no lock (SimpleQueue.put
    # is safe there)
    releaser = _RELEASERS.get(client)
    if releaser is None:
        _PY4J_RELEASE(client, target_id)
    else:
        releaser.pending.put(target_id)


class _Releaser:
    def __init__(self, client: Any, server: Any, jvm: Any) -> None:
        self.pending: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._prefix = smart_decode(client.address) + smart_decode(client.port)
        # kept for the process's lifetime: no proxy of their own to release per batch
        self._keys = server.getGateway().getBindings().keySet()
        self._comma = jvm.java.util.regex.Pattern.compile(",")
        self._carried: list[str] = []  # the previous batch's own two proxies
        threading.Thread(target=self._run, name="sparkprov-py4j-release", daemon=True).start()

    def _run(self) -> None:
        while True:
            ids = [self.pending.get()]
            time.sleep(GATHER_S)
            while True:
                try:
                    ids.append(self.pending.get_nowait())
                except queue.Empty:
                    break
            try:
                self._drop(ids)
            except Exception:  # a stopped gateway: nothing left to release
                log.debug("sparkprov: releasing %d JVM objects failed", len(ids), exc_info=True)

    def _drop(self, ids: list[str]) -> None:
        for target_id in ids:
            ThreadSafeFinalizer.remove_finalizer(self._prefix + target_id)
        # the ids as one string, split in the JVM: a list passed from Python would cost
        # a round trip per element
        ids, self._carried = ids + self._carried, []
        split = self._comma.splitAsStream(",".join(ids))
        listed = split.toList()
        self._keys.removeAll(listed)
        # these two proxies are released with the next batch, not by a finalizer
        # (which would make a batch of their own, and so on)
        for proxy in (split, listed):
            ThreadSafeFinalizer.remove_finalizer(self._prefix + proxy._target_id)
            self._carried.append(proxy._target_id)
