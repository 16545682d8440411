"""``Tracer``: PySpark, patched for the length of ``sparkprov run``, so that every
action of an unchanged script is a capture.

* RDD sources (``sc.textFile``, ``sc.wholeTextFiles``, ``sc.parallelize``) and
  ``df.rdd`` return ``TracedRDD`` objects; ``spark.createDataFrame`` over one, and
  ``rdd.toDF``, make a DataFrame that traces into the RDD program.
* A DataFrame action (``collect``, ``count``, ``take``, ``first``, ``head``,
  ``tail``, ``show``, ``toPandas``, ``foreach``, ``foreachPartition``, and every
  ``df.write`` that saves) runs as it would, then the DataFrame is captured.

Each capture is named ``<script>.<action>.L<line>`` after the line of the script that
called it (a line run again, in a loop, makes the next version). A capture that
cannot be made is recorded as failed, with the reason, and the script goes on: what
it prints, returns and writes is what it would without sparkprov.

Only calls from the user's code are intercepted: PySpark calling itself (``first``
calls ``head``, ``toPandas`` calls ``collect``) and sparkprov's own jobs run untouched.

>>> capture_name("my job.py", "collect", 12)
'my_job.collect.L12'
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
from pyspark import SparkContext
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession

import sparkprov

from ..api import LineageSession
from ..errors import one_line
from ..plan.versions import installed_line
from ..rdd.context import LineageContext
from ..sources.identity import safe_id
from ..store.catalog import Store
from .traced_rdd import TracedRDD

DATAFRAME_ACTIONS = ("collect", "count", "take", "first", "head", "tail", "show", "toPandas", "foreach")
DATAFRAME_ACTIONS += ("foreachPartition",)
WRITER_ACTIONS = ("save", "parquet", "csv", "json", "orc", "text", "saveAsTable", "insertInto")
RDD_SOURCES = ("textFile", "wholeTextFiles", "parallelize")
# other ways to make an RDD: it runs untraced, and its actions are recorded as failed
UNTRACED_SOURCES = ("range", "emptyRDD", "binaryFiles", "binaryRecords", "pickleFile", "sequenceFile")
UNTRACED_SOURCES += ("hadoopFile", "newAPIHadoopFile", "hadoopRDD", "newAPIHadoopRDD")
_LIBRARIES = tuple(str(Path(m.__file__).parent) + "/" for m in (pyspark, sparkprov))
_EXAMPLES = str(Path(pyspark.__file__).parent / "examples") + "/"  # user programs shipped with PySpark


def capture_name(script: str, action: str, line: int) -> str:
    """The name of the capture of ``action`` called at ``line`` of ``script``."""
    stem = safe_id(Path(script).stem).strip("._-") or "script"
    return f"{stem}.{action}.L{line}"


@dataclass
class Attempt:
    """One action of the script: the capture it made, or why it made none."""

    name: str
    version: int
    failed: str = ""


class Tracer:
    """Patches PySpark while ``installed()`` (see the module); captures go to ``store``."""

    def __init__(self, script: str | Path, store: str | Path) -> None:
        self.script = str(Path(script).resolve())
        self.store = Store(store)  # opened first: a bad location fails before the script runs
        self.attempts: list[Attempt] = []
        self._sessions: dict[int, LineageSession] = {}
        self._contexts: dict[int, LineageContext] = {}
        self._busy = 0  # > 0 while sparkprov works: nothing it calls is intercepted

    # ---- what the patches call ------------------------------------------------------
    def traced_action(self, action: str, traced: Callable[[str], Any], plain: Callable[[], Any]) -> Any:
        """Run an action on a traced RDD as its capture; if capture fails, record why and
        run it plainly."""
        name = self._name(action)
        with self._working():
            try:
                result = traced(name)
            except Exception as exc:  # noqa: BLE001 - the script must go on; the reason is kept
                self._failed(name, exc)
            else:
                self._made(name)
                return result
        return plain()

    def untraced_action(self, action: str, reason: str, plain: Callable[[], Any]) -> Any:
        """Run an action on an RDD sparkprov does not trace; record the failed capture."""
        name = self._name(action)
        result = plain()
        with self._working():
            self._failed(name, reason)
        return result

    def create_dataframe(
        self, rdd: TracedRDD, schema: Any, samplingRatio: Any, verifySchema: bool = True, spark: Any = None
    ) -> Any:
        """``createDataFrame`` over an RDD of the script: traced when the RDD is."""
        spark = spark or SparkSession.getActiveSession()
        name = self._name("createDataFrame")
        if rdd._lineage is not None:
            with self._working():
                try:
                    df = rdd._lineage._ctx.createDataFrame(rdd._lineage, schema, samplingRatio, verifySchema, name)
                except Exception as exc:  # noqa: BLE001
                    self._failed(name, exc)
                else:
                    self._made(name)
                    return df
        else:
            with self._working():
                self._failed(name, rdd._reason)
        return self._original(SparkSession, "createDataFrame")(spark, rdd.plain, schema, samplingRatio, verifySchema)

    # ---- installing ---------------------------------------------------------------
    @contextmanager
    def installed(self) -> Iterator[Tracer]:
        saved: list[tuple[type, str, Any]] = []

        def patch(cls: type, attr: str, make: Callable[[Any], Any]) -> None:
            original = cls.__dict__[attr]
            saved.append((cls, attr, original))
            setattr(cls, attr, make(original))

        for method in RDD_SOURCES:
            patch(SparkContext, method, lambda orig, m=method: self._rdd_source(orig, m))
        for method in UNTRACED_SOURCES:
            patch(SparkContext, method, lambda orig, m=method: self._untraced_source(orig, m))
        patch(SparkContext, "union", self._union)
        patch(SparkSession, "createDataFrame", self._create_dataframe_hook)
        frames = installed_line().dataframe_class()  # whose methods a classic DataFrame runs
        patch(frames, "rdd", self._rdd_property)
        for action in DATAFRAME_ACTIONS:
            patch(frames, action, lambda orig, a=action: self._dataframe_action(orig, a, lambda df: df))
        for action in WRITER_ACTIONS:
            patch(DataFrameWriter, action, lambda orig, a=action: self._dataframe_action(orig, a, _written))
        self._originals = {(cls, attr): original for cls, attr, original in saved}
        try:
            yield self
        finally:
            for cls, attr, original in reversed(saved):
                setattr(cls, attr, original)

    def _original(self, cls: type, attr: str) -> Any:
        return self._originals[(cls, attr)]

    def _rdd_source(self, original: Callable, method: str) -> Callable:
        tracer = self

        def source(sc: SparkContext, *args: Any, **kwargs: Any) -> Any:
            if not tracer._from_user():
                return original(sc, *args, **kwargs)
            with tracer._working():
                try:
                    return TracedRDD(tracer, getattr(tracer._context(sc), method)(*args, **kwargs))
                except FileNotFoundError:
                    raise
                except Exception as exc:  # noqa: BLE001
                    reason = f"sc.{method} could not be traced: {one_line(exc)}"
            return TracedRDD(tracer, None, original(sc, *args, **kwargs), reason)

        return source

    def _untraced_source(self, original: Callable, method: str) -> Callable:
        tracer = self

        def source(sc: SparkContext, *args: Any, **kwargs: Any) -> Any:
            rdd = original(sc, *args, **kwargs)
            if not tracer._from_user():
                return rdd
            return TracedRDD(
                tracer, None, rdd, f"sc.{method} is not traced (sparkprov traces {', '.join(RDD_SOURCES)})"
            )

        return source

    def _union(self, original: Callable) -> Callable:
        tracer = self

        def union(sc: SparkContext, rdds: list) -> Any:
            if not any(isinstance(r, TracedRDD) for r in rdds):
                return original(sc, rdds)
            first, *rest = rdds
            if isinstance(first, TracedRDD) and all(isinstance(r, TracedRDD) for r in rest):
                for other in rest:
                    first = first.union(other)
                return first
            plain = [r.plain if isinstance(r, TracedRDD) else r for r in rdds]
            return TracedRDD(tracer, None, original(sc, plain), "sc.union of an RDD that is not traced")

        return union

    def _create_dataframe_hook(self, original: Callable) -> Callable:
        tracer = self

        def create(spark: SparkSession, data: Any, schema: Any = None, samplingRatio: Any = None, verifySchema=True):
            if isinstance(data, TracedRDD):
                return tracer.create_dataframe(data, schema, samplingRatio, verifySchema, spark)
            return original(spark, data, schema, samplingRatio, verifySchema)

        return create

    def _rdd_property(self, original: Any) -> property:
        tracer = self

        def rdd(df: DataFrame) -> Any:
            plain = lambda: original.__get__(df, type(df))  # noqa: E731
            if not tracer._from_user():
                return plain()
            name = tracer._name("rdd")
            with tracer._working():
                try:
                    lineage = tracer._context(df.sparkSession.sparkContext, df.sparkSession).from_dataframe(df, name)
                except Exception as exc:  # noqa: BLE001
                    tracer._failed(name, exc)
                    reason = f"df.rdd at {name} could not be traced: {one_line(exc)}"
                else:
                    tracer._made(name)
                    return TracedRDD(tracer, lineage)
            return TracedRDD(tracer, None, plain(), reason)

        return property(rdd)

    def _dataframe_action(self, original: Callable, action: str, frame_of: Callable) -> Callable:
        tracer = self

        def act(target: Any, *args: Any, **kwargs: Any) -> Any:
            if not tracer._from_user():
                return original(target, *args, **kwargs)
            name = tracer._name("write" if isinstance(target, DataFrameWriter) else action)
            with tracer._working():
                result = original(target, *args, **kwargs)
            with tracer._working():
                df = frame_of(target)
                try:
                    tracer._session(df.sparkSession).capture(df, name)
                except Exception as exc:  # noqa: BLE001
                    tracer._failed(name, exc)
                else:
                    tracer._made(name)
            return result

        return act

    # ---- helpers ------------------------------------------------------------------
    def _session(self, spark: SparkSession) -> LineageSession:
        key = id(spark)
        if key not in self._sessions:
            self._sessions[key] = LineageSession(spark, store=self.store.root)
        return self._sessions[key]

    def _context(self, sc: SparkContext, spark: SparkSession | None = None) -> LineageContext:
        key = id(sc)
        if key not in self._contexts:
            spark = spark or SparkSession.getActiveSession() or SparkSession(sc)
            self._contexts[key] = LineageContext(sc, session=self._session(spark))
        return self._contexts[key]

    @contextmanager
    def _working(self) -> Iterator[None]:
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def _from_user(self) -> bool:
        """Whether the intercepted call came from the script (or a module of the user's),
        not from PySpark or sparkprov, and not while sparkprov works."""
        if self._busy:
            return False
        caller = sys._getframe(2).f_code.co_filename
        return caller == self.script or caller.startswith(_EXAMPLES) or not caller.startswith(_LIBRARIES)

    def _name(self, action: str) -> str:
        frame = sys._getframe(1)
        line = 0
        while frame is not None:
            if frame.f_code.co_filename == self.script:
                line = frame.f_lineno
                break
            frame = frame.f_back
        return capture_name(self.script, action, line)

    def _made(self, name: str) -> None:
        self.attempts.append(Attempt(name, self.store.latest_version(name)))

    def _failed(self, name: str, exc: BaseException | str) -> None:
        reason = exc if isinstance(exc, str) else one_line(exc)
        entry = self.store.commit_failed(name, reason, script=self.script)
        self.attempts.append(Attempt(name, entry.version, reason))


def _written(writer: DataFrameWriter) -> DataFrame:
    return writer._df
