// Java, compiled by Janino once per JVM: a plan through the session's optimizer under
// settings of its own, in this thread alone (SQLConf.withExistingConf; Catalyst's rules
// read their settings through SQLConf.get, which answers that conf first). The
// session's settings are not touched, so a query planned in another thread meanwhile
// (a lazy capture's own output) is optimized as the user set it. ``changes`` is
// "key=value" lines, applied to a copy of ``base``.
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.RuleExecutor;
import org.apache.spark.sql.internal.SQLConf;

public class SparkprovOptimize {
  public LogicalPlan optimize(final RuleExecutor optimizer, SQLConf base, String changes, final LogicalPlan plan) {
    SQLConf conf = base.clone();
    String[] lines = changes.split("\n");
    for (int i = 0; i < lines.length; i++) {
      int eq = lines[i].indexOf('=');
      if (eq > 0) conf.setConfString(lines[i].substring(0, eq), lines[i].substring(eq + 1));
    }
    return (LogicalPlan) SQLConf.withExistingConf(conf, new scala.runtime.AbstractFunction0() {
      public Object apply() { return optimizer.execute(plan.clone()); }
    });
  }
}
