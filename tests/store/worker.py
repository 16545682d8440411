"""A separate process that captures into a store (used by the store tests).

usage: python -m tests.store.worker STORE NAME VALUE [kill-before-commit|kill-at-link|wait-before-commit]

wait-before-commit: once the capture is made, create ``STORE.ready`` and wait for
``STORE.go`` before committing it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import sparkprov as sp
from sparkprov.local import local_session
from sparkprov.store import catalog


def main() -> None:
    store, name, value = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else ""
    spark = local_session("sparkprov-store-worker", shuffle_partitions=1, driver_memory="1g")
    session = sp.LineageSession(spark, store=store)
    if mode == "kill-before-commit":
        catalog.Store.commit = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "kill-at-link":
        catalog.os.link = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "wait-before-commit":
        commit = catalog.Store.commit

        def waiting(self, *args, **kwargs):
            Path(f"{store}.ready").touch()
            while not Path(f"{store}.go").exists():
                time.sleep(0.05)
            return commit(self, *args, **kwargs)

        catalog.Store.commit = waiting
    capture_numbers(session, name, value)
    print("committed", flush=True)


def capture_numbers(session: sp.LineageSession, name: str, value: int) -> sp.Capture:
    """The capture every writer of the store tests commits: nine rows of ``value`` in
    three groups, summed."""
    df = session.spark.createDataFrame([(i % 3, value) for i in range(9)], "g int, v int")
    session.source(df, "numbers")
    return session.capture(df.groupBy("g").sum("v"), name=name)


if __name__ == "__main__":
    main()
