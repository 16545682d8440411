"""``LineageContext``: Titian's wrapper of the SparkContext, for PySpark RDD programs.

Its sources (``textFile``, ``wholeTextFiles``, ``parallelize``) return ``LineageRDD`` objects whose records
carry their input rows' ids; every action on them is a capture in the session's
store, traced with the same API as DataFrame captures.

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> lc = sp.LineageContext(spark.sparkContext, store=tempfile.mkdtemp())
>>> words = lc.parallelize(["a b", "b c", "b"]).flatMap(str.split)
>>> counts = words.map(lambda w: (w, 1)).reduceByKey(lambda x, y: x + y)
>>> sorted(counts.collect(name="counts"))
[('a', 1), ('b', 3), ('c', 1)]
>>> sorted(r.value for r in counts.capture.backward("_1 = 'b'", source="parallelize_0").collect())
['a b', 'b', 'b c']
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
from pyspark import RDD, SparkContext
from pyspark.serializers import UTF8Deserializer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType
from pyspark.sql.utils import AnalysisException

from ..api import LineageSession
from ..errors import InputNotFound, InvalidArgument
from ..executors import check_workers
from ..sources.identity import RID, SourceInfo, file_fingerprint, rid_column, safe_id, snapshot_column
from ..sources.text import COMPRESSED, number_lines
from ..store.format import Slot
from ..store.layout import RddFolders, StoreFolders
from ..store.lease import claim
from . import worker
from .frames import dataframe_from_rdd, rdd_from_dataframe
from .lineage_rdd import LineageRDD


@dataclass
class Side:
    """One grouping operator's side relation: ``(handle, input slots)`` files."""

    index: int
    operator: str
    path: str
    slots: list[Slot]
    shared: bool = False
    ranged: bool = False
    combine: str = "values"


@dataclass
class RddState:
    """What a context's RDDs share: their sources and side relations, by number."""

    root: Path
    sources: list[SourceInfo] = field(default_factory=list)
    sides: list[Side] = field(default_factory=list)
    ids: Any = field(default_factory=count)

    @property
    def folders(self) -> RddFolders:
        """Where the context's sources, sides and crossings are written."""
        return RddFolders(self.root)

    def slot(self, kind: str, ref: int) -> Slot:
        prefix = "__sp_s" if kind == "source" else "__sp_g"
        return Slot(f"{prefix}{next(self.ids)}", kind, ref)

    def new_side(self, operator: str, slots: list[Slot]) -> Side:
        side = Side(len(self.sides), operator, str(self.folders.side(len(self.sides))), list(slots))
        self.sides.append(side)
        return side

    def known(self, kind: str, fmt: str, roots: list, original: list, splits: list) -> int | None:
        """The number of the source already read from the same unchanged files in the
        same way, if any: read again, they are the same source (one name, one copy)."""
        return next(
            (
                i
                for i, s in enumerate(self.sources)
                if (s.kind, s.format, s.roots, s.original, s.splits) == (kind, fmt, roots, original, splits)
            ),
            None,
        )

    def source_name(self, base: str) -> str:
        taken = {s.name for s in self.sources}
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        return name


