"""The embedded engine: traces answered in this process from the stored files, no Spark.

It reads a capture's catalog entry and its Parquet files directly: pair tables through
their row-group statistics (``store/parquet.py``), source rows by file number and row
index (the rid says which row group of which file to read), and SQL predicates over
the output or a source with DuckDB, after translating them from Spark SQL with
sqlglot. Answers are the same as the Spark engine's (``query/trace.py``); tests
compare them. An answer that would read more than ``limit`` pair rows raises
``LineageTooLarge``, and callers choosing the engine automatically fall back to Spark.

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"])
>>> cap = session.capture(df.groupBy("k").sum("v"), name="sums")
>>> engine = EmbeddedEngine(session.store.load("sums"))
>>> rids = engine.output_rids("k = 'a'")
>>> engine.source_rows("dataframe_0", engine.backward_ids(rids, "dataframe_0"))["v"].to_pylist()
[1, 2]
"""

from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..capture import row_lineage
from ..capture.restricted import no_such_source, refuse_forward
from ..errors import EmbeddedUnsupported, InvalidArgument, LineageTooLarge, SourceChanged
from ..plan.predicate import check_predicate
from ..sources.text import picked_lines
from ..store import fs
from ..store.duck import connection, quote
from ..store.entry import CaptureEntry
from ..store.files import parquet_files
from ..store.format import GRP, IN, OUT, REF, RID, ROW_BITS, SRC, shared_path
from ..store.layout import CaptureFolders, local_path, readable_path
from ..store.parquet import (
    PairTable,
    build_forward_index,
    distinct_sorted,
    files_sql,
    read_table,
    rid_array,
    sql_literal,
)
from ..store.source_info import SourceInfo, compare_fingerprint, snapshot_column
from . import provenance
from .payload_sets import KeptPayloads
from .shared_sets import read_shared, rows_of_sets, sets_holding, sets_of
from .sides import SideLineage

EMBEDDED_LIMIT = 20_000_000  # pair rows one embedded answer may read
ENGINES = ("auto", "embedded", "spark")
# traced source rows a source predicate is evaluated on after reading them; more are
# matched against the rows DuckDB finds satisfying it in the whole source
FILTERED_HERE_MAX = 200_000
_ROW_MASK = (1 << ROW_BITS) - 1


