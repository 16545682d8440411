"""A separate process that captures a CSV source's totals (tests/capture/test_snapshots.py):
what a pipeline run again the next day does.

usage: python -m tests.capture.snapshot_worker STORE CSV NAME
"""

from __future__ import annotations

import os
import sys

import sparkprov as sp
from sparkprov.local import local_session
from sparkprov.store.layout import local_path


def main() -> None:
    store, path, name = sys.argv[1:4]
    spark = local_session("sparkprov-snapshot-worker", driver_memory="1g", quiet=True)
    people = spark.read.option("header", True).schema("id int, name string, country string, amount int").csv(path)
    cap = sp.LineageSession(spark, store=store).capture(people.groupBy("country").sum("amount"), name)
    (info,) = cap._infos.values()
    print(" ".join(str(os.stat(local_path(uri)).st_ino) for uri, _, _ in info.files), flush=True)


if __name__ == "__main__":
    main()
