"""The Spark session a TPC-H benchmark of named workloads runs in (``bench aggregates``,
``bench drilldown``): started as the benchmarks start it, the workloads the command
line names run, stopped.

>>> workload_names("q1, q5,")
['q1', 'q5']
>>> workload_names("") is None
True
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..errors import InvalidArgument


def workload_names(text: str) -> list[str] | None:
    """The comma-separated names of ``--workloads``; None (all of them) when empty."""
    return [w.strip() for w in text.split(",") if w.strip()] if text else None


def run_workloads(args: argparse.Namespace, app: str, run: Callable[..., dict]) -> dict:
    """``run(spark, args.sf, args.repeat, args.data, names)`` in a local session made for
    it (8 shuffle partitions, a 6 GiB driver), stopped afterwards; returns its report."""
    if args.repeat < 1:
        raise InvalidArgument("--repeat must be at least 1")
    from ..local import local_session

    spark = local_session(app, shuffle_partitions=8, driver_memory="6g")
    try:
        return run(spark, args.sf, args.repeat, args.data, workload_names(args.workloads))
    finally:
        spark.stop()
