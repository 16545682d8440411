// Java, compiled by Janino once per JVM (references.compiled): an estimate of the bytes
// of a plan's rows that counts rows through joins. Catalyst's estimate of an inner or
// cross join multiplies its inputs' sizes in bytes, which grows with the square of
// the row width: an 8-station workflow's module joining its 480 observations (a 14 KB
// file) to a one-row request (1.4 KB) is estimated at 1.4 MB for 481 rows of 40 bytes.
// Here a join holds at most the product of its inputs' rows, each input's rows being
// its estimate over its row width, as Catalyst's own estimates divide them. Not a
// bound: a compressed file holds more rows than its size over their width says, as
// for every estimate Catalyst makes of files, and a product multiplies that shortfall.
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

public class SparkprovRows {
  // nodes whose output holds at most as many rows as their first child's (not Sample: with
  // replacement it can repeat rows)
  private static final java.util.Set FEWER = new java.util.HashSet(java.util.Arrays.asList(new String[] {
      "Project", "Filter", "Sort", "Aggregate", "Window", "SubqueryAlias", "GlobalLimit", "LocalLimit",
      "Distinct", "Deduplicate", "Repartition", "RepartitionByExpression", "ResolvedHint",
      "CollectMetrics", "Offset", "Tail", "WindowGroupLimit", "Intersect", "Except", "BatchEvalPython",
      "ArrowEvalPython"}));

  public SparkprovRows() {}

  /** The estimate in bytes: rows times the output's row width (Catalyst's estimate when smaller). */
  public double bytes(LogicalPlan plan) {
    double width = width(plan);
    return Math.min(rows(plan) * width, plan.stats().sizeInBytes().doubleValue());
  }

  // as Catalyst's EstimationUtils.getSizePerRow without column statistics (whose
  // default argument Janino cannot pass): a row's header and each type's default size
  private static double width(LogicalPlan node) {
    double width = 8;
    scala.collection.Iterator columns = node.output().iterator();
    while (columns.hasNext()) {
      width += ((org.apache.spark.sql.catalyst.expressions.Attribute) columns.next()).dataType().defaultSize();
    }
    return width;
  }

  private double rows(LogicalPlan node) {
    double rows = node.stats().sizeInBytes().doubleValue() / width(node);
    if (node.maxRows().isDefined()) rows = Math.min(rows, ((Long) node.maxRows().get()).doubleValue());
    scala.collection.Seq children = node.children();
    String name = node.nodeName();
    if (node instanceof Join) {
      String type = ((Join) node).joinType().getClass().getSimpleName();  // LeftSemi$, ExistenceJoin...
      double left = rows((LogicalPlan) children.apply(0));
      if (type.startsWith("LeftSemi") || type.startsWith("LeftAnti") || type.startsWith("ExistenceJoin")) {
        return Math.min(rows, left);
      }
      double right = rows((LogicalPlan) children.apply(1));
      return Math.min(rows, (left + 1) * (right + 1) - 1);  // an outer join's unmatched rows too
    }
    if (name.equals("Union")) {
      double sum = 0;
      for (int i = 0; i < children.size(); i++) sum += rows((LogicalPlan) children.apply(i));
      return Math.min(rows, sum);
    }
    if (children.size() >= 1 && FEWER.contains(name)) {
      return Math.min(rows, rows((LogicalPlan) children.apply(0)));
    }
    return rows;
  }
}
