"""Threads kept for the work sparkprov does beside a query, one pool per role.

PySpark pins a JVM thread, with a Py4J connection of its own, to each Python thread.
A new Python thread therefore opens a connection, and its JVM thread starts with an
empty cache of resolved methods (``handles.roomy_method_cache``): every method it
calls is looked up again by reflection. A capture run in a new thread took 0.73 s
against 0.68 s in a thread kept from earlier captures (a join under an aggregate with
witnesses; median of 16 interleaved pairs). A workflow invokes its modules, and a
capture writes its side relations, in threads: these are kept here, idle between
uses, rather than made for each use.

A pool's threads are made as work arrives, up to its size; work waiting for a thread
waits in order. Work given to a pool must not wait for other work of the same pool
(it could wait for itself). Spark keeps local properties (a job group, job tags, a
scheduler pool) per JVM thread: work that runs the user's code in a kept thread does
so ``with local_properties_kept(spark)``, so what one use sets is not the next one's.

>>> kept_pool("doctest", 2).submit(sum, [1, 2]).result()
3
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

from pyspark.sql import SparkSession

_pools: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def kept_pool(role: str, workers: int) -> ThreadPoolExecutor:
    """The pool of at most ``workers`` threads named ``sparkprov-<role>``, made on first
    use and kept for the process's life (its threads end with it). One pool per role:
    asked again with another size, the first size stays."""
    with _lock:
        pool = _pools.get(role)
        if pool is None:
            pool = _pools[role] = ThreadPoolExecutor(workers, thread_name_prefix=f"sparkprov-{role}")
        return pool


def results(futures: list[Future]) -> list:
    """The results of ``futures``, once every one has ended: the first one's error is
    raised only then, so nothing they started is left running behind it.

    >>> results([kept_pool("doctest", 2).submit(sum, [1, 2])])
    [3]
    """
    wait(futures)
    return [f.result() for f in futures]


@contextmanager
def local_properties_kept(spark: SparkSession) -> Iterator[None]:
    """Within, this thread's Spark local properties may change; after, they are as
    they were before."""
    sc = spark.sparkContext._jsc.sc()
    saved = sc.getLocalProperties().clone()
    try:
        yield
    finally:
        sc.setLocalProperties(saved)
