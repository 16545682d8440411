"""Kept threads: a role's pool hands later work to the threads earlier work had."""

from __future__ import annotations

import threading

from sparkprov.plan.threads import kept_pool, local_properties_kept


def test_a_role_keeps_its_threads_between_uses():
    pool = kept_pool("test-keeps", 1)
    first = pool.submit(threading.get_ident).result()
    assert kept_pool("test-keeps", 3) is pool  # the first size stays
    assert pool.submit(threading.get_ident).result() == first
    assert threading.current_thread().ident != first


def test_roles_do_not_share_threads():
    names = {
        kept_pool(role, 1).submit(lambda: threading.current_thread().name).result() for role in ("test-a", "test-b")
    }
    assert {n.split("_")[0] for n in names} == {"sparkprov-test-a", "sparkprov-test-b"}


def test_a_kept_thread_reaches_the_jvm_through_one_connection(spark):
    # PySpark pins a JVM thread to each Python thread: the same JVM thread each time
    pool = kept_pool("test-jvm", 1)
    ask = lambda: spark._jvm.java.lang.Thread.currentThread().getId()  # noqa: E731
    assert pool.submit(ask).result() == pool.submit(ask).result()


def test_local_properties_set_within_are_gone_after(spark):
    sc = spark.sparkContext

    def use():
        with local_properties_kept(spark):
            sc.setJobGroup("a-module's-group", "set by a module")
            sc.setLocalProperty("spark.scheduler.pool", "fast")
        return sc.getLocalProperty("spark.jobGroup.id"), sc.getLocalProperty("spark.scheduler.pool")

    pool = kept_pool("test-properties", 1)
    sc_before = pool.submit(sc.getLocalProperty, "spark.jobGroup.id").result()
    assert pool.submit(use).result() == (sc_before, None)
    assert pool.submit(sc.getLocalProperty, "spark.jobGroup.id").result() == sc_before
