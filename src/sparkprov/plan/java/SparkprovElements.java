// Java, compiled by Janino. A Scala collection's elements are put in the gateway's
// bindings (as Py4J puts an object it returns), and their ids joined in one string,
// each followed by the results of the element's named getters ("exprId.id": a chain
// of public methods without arguments), which must not contain the separators. A
// null element has an empty id. The answer is null when an element is a value Py4J
// would convert (a string, a number): those take Py4J's own path.
public class SparkprovElements {
  private final py4j.Gateway gateway;

  public SparkprovElements(py4j.Gateway gateway) { this.gateway = gateway; }

  public String idsOf(Object owner, String method, String getters) throws Exception {
    return ids((scala.collection.Iterable) owner.getClass().getMethod(method).invoke(owner), getters);
  }

  public String ids(scala.collection.Iterable elements, String getters) throws Exception {
    String[] chains = getters.isEmpty() ? new String[0] : getters.split(",");
    // everything read first: nothing is put in the bindings (where only a proxy would
    // release it) unless the whole answer can be given
    java.util.ArrayList found = new java.util.ArrayList();
    java.util.ArrayList values = new java.util.ArrayList();
    scala.collection.Iterator it = elements.iterator();
    while (it.hasNext()) {
      Object element = it.next();
      if (element instanceof String || element instanceof Number || element instanceof Boolean
          || element instanceof Character) {
        return null;
      }
      found.add(element);
      for (int i = 0; element != null && i < chains.length; i++) {
        Object value = element;
        String[] names = chains[i].split("[.]");
        for (int j = 0; j < names.length; j++) {
          value = value.getClass().getMethod(names[j]).invoke(value);
        }
        values.add(String.valueOf(value));
      }
    }
    StringBuilder out = new StringBuilder();
    int at = 0;
    for (int k = 0; k < found.size(); k++) {
      Object element = found.get(k);
      if (element != null) {
        out.append(gateway.putNewObject(element));
        for (int i = 0; i < chains.length; i++) out.append((char) 1).append((String) values.get(at++));
      }
      out.append((char) 2);
    }
    return out.toString();
  }
}