class LineageContext:
    """Wraps ``sc`` so RDD programs are traced: ``textFile`` and ``parallelize`` return
    ``LineageRDD`` objects, and each action on them is stored as a capture.

    ``store`` is as for ``LineageSession`` (or pass ``session=``).
    """

    def __init__(self, sc: SparkContext, store: str | os.PathLike | None = None, session: LineageSession | None = None):
        if not isinstance(sc, SparkContext):
            raise InvalidArgument(f"sc must be a SparkContext, not {type(sc).__name__}")
        if session is None:
            spark = SparkSession.getActiveSession() or SparkSession(sc)
            session = LineageSession(spark, store=store)
        self.session = session
        self.sc = sc
        check_workers(sc)  # traced records go through sparkprov's code in the Python workers
        root = StoreFolders(session.store.root).rdd_context(uuid.uuid4().hex).root
        claim(session.store.root, root)  # its sources and sides: not garbage while this process lives
        self._state = RddState(root)

    def textFile(self, name: str, minPartitions: int | None = None, use_unicode: bool = True) -> LineageRDD:
        """The lines of the text file(s) at ``name``, as ``sc.textFile`` reads them, each
        identified by its input split and its number in the split: nothing is copied.
        Compressed files (read whole by Hadoop) are copied into the store as Parquet
        first, and their lines identified by their position in the copy.
        """
        return self._text(name, minPartitions, use_unicode, whole=False)

    def wholeTextFiles(self, path: str, minPartitions: int | None = None, use_unicode: bool = True) -> LineageRDD:
        """``(file path, content)`` for each file at ``path``, each identified by its file
        (copied into the store first, as for ``textFile``). Paths are spelled as Spark
        reports them (``file:/...``)."""
        return self._text(path, minPartitions, use_unicode, whole=True)

    def _text(self, name: str, minPartitions: int | None, use_unicode: bool, whole: bool) -> LineageRDD:
        what = "wholeTextFiles" if whole else "textFile"
        if not isinstance(name, str):
            raise InvalidArgument(f"{what} takes a path, not {type(name).__name__}")
        if not use_unicode:
            raise InvalidArgument(f"{what}(use_unicode=False) is not supported: text is read as str")
        spark, bridge = self.session.spark, self.session._bridge
        try:
            lines = spark.read.text(name, wholetext=whole)
            roots, original = file_fingerprint(bridge, bridge.analyzed(lines))
        except AnalysisException as exc:
            if "PATH_NOT_FOUND" in str(exc):
                raise InputNotFound(f"{what}: no such file or directory: {name}") from None
            raise
        if not whole and not any(p.endswith(COMPRESSED) for p, _, _ in original):
            return self._text_in_place(name, minPartitions, roots, original)
        fmt = "wholetext" if whole else "text"
        columns = ["path", "value"] if whole else ["value"]
        state = self._state
        number = state.known("snapshot", fmt, roots, original, [])
        if number is None:
            number = len(state.sources)
            source = state.source_name(_path_name(name))
            path = str(state.folders.source(number, source))
            if whole:
                lines = lines.select(F.col("_metadata.file_path"), "value")
            lines.toDF(*[snapshot_column(i) for i in range(len(columns))]).write.parquet(path)
            snap = spark.read.parquet(path)
            files = sorted(bridge.files(bridge.file_relation(bridge.analyzed(snap))))
            schema = StructType([StructField(c, StringType()) for c in columns]).json()
            state.sources.append(SourceInfo(source, "snapshot", fmt, files, roots, original, schema))
        files = state.sources[number].files
        snap = spark.read.parquet(*[unquote(p) for p, _, _ in files])
        rows = snap.select(rid_column(files).alias(RID), *[snapshot_column(i) for i in range(len(columns))])
        if minPartitions and rows.rdd.getNumPartitions() < minPartitions:
            rows = rows.repartition(minPartitions)
        value = (lambda r: (r[1], r[2])) if whole else (lambda r: r[1])
        records = rows.rdd.map(lambda r: ((r[0],), value(r)))
        return LineageRDD(self, records, [state.slot("source", number)])

    def _text_in_place(self, name: str, minPartitions: int | None, roots: list, original: list) -> LineageRDD:
        # sc.textFile itself, its lines numbered per input split as they stream by
        sc, state = self.sc, self._state
        jrdd = sc._jsc.textFile(name, minPartitions if minPartitions is not None else sc.defaultMinPartitions)
        splits = []
        for partition in jrdd.rdd().partitions():
            split = partition.inputSplit().value()
            splits.append((split.getPath().toString(), split.getStart(), split.getLength()))
        number = state.known("text", "text", roots, original, splits)
        if number is None:
            number = len(state.sources)
            source = state.source_name(_path_name(name))
            schema = StructType([StructField("value", StringType())]).json()
            state.sources.append(SourceInfo(source, "text", "text", original, roots, original, schema, splits=splits))
        lines = RDD(jrdd, sc, UTF8Deserializer(True))
        return LineageRDD(self, lines.mapPartitionsWithIndex(number_lines), [state.slot("source", number)])

    def from_dataframe(self, df: DataFrame, name: str | None = None) -> LineageRDD:
        """``df.rdd``, traced: ``df`` is captured as ``name`` and its rows (``Row``
        objects) are the RDD's records, so traces of the RDD's actions continue into
        ``df``'s sources with ``end_to_end=True``.

        >>> names = lc.from_dataframe(people, name="people").map(lambda r: r.name)  # doctest: +SKIP
        >>> names.collect(name="names")  # doctest: +SKIP
        ['Andy', 'Justin']
        """
        return rdd_from_dataframe(self, df, name or f"dataframe-{len(self._state.sources)}")

    def createDataFrame(
        self,
        rdd: LineageRDD,
        schema: Any = None,
        samplingRatio: float | None = None,
        verifySchema: bool = True,
        name: str | None = None,
    ) -> DataFrame:
        """``spark.createDataFrame(rdd, ...)`` over a traced RDD: the records are captured
        as ``name`` and the DataFrame reads them, so a capture of a query over it
        traces on into the RDD program with ``end_to_end=True``.

        >>> pairs = lc.parallelize([("x", 1), ("y", 2)])  # doctest: +SKIP
        >>> lc.createDataFrame(pairs, "k string, n long", name="pairs").columns  # doctest: +SKIP
        ['k', 'n']
        """
        if not isinstance(rdd, LineageRDD) or rdd._ctx is not self:
            raise InvalidArgument("createDataFrame takes a LineageRDD of this LineageContext")
        return dataframe_from_rdd(rdd, schema, samplingRatio, verifySchema, name)

    def parallelize(self, c: Any, numSlices: int | None = None) -> LineageRDD:
        """The elements of ``c``, each identified by its position."""
        try:
            data = list(c)
        except TypeError:
            raise InvalidArgument(f"parallelize takes a collection of elements, not {type(c).__name__}") from None
        state = self._state
        number = len(state.sources)
        source = state.source_name(f"parallelize_{number}")
        path = state.folders.source(number, source)
        path.mkdir(parents=True)
        table = worker.output_table(data, list(range(len(data))), [], [], []).drop([RID])
        names = table.column_names
        pq.write_table(table.rename_columns([snapshot_column(i) for i in range(len(names))]), path / "part-0.parquet")
        spark, bridge = self.session.spark, self.session._bridge
        snap = spark.read.parquet(str(path))
        files = sorted(bridge.files(bridge.file_relation(bridge.analyzed(snap))))
        schema = from_arrow_schema(table.schema).json()
        state.sources.append(SourceInfo(source, "snapshot", "memory", files, [], [], schema))
        # one file: a row's index in it is its position in ``c``, and so its rid
        records = self.sc.parallelize(list(enumerate(data)), numSlices).map(lambda iv: ((iv[0],), iv[1]))
        return LineageRDD(self, records, [state.slot("source", number)])


def _path_name(path: str) -> str:
    """A source name from a text path: its last part."""
    return safe_id(Path(path.rstrip("/")).name) or "text"
