// Java, compiled by Janino once per JVM (references.compiled): a Scala Seq of up to ten
// elements (nulls too) made in one round trip, where Py4J takes two (a Java list, then
// PythonUtils.toSeq). One method per arity: Py4J does not pack arguments into varargs.
import java.util.Arrays;
import org.apache.spark.api.python.PythonUtils;

public class SparkprovSeqs {
  public scala.collection.immutable.Seq seq() { return PythonUtils.toSeq(new java.util.ArrayList()); }
  public scala.collection.immutable.Seq seq(Object a0) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3, Object a4) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3, a4})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3, Object a4, Object a5) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3, a4, a5})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3, Object a4, Object a5, Object a6) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3, a4, a5, a6})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3, Object a4, Object a5, Object a6, Object a7) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3, a4, a5, a6, a7})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3, Object a4, Object a5, Object a6, Object a7, Object a8) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3, a4, a5, a6, a7, a8})); }
  public scala.collection.immutable.Seq seq(Object a0, Object a1, Object a2, Object a3, Object a4, Object a5, Object a6, Object a7, Object a8, Object a9) { return PythonUtils.toSeq(Arrays.asList(new Object[] {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9})); }
}
