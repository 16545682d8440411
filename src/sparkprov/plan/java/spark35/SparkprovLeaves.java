// Java, compiled by Janino once per JVM (references.compiled): java/SparkprovLeaves.java
// for Spark 3.5, whose Scala 2.12 sequences have no appended/appendedAll callable from
// Java (their :+ takes an implicit builder) and whose LogicalRelation has no stream.
// The sequences are built as Java lists instead.
import org.apache.spark.api.python.PythonUtils;
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
    java.util.ArrayList output = new java.util.ArrayList();
    scala.collection.Iterator it = leaf.output().iterator();
    while (it.hasNext()) output.add(it.next());
    int data = output.size() - partitions.length();
    java.util.ArrayList readOutput = new java.util.ArrayList(output.subList(0, data));
    readOutput.add(index);
    readOutput.addAll(output.subList(data, output.size()));
    LogicalRelation read =
        new LogicalRelation(relation, PythonUtils.toSeq(readOutput), leaf.catalogTable(), leaf.isStreaming());
    scala.collection.Seq none = (scala.collection.Seq) scala.collection.immutable.Nil$.MODULE$;
    Alias rid = new Alias(
        new KnownNotNull(index), name, NamedExpression$.MODULE$.newExprId(), none, scala.Option.empty(), none);
    java.util.ArrayList projected = new java.util.ArrayList(output);
    projected.add(rid);
    return new Project(PythonUtils.toSeq(projected), read);
  }
}
