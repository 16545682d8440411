"""Py4J's replies sent at once: TCP_NODELAY on the JVM's end of every connection,
those of threads that joined since included."""

from __future__ import annotations

import threading

from py4j.protocol import Py4JJavaError

from sparkprov.plan.replies import quick_replies


def _no_delay(spark) -> bool:
    # TCP_NODELAY on the JVM's end of the calling thread's connection, read as the
    # helper finds it (the Runnable of the thread serving this call)
    jvm = spark._jvm
    thread_class = jvm.java.lang.Class.forName("java.lang.Thread")
    thread = jvm.java.lang.Thread.currentThread()
    try:
        target = thread_class.getDeclaredField("target")
        target.setAccessible(True)
        connection = target.get(thread)
    except Py4JJavaError:  # Java 19 and later
        holder = thread_class.getDeclaredField("holder")
        holder.setAccessible(True)
        held = holder.get(thread)
        task = held.getClass().getDeclaredField("task")
        task.setAccessible(True)
        connection = task.get(held)
    return bool(connection.getSocket().getTcpNoDelay())


def test_every_connection_gets_no_delay_even_one_opened_after(spark):
    quick_replies(spark)
    assert _no_delay(spark)
    seen: dict[str, object] = {}
    asked, answered = threading.Event(), threading.Event()

    def other_thread() -> None:  # a connection of its own, open while the main thread asks
        try:
            seen["before"] = _no_delay(spark)
            asked.set()
            answered.wait(60)
            seen["after"] = _no_delay(spark)
        except Exception as exc:  # noqa: BLE001 (reported by the assertion below)
            seen["error"] = exc
            asked.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    assert asked.wait(60)
    count = quick_replies(spark)  # from the main thread: the other's connection too
    answered.set()
    thread.join(60)
    assert "error" not in seen, seen.get("error")
    assert seen == {"before": False, "after": True}
    assert count >= 2
