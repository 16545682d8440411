"""The handles plans and expressions cross Py4J as, and what keeps crossing cheap.

Plans and expressions reach Python as opaque Py4J proxies (``JPlan``/``JExpr``). Here
too: JVM packages and classes looked up once each (``Looked``), Python lists made Scala
sequences and Scala collections made lists (in one round trip, by the JVM helpers of
``references``), and the memo of ``Bridge.remembering``, in which each question about
a proxy is asked of the JVM once.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> b.to_list(b.seq([1, 2, 3]))
[1, 2, 3]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from py4j.java_gateway import JavaClass, JavaPackage, JVMView
from py4j.protocol import Py4JError

from .references import compiled, described, elements

JPlan = Any
JExpr = Any

CATALYST = "org.apache.spark.sql.catalyst"

# Py4J keeps, per JVM thread, the last 100 methods it resolved (by reflection: a large
# Scala class's methods listed and matched against the arguments). A capture calls more
# (147 for a join under an aggregate), so each call missed again; with room for these,
# that capture took 0.60 s against 0.70 s (median of 16 interleaved pairs, 14 faster).
METHOD_CACHE = 2000
# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovSeqs.java
_SEQS_CLASS = "SparkprovSeqs"
_roomy = threading.local()  # ids of the JVM views whose thread for this Python thread has the room


def roomy_method_cache(jvm: Any) -> None:
    """Give the JVM thread serving this Python thread (PySpark pins one to each) a
    Py4J method cache of ``METHOD_CACHE`` entries, once; another Py4J, whose cache is
    not where this one's is, keeps its own."""
    done = getattr(_roomy, "jvms", None)
    if done is None:
        done = _roomy.jvms = set()
    if id(jvm) in done:
        return
    done.add(id(jvm))
    try:
        holder = jvm.java.lang.Class.forName("py4j.reflection.ReflectionEngine").getDeclaredField("cacheHolder")
        holder.setAccessible(True)
        holder.get(None).set(jvm.py4j.reflection.LRUCache(METHOD_CACHE))
    except Py4JError:
        pass


def memo_entry(memo: dict, node: Any) -> list:
    # Bridge.remembering's entry for a proxy: the proxy itself (kept alive, so its id is
    # not reused), then one slot per thing asked (see Bridge._remembered)
    entry = memo.get(id(node))
    if entry is None:
        entry = memo[id(node)] = [node, None, None, None, None, None, None, None, None, None, None, None]
    return entry


class Looked:
    """A py4j JVM view, package or class whose attributes (packages, classes, static
    members) are looked up once each: a lookup is a round trip to the JVM, and a
    capture builds hundreds of nodes from a few dozen classes."""

    __slots__ = ("_target", "_found")

    def __init__(self, target: Any) -> None:
        self._target = target
        self._found: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._found[name]
        except KeyError:
            pass
        found = getattr(self._target, name)
        if isinstance(found, JVMView | JavaPackage | JavaClass):
            found = Looked(found)
        self._found[name] = found
        return found

    def __call__(self, *args: Any) -> Any:  # a class's constructor
        return self._target(*args)


class Handles:
    """The Scala values and the memo of ``Bridge`` (a mixin: ``Bridge.__init__`` sets
    the ``spark``, ``jvm``, ``jsession``, ``line``, ``_none``, ``_seqs``, ``_state`` and
    ``_walk`` it uses, and the attributes its Java helpers are kept in)."""

    def _java_helper(self, attribute: str, name: str) -> Any:
        """The Java helper ``name`` (``plan/java/<name>.java``, as this session's line
        compiles it), kept in ``attribute`` once asked for; False when it cannot be
        compiled (the caller takes its slower path)."""
        found = getattr(self, attribute)
        if found is None:
            found = compiled(self.spark, name, self.line.java_source(name)) or False
            setattr(self, attribute, found)
        return found

    def _session_state(self) -> Any:
        # a session's state is made once and kept for its life: asked for once
        if self._state is None:
            self._state = self.jsession.sessionState()
        return self._state

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Within (in this thread), a plan node's name, children, output and tree-pattern
        bits are asked of the JVM once: plans are immutable, and capture walks one plan
        several times (checks, view names, the rewrite). Kept by the proxy object, which
        the memo keeps alive (so its ``id`` is not reused); children are the same
        proxies each time, so a walk from the same root hits the memo all the way down."""
        outer = getattr(self._walk, "memo", None)
        if outer is None:
            roomy_method_cache(self.spark._jvm)  # the context's, shared by its sessions' bridges
            self._walk.memo = {}
        try:
            yield
        finally:
            if outer is None:
                self._walk.memo = None

    def _remembered(self, node: Any, slot: int, ask: Callable[[], Any]) -> Any:
        # slots: 1 name, 2 children, 3 output, 4 tree pattern bits asked ({pattern: bool}),
        # 5 file relation (a leaf's; _NOT_FILES for none), 6 file format, 7 root paths,
        # 8 files (5 to 8: several capture steps ask them of each leaf), 9 an
        # attribute's expression id, 10 a node's one-line description (``prefetch``),
        # 11 a leaf's output ids (``prefetch``, ``output_ids``)
        memo = getattr(self._walk, "memo", None)
        if memo is None:
            return None if slot == 4 else ask()
        entry = memo_entry(memo, node)
        if entry[slot] is None:
            entry[slot] = ask()
        return entry[slot]

    def seq(self, items: list) -> Any:
        # up to ten elements in one round trip by the helper; else List.of takes up to
        # ten in one, where py4j's own conversion of a Python list makes one per
        # element. (List.of refuses nulls.)
        if len(items) <= 10 and self._java_helper("_seqs", _SEQS_CLASS):
            return self._seqs.seq(*items)
        if any(item is None for item in items):
            jlist = self.jvm.java.util.ArrayList()
            for item in items:
                jlist.add(item)
        elif len(items) <= 10:
            jlist = self.jvm.java.util.List.of(*items)
        else:
            jlist = self.jvm.java.util.ArrayList(self.jvm.java.util.List.of(*items[:10]))
            for start in range(10, len(items), 10):
                jlist.addAll(self.jvm.java.util.List.of(*items[start : start + 10]))
        return self.jvm.org.apache.spark.api.python.PythonUtils.toSeq(jlist)

    def to_list(self, jseq: Any) -> list:
        listed = elements(self.spark, jseq)  # one round trip for the whole list
        if listed is not None:
            return listed
        return self._one_by_one(jseq)

    def _listed(self, owner: Any, method: str, getter: str | None = None, slot: int = 0) -> list:
        # owner.method()'s elements: one round trip for the collection and its elements,
        # and with ``getter``, what it answers for each element, remembered in ``slot``
        found = described(self.spark, owner, method, (getter,) if getter else ())
        if found is None:
            return self._one_by_one(getattr(owner, method)())
        memo = getattr(self._walk, "memo", None)
        if getter and memo is not None:
            for proxy, (value,) in found:
                memo_entry(memo, proxy)[slot] = int(value) if slot == 9 else value
        return [proxy for proxy, _ in found]

    @staticmethod
    def _one_by_one(jseq: Any) -> list:
        # by position: one round trip per element (an iterator takes two); a long
        # list is copied into an indexed one first, where apply(i) does not walk
        n = jseq.size()
        if n > 32:
            jseq = jseq.toIndexedSeq()
        return [jseq.apply(i) for i in range(n)]

    def none(self) -> Any:
        return self._none

    def identity(self, obj: Any) -> int:
        """A number for this very JVM object (py4j hands out a new proxy per call)."""
        return int(self.jvm.java.lang.System.identityHashCode(obj))
