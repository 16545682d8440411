// Java, compiled by Janino once per JVM (references.compiled): whether the jobs of a job
// tag each ran every task of every stage once, asked of Spark's status store in one
// call, as observed.WatchedJobs would ask it from Python in a round trip per job and
// per stage (about 12 ms for the four stages of an aggregate's query).
import org.apache.spark.JobExecutionStatus;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkJobInfo;
import org.apache.spark.SparkStageInfo;
import org.apache.spark.SparkStatusTracker;

public class SparkprovJobs {
  public boolean ranOnce(SparkContext sc, String tag, long waitMs) {
    try {
      // the status store is fed by the listener bus, behind the scheduler: once its
      // events so far are handled, no retry of the watched jobs is left unseen
      sc.listenerBus().waitUntilEmpty(waitMs);
    } catch (Exception e) {  // too busy to tell
      return false;
    }
    SparkStatusTracker tracker = sc.statusTracker();
    int[] jobs = tracker.getJobIdsForTag(tag);
    if (jobs.length == 0) return false;
    for (int j = 0; j < jobs.length; j++) {
      scala.Option job = tracker.getJobInfo(jobs[j]);
      if (job.isEmpty()) return false;
      SparkJobInfo info = (SparkJobInfo) job.get();
      if (info.status() != JobExecutionStatus.SUCCEEDED) return false;
      int[] stages = info.stageIds();
      for (int i = 0; i < stages.length; i++) {
        scala.Option found = tracker.getStageInfo(stages[i]);
        if (found.isEmpty()) return false;
        SparkStageInfo s = (SparkStageInfo) found.get();
        if (s.currentAttemptId() != 0 || s.numFailedTasks() != 0 || s.numActiveTasks() != 0) return false;
        // none run: a stage whose shuffle another job of the tag wrote (adaptive
        // execution runs each shuffle's map stage as a job first)
        if (s.numCompletedTasks() != 0 && s.numCompletedTasks() != s.numTasks()) return false;
      }
    }
    return true;
  }
}
