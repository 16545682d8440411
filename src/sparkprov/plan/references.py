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

Made in batches too: ``elements(spark, seq)`` gives the proxies of a Scala
collection's elements in one round trip, where Py4J takes one per element and one for
the size. A small Java class, compiled once per JVM with Janino (the compiler Spark's
code generation ships with), puts each element in the gateway's bindings as Py4J does
for a returned object, and answers their ids as one string, from which Python makes
the proxies. Capture reads every plan node's children and output this way, asking
for the node's collection and its elements in the same round trip.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> release_in_batches(spark)  # idempotent
>>> jvm = spark._jvm
>>> built = jvm.java.util.List.of(jvm.java.lang.StringBuilder("a"), jvm.java.lang.StringBuilder("b"))
>>> [proxy.toString() for proxy in elements(spark, jvm.org.apache.spark.api.python.PythonUtils.toSeq(built))]
['a', 'b']
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import py4j.java_gateway as _gateway
from py4j.finalizer import ThreadSafeFinalizer
from py4j.java_gateway import JavaObject
from py4j.protocol import Py4JError, smart_decode
from pyspark.sql import SparkSession

from ..errors import JvmHelperUnavailable

log = logging.getLogger("sparkprov")

GATHER_S = 0.1  # proxies dropped within this time go in one batch (a capture drops them in bursts)
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


_SOURCES: dict[str, str] = {}  # by class name (a line's own: folder/name), once read
JAVA = Path(__file__).parent / "java"


def java_source(name: str, folder: str = "") -> str:
    """The source of Java helper ``name``: ``plan/java/<name>.java`` (with ``folder``, a
    line's own version of it, ``plan/java/<folder>/<name>.java``: see ``versions``),
    shipped with the package (the tests compile each with javac against PySpark's jars
    too). Read when first compiled, on the driver: executors import this module from a
    zip."""
    key = f"{folder}/{name}" if folder else name
    if key not in _SOURCES:
        _SOURCES[key] = (JAVA / folder / f"{name}.java").read_text()
    return _SOURCES[key]


# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovElements.java
_LISTER_CLASS = "SparkprovElements"
_ELEMENT, _VALUE = "\u0002", "\u0001"
_LISTERS: dict[Any, Any] = {}  # by gateway client: the compiled lister, or None if it could not be made


def elements(spark: SparkSession, jseq: Any, method: str | None = None) -> list | None:
    """The proxies of Scala collection ``jseq``'s elements (None for a null element),
    made in one round trip; with ``method``, of the collection that ``jseq``'s public
    method of that name (without arguments) returns, in the same round trip. None when
    an element is a string or number (Py4J converts those to Python values) or when
    the lister could not be compiled."""
    found = described(spark, jseq, method)
    return None if found is None else [proxy for proxy, _ in found]


def described(
    spark: SparkSession, jseq: Any, method: str | None = None, getters: tuple[str, ...] = ()
) -> list[tuple[Any, list[str]]] | None:
    """As :func:`elements`, each proxy with what its ``getters`` answer, as strings, in
    the same round trip (a getter: public methods without arguments, chained with
    dots, as ``exprId.id``; its answer must be an identifier or a number)."""
    client = spark.sparkContext._gateway._gateway_client
    lister = _LISTERS.get(client, False)
    if lister is False:
        lister = _lister(spark, client)
    if lister is None:
        return None
    joined = ",".join(getters)
    try:
        answer = lister.ids(jseq, joined) if method is None else lister.idsOf(jseq, method, joined)
    except Py4JError:  # a method reflection cannot call on this object: Py4J's path
        log.debug("sparkprov: listing %s (getters %s) in one call failed", method, joined, exc_info=True)
        return None
    if answer is None:
        return None
    found = []
    for element in answer.split(_ELEMENT)[:-1]:
        target, *values = element.split(_VALUE)
        found.append((JavaObject(target, client) if target else None, values))
    return found


def _lister(spark: SparkSession, client: Any) -> Any:
    gateway = spark.sparkContext._gateway.java_gateway_server.getGateway()  # where ids are put
    # the one helper not given by the session's line (versions imports this module): it
    # names nothing that differs between them (scala.collection.Iterable is 2.12's and 2.13's)
    lister = compiled(spark, _LISTER_CLASS, java_source(_LISTER_CLASS), gateway)
    if lister is None:
        log.warning("sparkprov: plan lists are read one element per JVM call (lister not compiled)")
    _LISTERS[client] = lister
    return lister


STRICT = "SPARKPROV_STRICT_JVM"  # 1: a helper that does not compile raises
_COMPILED: dict[tuple[Any, str], Any] = {}  # by gateway client and class name
_COMPILERS: dict[tuple[Any, str], Any] = {}  # the Janino compiler of each class compiled


def compiled(spark: SparkSession, name: str, source: str, *args: Any) -> Any:
    """An instance of Java class ``name`` (public, in the default package, one public
    constructor taking ``args``), compiled from ``source`` by Janino once per JVM; None,
    logged, when it cannot be compiled or made (each caller then takes a slower path
    that gives the same answers). With ``SPARKPROV_STRICT_JVM=1`` (the tests set it) it
    raises ``JvmHelperUnavailable`` instead, so a helper that stops compiling is seen."""
    key = (spark.sparkContext._gateway._gateway_client, name)
    with _LOCK:
        if key in _COMPILED:
            return _COMPILED[key]
        jvm = spark._jvm
        try:
            compiler = jvm.org.codehaus.janino.SimpleCompiler()
            compiler.setParentClassLoader(jvm.java.lang.Thread.currentThread().getContextClassLoader())
            compiler.cook(source)
            cls = compiler.getClassLoader().loadClass(name)
            passed = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, len(args))
            for i, arg in enumerate(args):
                passed[i] = arg
            made = cls.getConstructors()[0].newInstance(passed)
            _COMPILERS[key] = compiler
        except Exception as exc:  # no Janino, or source this Spark cannot compile
            if os.environ.get(STRICT) == "1":
                raise JvmHelperUnavailable(f"could not compile the JVM helper {name}: {exc}") from exc
            log.warning("sparkprov: could not compile the JVM helper %s", name, exc_info=True)
            made = None
        _COMPILED[key] = made
        return made


def bytecode(spark: SparkSession, name: str) -> dict[str, bytes]:
    """The class files ``compiled(spark, name, ...)`` made (nested classes included), by
    binary class name: what executors need to load them from a jar."""
    with _LOCK:
        compiler = _COMPILERS[(spark.sparkContext._gateway._gateway_client, name)]
    codes = compiler.getBytecodes()
    return {str(k): bytes(codes.get(k)) for k in codes.keySet()}
