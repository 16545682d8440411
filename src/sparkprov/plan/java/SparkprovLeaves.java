// Java, compiled by Janino once per JVM (references.compiled): a one-file Parquet leaf
// with its rid column built in the JVM, as Bridge._reading_row_index and
// Bridge.with_file_rids build it from Python in about 15 round trips. Null when a data
// column already has the row index column's name.
import org.apache.spark.sql.catalyst.expressions.*;
import org.apache.spark.sql.catalyst.plans.logical.*;
import org.apache.spark.sql.execution.datasources.*;
import org.apache.spark.sql.types.*;

public class SparkprovLeaves {
  public LogicalPlan rowIndexRid(LogicalRelation leaf, String column, String name) {
    HadoopFsRelation rel = (HadoopFsRelation) leaf.relation();
    StructType schema = rel.dataSchema();
    if (schema.getFieldIndex(column).isDefined()) return null;
    // nullable: the reader requires it of a column the files do not hold
    StructField field = new StructField(column, DataTypes.LongType, true, Metadata.empty());
    AttributeReference index = org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttribute(field);
    StructType partitions = rel.partitionSchema();
    HadoopFsRelation relation = new HadoopFsRelation(
        rel.location(), partitions, schema.add(field), rel.bucketSpec(), rel.fileFormat(), rel.options(),
        rel.sparkSession());
    // a relation's columns are its data columns, then its partition columns
    scala.collection.immutable.Seq output = leaf.output();
    int data = output.length() - partitions.length();
    scala.collection.immutable.Seq first = (scala.collection.immutable.Seq) output.take(data);
    scala.collection.immutable.Seq withIndex = (scala.collection.immutable.Seq) first.appended(index);
    scala.collection.immutable.Seq readOutput =
        (scala.collection.immutable.Seq) withIndex.appendedAll((scala.collection.IterableOnce) output.drop(data));
    LogicalRelation read =
        new LogicalRelation(relation, readOutput, leaf.catalogTable(), leaf.isStreaming(), leaf.stream());
    scala.collection.immutable.Seq none = (scala.collection.immutable.Seq) scala.collection.immutable.Nil$.MODULE$;
    Alias rid = new Alias(
        new KnownNotNull(index), name, NamedExpression$.MODULE$.newExprId(), none, scala.Option.empty(), none);
    return new Project((scala.collection.immutable.Seq) output.appended(rid), read);
  }
}