def check_engine(engine: str) -> str:
    """``engine`` when it names one (``ENGINES``); ``ValueError`` otherwise."""
    if engine not in ENGINES:
        raise InvalidArgument(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    return engine


class EmbeddedEngine:
    """Traces over one stored capture (its catalog entry), answered without Spark.

    One engine keeps the files' metadata it has read, so later traces over the same
    capture only read the row groups they need.
    """

    def __init__(self, entry: CaptureEntry, limit: int = EMBEDDED_LIMIT) -> None:
        self.entry = entry
        self.limit = limit
        self.name = entry.name
        lineage = entry.lineage
        self._root = Path(lineage.path)
        self._numbers: dict[str, int] = dict(lineage.sources)
        self._infos = entry.sources
        self._tables: dict[tuple[int, str], PairTable] = {}
        self._shared: pa.Table | None = None
        self._files: dict[str, pq.ParquetFile] = {}
        # an RDD capture keeps its records' slots and sides, not pairs
        self._rdd = SideLineage(entry, self._within_limit) if lineage.rdd else None

    @property
    def sources(self) -> list[str]:
        return list(self._infos)

    def check_source(self, source: str) -> None:
        if source not in self._infos:
            raise no_such_source(self.entry, source)

    # pair tables -----------------------------------------------------------------

    def _table(self, src: int, key: str) -> PairTable:
        found = self._tables.get((src, key))
        if found is None:
            if self.entry.lineage.in_output:
                row_lineage.build_locally(self.entry, self._within_limit)
            elif self.entry.lineage.later == "witnesses":
                provenance.write_pairs(self.entry)
            elif self.entry.lineage.later:
                from ..capture import later  # a lazy or deferred capture's: made by the capturing process

                later.ensure_built(self.entry)
            backward = PairTable(parquet_files(self._root / f"{SRC}={src}"), OUT)
            if key == OUT:
                found = backward
            else:
                # a read-only store's index is built in the cache (lineage.forward)
                index = CaptureFolders.of(self.entry).forward(src)
                if not fs.is_dir(index) and self.entry.lineage.forward:
                    index = Path(self.entry.lineage.forward) / f"{SRC}={src}"
                files = parquet_files(index)
                if not files and backward.rows:
                    self._within_limit(backward.rows)
                    files = build_forward_index(backward, index)
                found = PairTable(files, IN)
            self._tables[(src, key)] = found
        return found

    def _within_limit(self, rows: int) -> None:
        if rows > self.limit:
            raise LineageTooLarge(
                f"capture {self.name!r}: this answer reads {rows:,} pairs, more than the embedded engine's "
                f"limit of {self.limit:,}; use the Spark engine"
            )

    def _lookup(self, src: int, key: str, keys: np.ndarray) -> pa.Table:
        table = self._table(src, key)
        self._within_limit(table.rows_to_read(keys))
        return table.lookup(keys)

    def _shared_table(self) -> pa.Table:
        if self._shared is None:
            path = shared_path(self.entry.lineage)
            self._shared = read_shared(parquet_files(path) if path else [])
            self._within_limit(self._shared.num_rows)
        return self._shared

    @cached_property
    def _payloads(self) -> KeptPayloads:
        """Its functions' kept payloads: their sets made as traces reach them."""
        return KeptPayloads(shared_path(self.entry.lineage), f"capture {self.name!r}")

    @cached_property
    def _sides(self) -> list[int]:
        """Shared sides k that output rows reference (pair partitions ``src=-(k+1)``)."""
        return sorted(-int(n.split("=", 1)[1]) - 1 for n in fs.names(self._root) if n.startswith(f"{SRC}=-"))

    # traces ------------------------------------------------------------------------

    def backward_ids(self, out_rids, source: str, where: str | None = None) -> np.ndarray:
        """Rids of ``source``'s rows behind the output rows ``out_rids`` (sorted,
        distinct); with ``where`` (Spark SQL over the source), only rows satisfying it."""
        if where is not None:
            behind = self.backward_ids(out_rids, source)
            # the traced rows read and filtered (none: the predicate is still checked)
            if len(behind) <= FILTERED_HERE_MAX:
                rows = self.source_rows(source, behind, only=_columns_of(where))
                what = f"source {source!r}"
                _refuse_zoned(where, self._infos[source].schema, None, what)
                return _select_rids("traced", where, what, {"traced": rows})
            # many: the source's rows that satisfy it, found by DuckDB reading the source
            return np.intersect1d(behind, self.source_rids(source, where), assume_unique=True)
        self.check_source(source)
        self._check_unchanged(self._infos[source])  # rids of a changed source name other rows
        outs = rid_array(out_rids)
        number = self._numbers[source]
        if self._rdd is not None:
            return self._rdd.backward(outs, number)
        found = [self._lookup(number, OUT, outs)[IN].to_numpy()]
        if self._sides:  # the sets of shared sides the rows refer to
            reached = pa.concat_tables([sets_of(k, self._lookup(-k - 1, OUT, outs)[IN]) for k in self._sides])
            if reached.num_rows:  # (the shared table is read only then)
                found.append(rows_of_sets(self._shared_table(), reached, number, self._payloads))
        return distinct_sorted(np.concatenate(found))

    def forward_ids(self, source: str, in_rids) -> np.ndarray:
        """Rids of the output rows that ``source``'s rows ``in_rids`` contributed to."""
        self.check_source(source)
        refuse_forward(self.entry, source)
        self._check_unchanged(self._infos[source])
        ins = rid_array(in_rids)
        number = self._numbers[source]
        if self._rdd is not None:
            return self._rdd.forward(number, ins)
        found = [self._lookup(number, IN, ins)[OUT].to_numpy()]
        if self._sides:  # the rows referring to a set that holds one of them
            held = sets_holding(self._shared_table(), number, ins, self._payloads)
            for k in self._sides:
                grps = held.filter(pc.equal(held[REF], k))[GRP]
                if len(grps):
                    found.append(self._lookup(-k - 1, IN, rid_array(grps))[OUT].to_numpy())
        return distinct_sorted(np.concatenate(found))

    def pairs(self, source: str) -> pa.Table:
        """Every (``out_rid``, ``in_rid``) pair between the output and ``source``.

        A capture whose lineage for the source is kept once for many output rows
        (shared lineage) or in an RDD's side files is refused (``EmbeddedUnsupported``):
        its pairs are resolved per answer, not listed.
        """
        self.check_source(source)
        self._check_unchanged(self._infos[source])
        if self._rdd is not None or self._sides:
            raise EmbeddedUnsupported(
                f"capture {self.name!r} keeps lineage shared by many output rows (or an RDD's side files): "
                "its pairs are resolved per trace, not listed"
            )
        table = self._table(self._numbers[source], OUT)
        self._within_limit(table.rows)
        return table.read_all().select([OUT, IN])

    # rows --------------------------------------------------------------------------

    def output_rows(self, rids=None) -> pa.Table:
        """Output rows (user columns and ``_sp_rid``), all or those with ``rids``, in rid order."""
        out = self.entry.output
        table = read_table(parquet_files(out.path), columns=[*out.stored, RID])
        if rids is not None:
            table = table.filter(pc.is_in(table[RID], pa.array(rid_array(rids))))
        table = table.rename_columns([*out.columns, RID])
        return _plain_types(table.sort_by(RID))

    def source_rows(self, source: str, rids, only: set[str] | None = None) -> pa.Table:
        """``source``'s rows with ``rids`` (all columns, or those named in ``only``, in
        lower case; and ``_sp_rid``), in rid order.

        Raises ``SourceChanged`` if the source's files differ from capture time.
        """
        self.check_source(source)
        info = self._infos[source]
        self._check_unchanged(info)
        schema = json.loads(info.schema)
        names = [f["name"] for f in schema["fields"]]
        rids = rid_array(rids)
        if info.kind == "text":
            return _text_rows(info, rids)
        # a predicate of constants still needs a column to count the rows by
        positions = [i for i, n in enumerate(names) if only is None or n.lower() in only] or [0]
        names = [names[i] for i in positions]
        parts = []
        numbers = rids >> ROW_BITS
        for number in distinct_sorted(numbers):
            if number >= len(info.files):
                raise SourceChanged(f"source {source!r}: rid file number {number} is not a file of the capture")
            path = readable_path(info.files[number][0])
            rows = rids[numbers == number] & _ROW_MASK
            parts.append(self._read_rows(path, rows, info, names, positions, int(number)))
        if not parts:
            return pa.table({**{n: pa.array([], pa.null()) for n in names}, RID: pa.array([], pa.int64())})
        # positional names until here: a source's names may repeat, which Arrow cannot concatenate
        return pa.concat_tables(parts, promote_options="permissive").rename_columns([*names, RID])

    def _read_rows(
        self, path: str, rows: np.ndarray, info: SourceInfo, names: list[str], positions: list[int], number: int
    ) -> pa.Table:
        pf = self._files.get(path)
        if pf is None:
            pf = self._files[path] = pq.ParquetFile(path)
        meta = pf.metadata
        starts = np.cumsum([0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
        if len(rows) and rows[-1] >= starts[-1]:
            raise SourceChanged(f"source {info.name!r}: {path} has no row {int(rows[-1])}")
        if info.kind == "snapshot":  # stored with positional names
            columns = [snapshot_column(i) for i in positions]
        else:
            missing = [n for n in names if n not in pf.schema_arrow.names]
            if missing:  # e.g. partition columns, which live in directory names
                raise EmbeddedUnsupported(f"source {info.name!r}: columns {missing} are not in its files")
            columns = names
        group_of = np.searchsorted(starts, rows, side="right") - 1
        parts = []
        for g in distinct_sorted(group_of):
            picked = rows[group_of == g] - starts[g]
            table = _plain_types(pf.read_row_group(int(g), columns=columns))
            # rids are distinct and sorted: as many as the group's rows are all of them
            parts.append(table if len(picked) == table.num_rows else table.take(pa.array(picked)))
        table = pa.concat_tables(parts).rename_columns([f"c{i}" for i in range(len(columns))])
        return table.append_column(RID, pa.array((number << ROW_BITS) | rows, pa.int64()))

    def _check_unchanged(self, info: SourceInfo) -> None:
        if not info.roots:  # checked on every answer: files may change between two traces
            return
        files = []
        for root in info.roots:
            if fs.is_remote(root):  # an object's time is its upload's: pushed rows are checked by size
                found = fs.files_under(root, skip_dir=_hidden)
                kept = [(rel, size) for rel, size in found if not _hidden(rel.rsplit("/", 1)[-1])]  # by file name
                files += [(fs.join(root, rel), size, None) for rel, size in kept]
                continue
            for path in _list_files(local_path(root)):
                st = os.stat(path)
                files.append((path, st.st_size, st.st_mtime_ns // 1_000_000))
        compare_fingerprint(info, files, spelled=readable_path)

    # predicates --------------------------------------------------------------------

    def output_rids(self, predicate: str) -> np.ndarray:
        """Rids of the output rows matching ``predicate`` (Spark SQL)."""
        out, what = self.entry.output, f"the output of capture {self.name!r}"
        _refuse_zoned(predicate, out.schema, dict(zip(out.stored, out.columns)), what)
        return _select_rids(output_relation(self.entry), predicate, what)

    def source_rids(self, source: str, predicate: str) -> np.ndarray:
        """Rids of ``source``'s rows matching ``predicate`` (Spark SQL)."""
        self.check_source(source)
        info = self._infos[source]
        self._check_unchanged(info)
        if info.kind == "text":
            raise EmbeddedUnsupported(f"source {info.name!r} is text read in place: Spark evaluates predicates on it")
        _refuse_zoned(predicate, info.schema, None, f"source {source!r}")
        names = [f["name"] for f in json.loads(info.schema)["fields"]]
        paths = [readable_path(p) for p, _, _ in info.files]
        if not paths:
            return np.array([], np.int64)
        numbers = ", ".join(f"({sql_literal(p)}, {i})" for i, p in enumerate(paths))
        if info.kind == "snapshot":
            cols = ", ".join(f"{quote(snapshot_column(i))} AS {quote(n)}" for i, n in enumerate(names))
        else:
            cols = ", ".join(quote(n) for n in names)
        relation = (
            f"(SELECT {cols}, (CAST(f.n AS BIGINT) << {ROW_BITS}) | file_row_number AS {RID} "
            f"FROM read_parquet({files_sql(paths)}, file_row_number = true, filename = true) "
            f"JOIN (VALUES {numbers}) f(path, n) ON filename = f.path)"
        )
        return _select_rids(relation, predicate, f"source {source!r}")


def _text_rows(info: SourceInfo, rids: np.ndarray) -> pa.Table:
    """Lines of a text source read in place (``sources/text.py``): each split read once."""
    values: list[str | None] = []
    splits = rids >> ROW_BITS
    for number in np.unique(splits):
        if number >= len(info.splits):
            raise SourceChanged(f"source {info.name!r}: rid split number {number} is not a split of the capture")
        path, start, length = info.splits[number]
        rows = (rids[splits == number] & _ROW_MASK).tolist()
        lines = picked_lines(local_path(path), start, length, rows)
        if None in lines:
            raise SourceChanged(f"source {info.name!r}: {path} has no line {rows[lines.index(None)]} in split {number}")
        values.extend(lines)
    return pa.table({"value": pa.array(values, pa.string()), RID: pa.array(rids, pa.int64())})


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _list_files(path: str) -> list[str]:
    """Data files under ``path`` as Spark lists them (hidden ``.``/``_`` names skipped)."""
    if os.path.isfile(path):
        return [path]
    found = []
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        found.extend(os.path.join(folder, f) for f in files if not f.startswith((".", "_")))
    return found


def _plain_types(table: pa.Table) -> pa.Table:
    """Arrow's view types (some writers store them) as the plain types Spark reads."""
    plain = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary(), pa.large_string(): pa.string()}
    if not any(f.type in plain for f in table.schema):
        return table
    return table.cast(pa.schema([f.with_type(plain.get(f.type, f.type)) for f in table.schema]))


def output_relation(entry: CaptureEntry) -> str:
    """A capture's output rows as a DuckDB relation: the user's column names and ``_sp_rid``."""
    out = entry.output
    cols = ", ".join(f"{quote(s)} AS {quote(d)}" for s, d in zip(out.stored, out.columns))
    return f"(SELECT {cols}, {RID} FROM read_parquet({files_sql(parquet_files(out.path))}))"


def _columns_of(predicate: str) -> set[str] | None:
    """The names (lower case) a Spark SQL predicate refers to, columns and their
    qualifiers; None when it does not parse (the error is for evaluating it to say)."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(predicate, read="spark")
    except sqlglot.errors.SqlglotError:
        return None
    return {part.lower() for c in tree.find_all(exp.Column) for part in (c.name, c.table) if part}


def _refuse_zoned(predicate: str, schema: str, names: dict[str, str] | None, what: str) -> None:
    """Decline a predicate that reads a timestamp Spark takes as an instant
    (``TimestampType``): compared with a literal, it means the wall-clock time of
    Spark's session zone, which DuckDB does not know (files written as INT96 read there
    without a zone, others in this machine's zone): its rows would differ where the zones
    do. Spark evaluates it; a timestamp without a zone (``timestamp_ntz``) is compared
    here as Spark compares it.

    >>> _refuse_zoned("n > 1", '{"fields": [{"name": "t", "type": "timestamp"}]}', None, "x")
    """
    zoned = {
        (names or {}).get(f["name"], f["name"]).lower()
        for f in json.loads(schema)["fields"]
        if _holds_instants(f["type"])
    }
    if not zoned:
        return
    read = _columns_of(predicate)
    hit = sorted(zoned if read is None else zoned & read)
    if hit:
        raise EmbeddedUnsupported(
            f"predicate {predicate!r} on {what} reads {', '.join(hit)}, timestamps of Spark's session time zone: "
            "Spark evaluates it"
        )


def _holds_instants(kind) -> bool:
    return "timestamp" in leaf_types(kind)


def leaf_types(kind) -> list[str]:
    """The atomic types in a Spark type (its JSON), through structs, arrays and maps
    (another kind's name, such as ``udt``, stands for itself).

    >>> leaf_types({"type": "array", "elementType": {"type": "map", "keyType": "string", "valueType": "date"}})
    ['string', 'date']
    """
    if isinstance(kind, str):
        return [kind]
    nested = kind.get("type")
    if nested == "struct":
        return [t for f in kind["fields"] for t in leaf_types(f["type"])]
    if nested == "array":
        return leaf_types(kind["elementType"])
    if nested == "map":
        return [*leaf_types(kind["keyType"]), *leaf_types(kind["valueType"])]
    return [str(nested)]


def duckdb_condition(predicate: str) -> str:
    """``predicate`` (Spark SQL, checked as every predicate a user types) in DuckDB's dialect.

    >>> duckdb_condition("name RLIKE '^a' AND n > 1")
    "REGEXP_MATCHES(name, '^a') AND n > 1"
    """
    import sqlglot

    check_predicate(predicate)
    try:
        return sqlglot.transpile(predicate, read="spark", write="duckdb")[0]
    except sqlglot.errors.SqlglotError as exc:
        errors = getattr(exc, "errors", None)
        reason = errors[0]["description"] if errors else str(exc).splitlines()[0]
        raise InvalidArgument(f"cannot parse predicate {predicate!r}: {reason}") from None


def _select_rids(relation: str, predicate: str, what: str, tables: dict[str, pa.Table] | None = None) -> np.ndarray:
    import duckdb

    condition = duckdb_condition(predicate)
    with connection() as con:
        for name, table in (tables or {}).items():
            con.register(name, table)
        try:
            found = con.execute(f"SELECT {RID} FROM {relation} WHERE {condition}").arrow()
        except duckdb.Error as exc:
            message = str(exc).splitlines()[0]
            if isinstance(exc, duckdb.BinderException) and "Referenced column" in message:
                raise InvalidArgument(f"cannot evaluate predicate {predicate!r} on {what}: {message}") from None
            # a function or conversion DuckDB treats differently: Spark decides
            raise EmbeddedUnsupported(f"DuckDB cannot evaluate predicate {predicate!r} on {what}: {message}") from None
    return rid_array(found[RID])
