// Java, compiled by Janino once per JVM: a plan's whole tree in one round trip, where
// Py4J takes one per node and question. Preorder; per node its id in the gateway's
// bindings (empty for the root, whose proxy the caller holds), its number of children,
// its name, its one-line description and whether it has each of the tree patterns named.
import org.apache.spark.sql.catalyst.trees.TreeNode;

public class SparkprovTree {
  private final py4j.Gateway gateway;

  public SparkprovTree(py4j.Gateway gateway) { this.gateway = gateway; }

  public String walk(TreeNode root, int maxFields, String names) {
    // the patterns by name (comma-separated): one argument, whatever their number
    String[] named = names.split(",");
    scala.Enumeration.Value[] patterns = new scala.Enumeration.Value[named.length];
    for (int i = 0; i < named.length; i++) {
      patterns[i] = org.apache.spark.sql.catalyst.trees.TreePattern$.MODULE$.withName(named[i]);
    }
    // everything read first: nothing is put in the bindings unless the whole answer is given
    java.util.ArrayList nodes = new java.util.ArrayList();
    java.util.ArrayList parts = new java.util.ArrayList();
    java.util.ArrayDeque stack = new java.util.ArrayDeque();
    stack.push(root);
    while (!stack.isEmpty()) {
      TreeNode node = (TreeNode) stack.pop();
      java.util.ArrayList kids = new java.util.ArrayList();
      scala.collection.Iterator it = node.children().iterator();
      while (it.hasNext()) kids.add(it.next());
      for (int i = kids.size() - 1; i >= 0; i--) stack.push(kids.get(i));
      StringBuilder part = new StringBuilder();
      part.append((char) 1).append(kids.size()).append((char) 1).append(clean(node.nodeName()));
      part.append((char) 1).append(clean(node.simpleString(maxFields))).append((char) 1);
      for (int i = 0; i < patterns.length; i++) part.append(node.containsPattern(patterns[i]) ? '1' : '0');
      part.append((char) 1);
      // a leaf's output, as Bridge.output_ids spells it: the key its source is known by
      if (kids.isEmpty() && node instanceof org.apache.spark.sql.catalyst.plans.QueryPlan) {
        scala.collection.Iterator attrs = ((org.apache.spark.sql.catalyst.plans.QueryPlan) node).output().iterator();
        StringBuilder ids = new StringBuilder();
        while (attrs.hasNext()) {
          if (ids.length() > 0) ids.append(',');
          ids.append(attrs.next().toString());
        }
        part.append(clean(ids.toString()));
      }
      nodes.add(node);
      parts.add(part.toString());
    }
    StringBuilder out = new StringBuilder();
    for (int k = 0; k < nodes.size(); k++) {
      if (k > 0) out.append(gateway.putNewObject(nodes.get(k)));
      out.append((String) parts.get(k)).append((char) 2);
    }
    return out.toString();
  }

  private static String clean(String text) {
    return text.replace((char) 1, ' ').replace((char) 2, ' ');
  }
}
