// Java, compiled by Janino once per JVM (references.compiled): a projection's list
// that pads a branch of a union with its missing slots, in one round trip where Py4J
// takes four a slot (its type, a NULL of it, an expression id, the alias).
import java.util.ArrayList;
import org.apache.spark.api.python.PythonUtils;
import org.apache.spark.sql.catalyst.expressions.*;

public class SparkprovPadding {
  // first: the columns kept as they are; slots: one attribute per slot, named by the
  // lines of names; own: per slot '1' where the branch has it (kept), else '0' (a NULL
  // of its type under its name)
  public scala.collection.immutable.Seq padded(
      scala.collection.immutable.Seq first, scala.collection.immutable.Seq slots, String names, String own) {
    ArrayList out = new ArrayList();
    scala.collection.Iterator kept = first.iterator();
    while (kept.hasNext()) out.add(kept.next());
    String[] named = names.split("\n", -1);
    scala.collection.immutable.Seq none = (scala.collection.immutable.Seq) scala.collection.immutable.Nil$.MODULE$;
    scala.collection.Iterator each = slots.iterator();
    for (int i = 0; each.hasNext(); i++) {
      Expression slot = (Expression) each.next();
      if (own.charAt(i) == '1') {
        out.add(slot);
      } else {
        Literal empty = Literal$.MODULE$.create(null, slot.dataType());
        out.add(new Alias(empty, named[i], NamedExpression$.MODULE$.newExprId(), none, scala.Option.empty(), none));
      }
    }
    return PythonUtils.toSeq(out);
  }
}
