// Java, compiled by Janino once per JVM (references.compiled): TCP_NODELAY set on the
// sockets of this JVM's Py4J connections (plan/replies.py says why). The connections
// are reached from the one serving this call, the Runnable of the current thread.
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import py4j.ClientServerConnection;
import py4j.GatewayServer;

public class SparkprovSockets {
  // how many connections now send their replies at once
  public int quickReplies() {
    Object task = runnable(Thread.currentThread());
    if (!(task instanceof ClientServerConnection)) return 0;  // not PySpark's pinned threads
    List every = new ArrayList();
    try {
      Object server = field(ClientServerConnection.class, "javaServer").get(task);
      List connections = (List) field(GatewayServer.class, "connections").get(server);
      synchronized (connections) {
        every.addAll(connections);
      }
    } catch (Exception e) {
      // another Py4J's fields: this connection alone
    }
    if (!every.contains(task)) every.add(task);
    int set = 0;
    for (int i = 0; i < every.size(); i++) {
      Object connection = every.get(i);
      if (!(connection instanceof ClientServerConnection)) continue;
      try {
        ((ClientServerConnection) connection).getSocket().setTcpNoDelay(true);
        set++;
      } catch (Exception e) {
        // closed since: nothing to send on
      }
    }
    return set;
  }

  private static Field field(Class owner, String name) throws NoSuchFieldException {
    Field found = owner.getDeclaredField(name);
    found.setAccessible(true);
    return found;
  }

  // the Runnable a thread runs: Thread.target up to Java 18, Thread.holder.task after
  private static Object runnable(Thread thread) {
    try {
      return field(Thread.class, "target").get(thread);
    } catch (Exception e) {
      // the later layout, below
    }
    try {
      Object held = field(Thread.class, "holder").get(thread);
      return field(held.getClass(), "task").get(held);
    } catch (Exception e) {  // java.lang not opened to this code: replies stay as they were
      return null;
    }
  }
}
