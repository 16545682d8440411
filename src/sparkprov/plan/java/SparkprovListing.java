// Java, compiled by Janino once per JVM (references.compiled): the files under some
// paths listed in one round trip, where Bridge.list_files takes about eight a file and
// six a path through Py4J. Hadoop's API only: the same source for every Spark line.
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.internal.SessionState;

public class SparkprovListing {
  // paths: URIs, a line each; the answer: a line per file under them, its URI, length
  // and modification time between tabs (URIs spell a tab or a line break with %),
  // skipping names that start with . or _ as Spark's file index does
  public String listed(SessionState state, String paths) throws Exception {
    Configuration conf = state.newHadoopConf();
    StringBuilder out = new StringBuilder();
    String[] each = paths.split("\n");
    for (int i = 0; i < each.length; i++) {
      if (each[i].length() == 0) continue;
      Path path = new Path(new java.net.URI(each[i]));
      FileSystem fs = path.getFileSystem(conf);
      if (!fs.exists(path)) continue;
      RemoteIterator files = fs.listFiles(path, true);
      while (files.hasNext()) {
        LocatedFileStatus st = (LocatedFileStatus) files.next();
        String name = st.getPath().getName();
        if (name.startsWith(".") || name.startsWith("_")) continue;
        out.append(st.getPath().toUri().toString()).append('\t').append(st.getLen()).append('\t')
            .append(st.getModificationTime()).append('\n');
      }
    }
    return out.toString();
  }

  // the folder's path as the file system qualifies it (a URI)
  public String qualified(SessionState state, String folder) throws Exception {
    Path path = new Path(folder);
    return path.getFileSystem(state.newHadoopConf()).makeQualified(path).toUri().toString();
  }
}
