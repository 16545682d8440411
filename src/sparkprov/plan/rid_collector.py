"""The aggregate function an injected aggregate keeps its groups' rids with.

Spark's ``collect_list`` keeps a group's values as boxed objects in a Scala buffer,
converts them to Spark's array format and back at every exchange, and is followed by
``flatten`` (an inner injected aggregate's arrays) and ``array_distinct`` (a join below
may repeat a row) as expressions of their own. Rids are longs: ``SparkprovRidCollector``
(Java, compiled once per JVM by Janino, like the other helpers in this package, and
shipped to the executors in a jar added to the SparkContext) keeps them in a
``long[]``, appends an inner aggregate's array in place and exchanges buffers as their
raw bytes. Where a join below may repeat a row, it drops repeats as the buffer fills (a
repeat of the last value at once, the rest by sorting what came since the last time and
merging it with what that left) and before a buffer is exchanged: a group's memory and
shuffled bytes follow its distinct rids, not its rows, and its array comes out sorted.
Like ``collect_list`` it skips NULLs and gives an empty array to a group without rids.

Spark still runs an aggregate holding it as an ``ObjectHashAggregate``, as with
``collect_list``: only the collecting is cheaper (``sparkprov bench aggregates``).
Values of another type (handles, an RDD's keys) are not its to collect:
``collect_rids`` answers None and the caller keeps ``collect_list``.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> df = spark.range(5).selectExpr("id % 2 AS g", "id AS rid", "CAST(id AS INT) AS n")
>>> arrays = rids_column(df, "rid", distinct=True).alias("rids")
>>> sorted((r.g, r.rids) for r in df.groupBy("g").agg(arrays).collect())
[(0, [0, 2, 4]), (1, [1, 3])]
>>> rids_column(df, "n")
Traceback (most recent call last):
ValueError: column n holds int, not rids (bigint)
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
import weakref
import zipfile
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, SparkSession

from ..errors import InvalidArgument, JvmHelperUnavailable
from .references import bytecode, compiled

log = logging.getLogger("sparkprov")

JExpr = Any

_CLASS = "SparkprovRidCollector"
_SOURCE = """
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.ImperativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.Platform;

public class SparkprovRidCollector {
  /** The aggregate expression collecting child's longs (nested: the longs of its arrays);
   * null when child holds something else. */
  public AggregateExpression of(Expression child, boolean nested, boolean distinct) {
    DataType type = child.dataType();
    if (nested) type = type instanceof ArrayType ? ((ArrayType) type).elementType() : null;
    if (!DataTypes.LongType.equals(type)) return null;
    return new Rids(child, Boolean.valueOf(nested), Boolean.valueOf(distinct), Integer.valueOf(0), Integer.valueOf(0))
        .toAggregateExpression();
  }

  public static final class Buffer {
    long[] values = new long[8];
    int size;
    // values[0, sorted) hold distinct values in order: what the last compaction left
    int sorted;
    // whether repeats are dropped as the buffer fills (the collector's distinct)
    final boolean compacting;

    Buffer(boolean compacting) { this.compacting = compacting; }

    void add(long value) {
      // rows that repeat a rid often arrive together (an order's rid joined to each of
      // its lineitems): the last value catches them without a sort
      if (compacting && size > 0 && values[size - 1] == value) return;
      if (size == values.length) makeRoom(1);
      values[size++] = value;
    }

    void addAll(long[] more, int count) {
      if (size + count > values.length) makeRoom(count);
      System.arraycopy(more, 0, values, size, count);
      size += count;
    }

    void addArray(ArrayData array) {
      int count = array.numElements();
      for (int i = 0; i < count; i++) if (!array.isNullAt(i)) add(array.getLong(i));
    }

    /** Room for count more values: repeats dropped first when compacting, and the array
     * doubled unless that left it half empty. A group's memory then follows its distinct
     * rids, not its rows (a nation's rid joined to every lineitem of the nation). */
    private void makeRoom(int count) {
      if (compacting && size - sorted >= 64) compact();
      if (size + count <= values.length / 2) return;
      values = java.util.Arrays.copyOf(values, Math.max(size + count, values.length * 2));
    }

