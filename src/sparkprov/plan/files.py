"""The files relations read: the HadoopFsRelation behind a leaf, its format, root
paths and files (path, size, modification time, spelled as scans spell them), the
files under paths now, the bytes leaves read; and a Parquet leaf's rid column (file
number and row index), built as Catalyst nodes.

>>> import tempfile
>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> folder = tempfile.TemporaryDirectory()
>>> spark.range(3).coalesce(1).write.parquet(folder.name + "/t")
>>> leaf = b.analyzed(spark.read.parquet(folder.name + "/t"))
>>> relation = b.file_relation(leaf)
>>> paths = [path for path, _, _ in b.files(relation)]
>>> b.file_format(relation), len(paths)
('parquet', 1)
>>> with_rids = b.with_file_rids(leaf, paths, 40, "rid")
>>> sorted(row.rid for row in b.to_dataframe(with_rids).collect())
[0, 1, 2]
>>> folder.cleanup()
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import InvalidArgument, UnsupportedOperation
from .handles import JExpr, JPlan
from .references import described

_NOT_FILES = object()  # remembered for a LogicalRelation that is not over files
_FILE_GETTERS = ("getPath.toUri", "getLen", "getModificationTime")  # a file's entry, read in the JVM
_EMPTY_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):///")


def _uri(hadoop_path: Any) -> str:
    return _spelled(hadoop_path.toUri().toString())


def _spelled(uri: str) -> str:
    # Scans report "file:/x" where listings may say "file:///x": one spelling for both.
    return _EMPTY_AUTHORITY.sub(r"\1:/", uri)


# Java, compiled by Janino once per JVM (references.compiled): plan/java/SparkprovLeaves.java
_LEAVES_CLASS = "SparkprovLeaves"
_LISTING_CLASS = "SparkprovListing"  # plan/java/SparkprovListing.java, likewise


def _hidden_index(column: str, leaf: Any) -> UnsupportedOperation:
    return UnsupportedOperation(
        "LogicalRelation", leaf.simpleString(8), f"a Parquet column named {column} hides the row index"
    )


class Files:
    """What ``Bridge`` reads of the files relations read, and the rids it builds for
    them (a mixin: ``Bridge.__init__`` sets the ``spark``, ``jvm``, ``line``, ``jsession``,
    ``_expr``, ``_logical``, ``_fs_class``, ``_leaves``, ``_listing`` and ``_row_index`` it uses)."""

    def file_relation(self, node: JPlan) -> Any | None:
        """The HadoopFsRelation behind a LogicalRelation, else None."""
        if self.node_name(node) != "LogicalRelation":
            return None
        found = self._remembered(node, 5, lambda: self._fs_relation(node))
        return None if found is _NOT_FILES else found

    def _fs_relation(self, node: JPlan) -> Any:
        rel = node.relation()
        if self._fs_class is None:
            self._fs_class = self.jvm.java.lang.Class.forName(
                "org.apache.spark.sql.execution.datasources.HadoopFsRelation"
            )
        return rel if self._fs_class.isInstance(rel) else _NOT_FILES

    def file_format(self, fs_relation: Any) -> str:
        return self._remembered(fs_relation, 6, lambda: str(fs_relation.fileFormat().toString()).lower())

    def files(self, fs_relation: Any) -> list[tuple[str, int, int]]:
        """(url-encoded path as ``_metadata.file_path`` shows it, size, mtime) per file."""
        return list(self._remembered(fs_relation, 8, lambda: self._file_entries(fs_relation)))

    def _file_entries(self, fs_relation: Any) -> list[tuple[str, int, int]]:
        # one round trip for all of them, not five per file
        found = described(self.spark, fs_relation.location(), "allFiles", _FILE_GETTERS)
        if found is None:
            return [self._file_entry(st) for st in self.to_list(fs_relation.location().allFiles())]
        return [(_spelled(uri), int(size), int(mtime)) for _, (uri, size, mtime) in found]

    @staticmethod
    def _file_entry(status: Any) -> tuple[str, int, int]:
        return _uri(status.getPath()), int(status.getLen()), int(status.getModificationTime())

    def root_paths(self, fs_relation: Any) -> list[str]:
        return list(self._remembered(fs_relation, 7, lambda: self._roots(fs_relation)))

    def _roots(self, fs_relation: Any) -> list[str]:
        found = described(self.spark, fs_relation.location(), "rootPaths", ("toUri",))
        if found is None:
            return [_uri(p) for p in self.to_list(fs_relation.location().rootPaths())]
        return [_spelled(uri) for _, (uri,) in found]

    def qualified(self, folder: str) -> str:
        """``folder`` as Spark's writes resolve it: a URI of the file system it names (a
        path without a scheme is on Hadoop's default file system), the root path a
        reading of it reports (:meth:`root_paths`; its files: :meth:`list_files`)."""
        if self._listing_helper():
            return _spelled(self._listing.qualified(self._session_state(), folder))
        jpath = self.jvm.org.apache.hadoop.fs.Path(folder)
        return _uri(jpath.getFileSystem(self._session_state().newHadoopConf()).makeQualified(jpath))

    def list_files(self, paths: list[str]) -> list[tuple[str, int, int]]:
        """Files under ``paths`` now, as :meth:`files` reports them (for change checks)."""
        if self._listing_helper() and not any("\n" in p for p in paths):
            listed = self._listing.listed(self._session_state(), "\n".join(paths))
            entries = [line.split("\t") for line in listed.split("\n")[:-1]]
            return [(_spelled(uri), int(size), int(mtime)) for uri, size, mtime in entries]
        hconf = self._session_state().newHadoopConf()
        out = []
        for p in paths:
            jpath = self.jvm.org.apache.hadoop.fs.Path(self.jvm.java.net.URI(p))
            fs = jpath.getFileSystem(hconf)
            if not fs.exists(jpath):
                continue
            it = fs.listFiles(jpath, True)
            while it.hasNext():
                st = it.next()
                if not st.getPath().getName().startswith((".", "_")):  # Spark skips these too
                    out.append(self._file_entry(st))
        return out

    def size_estimate(self, plan: JPlan) -> int:
        """Catalyst's size estimate for ``plan`` (a statistic, no job)."""
        return int(str(plan.stats().sizeInBytes()))  # a Scala BigInt

    def leaf_bytes(self, plan: JPlan, cached: dict[int, int] | None = None) -> int:
        """The size Catalyst estimates for the relations ``plan`` reads, summed (file
        sizes; a statistic, no job). Its estimate for ``plan`` itself is no bound
        without cost-based statistics: it multiplies the sizes of a join's inputs.
        ``cached``: for cached relations (by the id of their first column) not yet
        filled, the leaf bytes of the plans they cache, counted in their place (their
        own estimate is that of their plan: a join's product)."""
        found = described(self.spark, plan, "collectLeaves", ("stats.sizeInBytes", "nodeName"))
        if found is None:
            leaves = self.to_list(plan.collectLeaves())
            found = [(leaf, (self.size_estimate(leaf), self.node_name(leaf))) for leaf in leaves]
        total = 0
        for leaf, (size, name) in found:
            if cached and name == "InMemoryRelation":
                columns = self.output(leaf)
                size = cached.get(self.expr_id(columns[0]), size) if columns else size
            total += int(size)
        return total

    def _listing_helper(self) -> Any:
        return self._java_helper("_listing", _LISTING_CLASS)

    def _leaves_helper(self) -> Any:
        return self._java_helper("_leaves", _LEAVES_CLASS)

    def with_file_rids(self, leaf: JPlan, files: list[str], row_bits: int, name: str) -> JPlan:
        """``leaf`` (a LogicalRelation over Parquet files) with a column ``name`` after its
        own: each row's rid, ``file number << row_bits | row index``, where the file
        number is the position of ``_metadata.file_path`` in ``files`` (a path not there
        fails the query; one file: the row index alone). The values
        ``sources/identity.rid_column`` gives through the DataFrame API, built as Catalyst
        nodes: selecting that column analyzes a new Dataset, tens of milliseconds per
        leaf, and a capture's plan has one leaf per relation it reads."""
        if len(files) == 1 and self._leaves_helper():
            # the rid is the row index: the whole leaf built in one round trip
            column, _ = self._row_index_constants()
            built = self._leaves.rowIndexRid(leaf, column, name)
            if built is None:
                raise _hidden_index(column, leaf)
            return built
        e, types = self._expr, self.jvm.org.apache.spark.sql.types.DataTypes
        read, index = self._reading_row_index(leaf)
        rid = e.KnownNotNull(index)
        if len(files) != 1:
            # the file source's metadata struct (named _metadata unless a data column is)
            metas = self.to_list(read.metadataOutput())
            found = [a for a in metas if a.dataType().getFieldIndex("file_path").isDefined()]
            if not found:
                raise UnsupportedOperation(
                    "LogicalRelation", leaf.simpleString(8), "the Parquet relation gives no file path"
                )
            meta = found[0]
            at = meta.dataType().fieldIndex("file_path")
            path = e.GetStructField(meta, at, self.jvm.scala.Option.apply("file_path"))
            # the paths as one array literal: one string split in the JVM, not a round
            # trip per file (URIs spell a line break %0A)
            broken = [f for f in files if "\n" in f]
            if broken:
                raise InvalidArgument(f"a file path with a line break: {broken[0]!r}")
            paths = self.jvm.java.util.regex.Pattern.compile("\n").split("\n".join(files))
            position = e.ArrayPosition(e.Literal.create(paths, types.createArrayType(types.StringType, False)), path)
            unknown = e.RaiseError(
                e.Concat(self.seq([self.string_literal("sparkprov: file not known to the capture: "), path]))
            )
            zero = e.Cast(self.int_literal(0), types.LongType, self.none())
            number = e.If(
                e.EqualTo(position, zero),  # array_position is 1-based, 0 when absent
                e.Cast(unknown, types.LongType, self.none()),
                e.Subtract(position, e.Cast(self.int_literal(1), types.LongType, self.none())),
            )
            rid = e.BitwiseOr(e.ShiftLeft(number, self.int_literal(row_bits)), rid)
            read = read.withMetadataColumns()
        # the leaf's columns with the rid appended, in the JVM: one call, not one per column
        return self._logical.Project(self.line.appended(self.jvm, leaf.output(), self.alias(rid, name)), read)

    def _reading_row_index(self, leaf: JPlan) -> tuple[JPlan, JExpr]:
        """``leaf`` reading each row's index in its file as one more data column, and
        that column. The Parquet reader fills a requested column of this reserved name
        with the row index; ``_metadata.row_index`` reads the same column, but then
        wraps it in a ``_metadata`` struct built for every row, which costs as much
        again as the index itself (a lineitem scan at SF 1: 0.24 s plain, 0.35 s with
        ``_metadata.row_index``, 0.30 s with this column)."""
        column, empty_metadata = self._row_index_constants()
        rel = self.file_relation(leaf)
        schema = rel.dataSchema()
        if schema.getFieldIndex(column).isDefined():
            raise _hidden_index(column, leaf)
        types = self.jvm.org.apache.spark.sql.types
        # nullable: the reader requires it of a column the files do not hold
        field = types.StructField(column, types.DataTypes.LongType, True, empty_metadata)
        index = self.jvm.org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttribute(field)
        partitions = rel.partitionSchema()
        relation = self.jvm.org.apache.spark.sql.execution.datasources.HadoopFsRelation(
            rel.location(),
            partitions,
            schema.add(field),
            rel.bucketSpec(),
            rel.fileFormat(),
            rel.options(),
            rel.sparkSession(),
        )
        # a relation's columns are its data columns, then its partition columns
        output = leaf.output()
        partitioned = partitions.length()
        if partitioned:
            data = output.length() - partitioned
            output = self.line.concatenated(
                self.jvm, self.line.appended(self.jvm, output.take(data), index), output.drop(data)
            )
        else:
            output = self.line.appended(self.jvm, output, index)
        read = self.line.logical_relation(self.jvm, relation, output, leaf)
        return read, index

    def _row_index_constants(self) -> tuple[str, Any]:
        # the reserved column's name and an empty field metadata: the same for every leaf
        if self._row_index is None:
            parquet = self.jvm.org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
            empty = self.jvm.org.apache.spark.sql.types.Metadata.empty()
            self._row_index = (parquet.ROW_INDEX_TEMPORARY_COLUMN_NAME(), empty)
        return self._row_index
