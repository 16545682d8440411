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