    /** Sort and drop repeats: the new values sorted, then merged into the sorted ones. */
    void compact() {
      if (sorted == size) return;
      java.util.Arrays.sort(values, sorted, size);
      int end = sorted;
      for (int i = sorted; i < size; i++) if (end == sorted || values[i] != values[end - 1]) values[end++] = values[i];
      if (sorted == 0) {
        size = sorted = end;
        return;
      }
      long[] merged = new long[values.length];
      int i = 0, j = sorted, k = 0;
      while (i < sorted && j < end) {
        long a = values[i], b = values[j];
        if (a <= b) { merged[k++] = a; i++; if (a == b) j++; }
        else { merged[k++] = b; j++; }
      }
      while (i < sorted) merged[k++] = values[i++];
      while (j < end) merged[k++] = values[j++];
      values = merged;
      size = sorted = k;
    }
  }

  public static final class Rids extends TypedImperativeAggregate implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    // boxed: Catalyst copies a node through its constructor with its product's elements
    private final Expression child;
    private final Boolean nested;
    private final Boolean distinct;
    private final Integer mutableOffset;
    private final Integer inputOffset;

    public Rids(Expression child, Boolean nested, Boolean distinct, Integer mutableOffset, Integer inputOffset) {
      this.child = child;
      this.nested = nested;
      this.distinct = distinct;
      this.mutableOffset = mutableOffset;
      this.inputOffset = inputOffset;
    }

    public Object createAggregationBuffer() { return new Buffer(distinct.booleanValue()); }

    public Object update(Object state, InternalRow input) {
      Buffer buffer = (Buffer) state;
      if (child instanceof BoundReference) {  // the usual case, read without boxing
        int ordinal = ((BoundReference) child).ordinal();
        if (input.isNullAt(ordinal)) return buffer;
        if (nested.booleanValue()) buffer.addArray(input.getArray(ordinal));
        else buffer.add(input.getLong(ordinal));
        return buffer;
      }
      Object value = child.eval(input);
      if (value == null) return buffer;
      if (nested.booleanValue()) buffer.addArray((ArrayData) value);
      else buffer.add(((Long) value).longValue());
      return buffer;
    }

    public Object merge(Object state, Object other) {
      Buffer more = (Buffer) other;
      ((Buffer) state).addAll(more.values, more.size);
      return state;
    }

    public Object eval(Object state) {
      Buffer buffer = (Buffer) state;
      if (buffer.compacting) buffer.compact();
      return UnsafeArrayData.fromPrimitiveArray(java.util.Arrays.copyOf(buffer.values, buffer.size));
    }

    public byte[] serialize(Object state) {
      Buffer buffer = (Buffer) state;
      if (buffer.compacting) buffer.compact();  // fewer bytes through the exchange
      byte[] bytes = new byte[buffer.size * 8];
      Platform.copyMemory(buffer.values, Platform.LONG_ARRAY_OFFSET, bytes, Platform.BYTE_ARRAY_OFFSET, bytes.length);
      return bytes;
    }

    public Object deserialize(byte[] bytes) {
      Buffer buffer = new Buffer(distinct.booleanValue());
      buffer.size = bytes.length / 8;
      if (buffer.compacting) buffer.sorted = buffer.size;  // serialize compacted it
      buffer.values = new long[Math.max(8, buffer.size)];
      Platform.copyMemory(bytes, Platform.BYTE_ARRAY_OFFSET, buffer.values, Platform.LONG_ARRAY_OFFSET, bytes.length);
      return buffer;
    }

    public int mutableAggBufferOffset() { return mutableOffset.intValue(); }
    public int inputAggBufferOffset() { return inputOffset.intValue(); }
    public ImperativeAggregate withNewMutableAggBufferOffset(int offset) {
      return new Rids(child, nested, distinct, Integer.valueOf(offset), inputOffset);
    }
    public ImperativeAggregate withNewInputAggBufferOffset(int offset) {
      return new Rids(child, nested, distinct, mutableOffset, Integer.valueOf(offset));
    }

