"""Bridge.settings: SQL settings changed for a block and restored, however blocks
overlap (captures in threads, a deferred capture resolved in the background)."""

from __future__ import annotations

import threading

from sparkprov.plan.catalyst import Bridge

KEY = "spark.sql.adaptive.coalescePartitions.initialPartitionNum"


def test_overlapping_blocks_restore_the_value_from_before_the_first(spark):
    b = Bridge(spark)
    spark.conf.set(KEY, "7")
    try:
        first, second = b.settings({KEY: "64"}), b.settings({KEY: "65"})
        first.__enter__()
        second.__enter__()
        assert spark.conf.get(KEY) == "65"
        first.__exit__(None, None, None)  # the first ends first: the second's value holds
        assert spark.conf.get(KEY) == "65"
        second.__exit__(None, None, None)
        assert spark.conf.get(KEY) == "7"
        with b.settings({KEY: "64"}):  # nested: the outer block's value back when the inner ends
            with b.settings({KEY: "3"}):
                assert spark.conf.get(KEY) == "3"
            assert spark.conf.get(KEY) == "64"
        assert spark.conf.get(KEY) == "7"
    finally:
        spark.conf.unset(KEY)
    with b.settings({KEY: "64"}):  # a setting the session did not have is unset again
        pass
    assert spark.conf.get(KEY, None) is None


def test_blocks_in_threads_leave_the_session_as_it_was(spark):
    # four threads' blocks begin one after the other and end in the same order, the
    # first ending while the others are open (what saving and restoring per block got wrong)
    b = Bridge(spark)
    entered, ended = [threading.Event() for _ in range(4)], [threading.Event() for _ in range(4)]
    inside = []

    def block(i: int) -> None:
        if i:
            entered[i - 1].wait()
        with b.settings({KEY: "64"}):
            entered[i].set()
            entered[-1].wait()  # every block open at once
            inside.append(spark.conf.get(KEY))
            if i:
                ended[i - 1].wait()
        ended[i].set()

    threads = [threading.Thread(target=block, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert inside == ["64"] * 4
    assert spark.conf.get(KEY, None) is None
