"""Long work started from the page (a replay), run in a thread of the server's process:
its progress read from Spark's stages, and a way to cancel it.

Each job runs its Spark work in a job group of its own (PySpark pins a Python thread to
a JVM thread, so the group holds for that thread alone): progress is the tasks of the
group's stages done out of all of them, and cancelling cancels the group. Spark cancels
only the group's jobs running at that moment, and the work may go on to start others
(a capture trying another strategy): so the group is cancelled again and again until
the work's thread ends, and a cancelled capture is never committed.

>>> jobs = Jobs(None)
>>> job = jobs.start("sum", lambda: 1 + 1)
>>> jobs.wait(job.id).state, jobs.get(job.id).result
('done', 2)
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument, SparkprovError

KEPT = 32  # finished jobs kept for their results


@dataclass
class Job:
    """One piece of long work: ``state`` is running, done, failed or cancelled."""

    id: str
    what: str
    state: str = "running"
    result: Any = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    seconds: float | None = None
    ended: threading.Event = field(default_factory=threading.Event)  # the work's thread returned


class Jobs:
    """The jobs of one server; ``spark`` (a SparkSession, or None) reports progress."""

    def __init__(self, spark) -> None:
        self.spark = spark
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, what: str, work: Callable[[], Any]) -> Job:
        """Run ``work()`` in a thread, as a job named ``what``."""
        job = Job(uuid.uuid4().hex[:12], what)
        with self._lock:
            finished = [j for j in self._jobs.values() if j.state != "running"]
            for old in finished[: max(0, len(finished) - KEPT)]:
                del self._jobs[old.id]
            self._jobs[job.id] = job

        def run() -> None:
            if self.spark is not None:
                self.spark.sparkContext.setJobGroup(job.id, what, interruptOnCancel=True)
            try:
                result = work()
                if job.state == "running":
                    job.result, job.state = result, "done"
            except Exception as exc:  # the page shows why; a cancelled job's error is its cancelling
                if job.state == "running":
                    job.error = str(exc) if isinstance(exc, SparkprovError) else f"{type(exc).__name__}: {exc}"
                    job.state = "failed"
            finally:
                job.seconds = time.monotonic() - job.started
                job.ended.set()

        threading.Thread(target=run, name=f"sparkprov-job-{job.id}", daemon=True).start()
        return job

    def list(self) -> list[Job]:
        """The running jobs and the finished ones kept."""
        with self._lock:
            return list(self._jobs.values())

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise InvalidArgument(f"no job {job_id!r} (finished jobs are kept for a while only)")
        return job

    def wait(self, job_id: str, timeout: float = 60) -> Job:
        """The job once it is no longer running (or ``timeout`` seconds have passed)."""
        job, deadline = self.get(job_id), time.monotonic() + timeout
        while job.state == "running" and time.monotonic() < deadline:
            time.sleep(0.01)
        return job

    def cancel(self, job_id: str) -> Job:
        """Stop a running job: its Spark work is cancelled, its result never shown."""
        job = self.get(job_id)
        if job.state == "running":
            job.state = "cancelled"
            if self.spark is not None:
                threading.Thread(target=self._cancelling, args=(job,), daemon=True).start()
        return job

    def _cancelling(self, job: Job) -> None:
        while not job.ended.is_set():
            self.spark.sparkContext.cancelJobGroup(job.id)
            job.ended.wait(0.05)

    def progress(self, job_id: str) -> dict:
        """Tasks done and in all of the job's Spark stages so far, and how many stages."""
        job = self.get(job_id)
        done = total = stages = 0
        if self.spark is not None:
            tracker = self.spark.sparkContext.statusTracker()
            for spark_job in tracker.getJobIdsForGroup(job_id):
                info = tracker.getJobInfo(spark_job)
                for stage in info.stageIds if info else []:
                    s = tracker.getStageInfo(stage)
                    if s is not None:
                        stages += 1
                        done, total = done + s.numCompletedTasks, total + s.numTasks
        return {
            "id": job.id,
            "what": job.what,
            "state": job.state,
            "tasks_done": done,
            "tasks": total,
            "stages": stages,
            "seconds": job.seconds if job.seconds is not None else time.monotonic() - job.started,
            "error": job.error,
            "ended": job.ended.is_set(),  # a cancelled job's work may take a moment to stop
        }