    public boolean nullable() { return false; }
    public DataType dataType() { return DataTypes.createArrayType(DataTypes.LongType, false); }
    public String prettyName() { return "sparkprov_rids"; }

    public scala.collection.immutable.Seq children() {
      return scala.collection.immutable.List$.MODULE$.empty().$colon$colon(child);
    }
    public TreeNode withNewChildrenInternal(scala.collection.immutable.IndexedSeq children) {
      return new Rids((Expression) children.apply(0), nested, distinct, mutableOffset, inputOffset);
    }

    // a case class's equality: Catalyst finds an aggregate again by comparing copies
    public int productArity() { return 5; }
    public Object productElement(int n) {
      switch (n) {
        case 0: return child;
        case 1: return nested;
        case 2: return distinct;
        case 3: return mutableOffset;
        default: return inputOffset;
      }
    }
    public boolean canEqual(Object other) { return other instanceof Rids; }
    public boolean equals(Object other) {
      if (!(other instanceof Rids)) return false;
      Rids o = (Rids) other;
      return child.equals(o.child) && nested.equals(o.nested) && distinct.equals(o.distinct)
          && mutableOffset.equals(o.mutableOffset) && inputOffset.equals(o.inputOffset);
    }
    public int hashCode() {
      return (((child.hashCode() * 31 + nested.hashCode()) * 31 + distinct.hashCode()) * 31
          + mutableOffset.intValue()) * 31 + inputOffset.intValue();
    }
  }
}
"""

_LOCK = threading.Lock()
_SHIPPED: weakref.WeakKeyDictionary[SparkContext, bool] = weakref.WeakKeyDictionary()


def collect_rids(spark: SparkSession, attr: JExpr, nested: bool, distinct: bool) -> JExpr | None:
    """The aggregate expression collecting ``attr``'s rids (longs; the longs of its arrays
    when ``nested``) into one array per group, sorted and without repeats when
    ``distinct``; None when ``attr`` holds something else, or the function cannot be
    compiled or shipped to the executors (logged once)."""
    maker = compiled(spark, _CLASS, _SOURCE)
    if maker is None or not _shipped(spark):
        return None
    return maker.of(attr, nested, distinct)


def rids_column(df: DataFrame, name: str, distinct: bool = False) -> Column:
    """The aggregate column collecting ``df``'s rid column ``name`` (longs) into an
    array per group, as an injected aggregate does; a ValueError when ``name`` holds
    something else, a RuntimeError when the function is not available."""
    from pyspark.sql.classic.column import Column as ClassicColumn

    spark = df.sparkSession
    kind = df.schema[name].dataType.simpleString()
    if kind != "bigint":
        raise InvalidArgument(f"column {name} holds {kind}, not rids (bigint)")
    utils = spark._jvm.org.apache.spark.sql.classic.ExpressionUtils
    made = collect_rids(spark, utils.expression(df[name]._jc), nested=False, distinct=distinct)
    if made is None:
        raise JvmHelperUnavailable("the rid collector could not be compiled or shipped (see the log)")
    return ClassicColumn(utils.column(made))


def _shipped(spark: SparkSession) -> bool:
    # executors load the class from a jar: they do not see Janino's class loader
    sc = spark.sparkContext
    with _LOCK:
        if sc not in _SHIPPED:
            _SHIPPED[sc] = _ship(spark)
        return _SHIPPED[sc]


def _ship(spark: SparkSession) -> bool:
    folder = Path(tempfile.mkdtemp(prefix="sparkprov-jar-"))
    atexit.register(shutil.rmtree, folder, True)
    jar = folder / "sparkprov-rids.jar"
    try:
        with zipfile.ZipFile(jar, "w") as written:
            for name, code in bytecode(spark, _CLASS).items():
                written.writestr(name.replace(".", "/") + ".class", code)
        spark.sparkContext._jsc.sc().addJar(str(jar))
    except Exception:  # the jar cannot be written or added: collect_list stays
        log.warning("sparkprov: rids are collected by collect_list (the collector jar was not added)", exc_info=True)
        return False
    return True
