"""What Spark and its driver JVM count of themselves: the executor time of the stages
finished since a given one (from Spark's status store, for the benchmarks), and the
driver's G1 heap region size.
"""

from __future__ import annotations

from pyspark.sql import SparkSession


def task_seconds(spark: SparkSession, after: int = -1) -> tuple[int, tuple[float, float, float]]:
    """Executor time spent by the stages finished since stage ``after``, from Spark's
    status store (what its UI shows; kept with the UI off too): the newest stage's id,
    and the tasks' summed run time, CPU time and JVM GC time, in seconds.

    Events reach the store asynchronously, so the listener bus is drained first: a job
    that just returned has its stages counted.

    >>> from pyspark.sql import SparkSession
    >>> spark = SparkSession.builder.getOrCreate()
    >>> newest, _ = task_seconds(spark)
    >>> _ = spark.range(1000).selectExpr("sum(id)").collect()
    >>> later, (run, cpu, gc) = task_seconds(spark, newest)
    >>> later > newest and run >= 0 and cpu > 0
    True
    """
    sc = spark.sparkContext
    jsc = sc._jsc.sc()  # type: ignore[union-attr]
    jsc.listenerBus().waitUntilEmpty(10_000)
    jvm = sc._jvm
    quantiles = sc._gateway.new_array(jvm.double, 0)  # type: ignore[union-attr]
    no_filter = jvm.java.util.ArrayList  # type: ignore[union-attr]
    # AppStatusStore.stageList(statuses, details, withSummaries, quantiles, taskStatuses):
    # every stage attempt the store keeps, newest first
    stages = jsc.statusStore().stageList(no_filter(), False, False, quantiles, no_filter())
    newest, run, cpu, gc = after, 0.0, 0.0, 0.0
    it = stages.iterator()
    while it.hasNext():
        s = it.next()
        stage = s.stageId()
        if stage <= after:
            break
        newest = max(newest, stage)
        if s.status().toString() == "COMPLETE":
            run += s.executorRunTime() / 1e3
            cpu += s.executorCpuTime() / 1e9
            gc += s.jvmGcTime() / 1e3
    return newest, (run, cpu, gc)


class Accounting:
    """What ``Bridge`` reads of its JVM (a mixin: ``Bridge.__init__`` sets the ``jvm``
    it uses)."""

    def g1_region_bytes(self) -> int | None:
        """The driver JVM's G1 heap region size in bytes (None: it runs another collector,
        or the JVM does not say). Objects of half a region or more are "humongous" to
        G1: allocated and collected one by one, which an injected aggregate's large rid
        arrays make costly."""
        try:
            bean = self.jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
                self.jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
            )
            if bean.getVMOption("UseG1GC").getValue() != "true":
                return None
            return int(bean.getVMOption("G1HeapRegionSize").getValue())
        except Exception:  # another JVM vendor: no such bean or option
            return None
