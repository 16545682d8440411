"""What an aggregate pays to keep its groups' rids, part by part, on TPC-H lineitem.

An injected aggregate adds a function collecting the rids (``collect_list(rid)`` until
the fourteenth increment, the rid collector since) to the query's own aggregate. That
one function changes two things: the aggregate holds an array per group (collecting), and
Spark runs the whole aggregate, the query's own functions included, as an
``ObjectHashAggregate``, which whole-stage code generation does not cover and which
turns sort-based past 128 groups per task. This benchmark times them apart, each
variant of the same aggregate over the same rows, interleaved round by round:

- ``plain``: the query's aggregate functions alone;
- ``no_rids``: plus ``collect_list`` of a rid that is never kept (a ``CASE`` no row
  meets): the object aggregate without anything collected;
- ``rid_array``: plus ``collect_list(rid)``, what inject did until the fourteenth
  increment;
- ``rid_longs``: plus the rid collector (``plan/rid_collector.py``), what inject does;
- ``rid_range``: plus ``min(rid)``, ``max(rid)`` and ``count(rid)``, fixed-width
  functions a hash aggregate with generated code keeps: a candidate representation,
  exact for a group when its rids are consecutive (``dense``, reported per workload).

Workloads: ``q1`` (Q1's eight functions over four groups), ``q6`` (Q6's global sum over
its filter), ``q18`` (Q18's inner aggregate, ``sum(l_quantity)`` per order: 1.5M
groups at SF 1).

>>> sorted(WORKLOADS)
['q1', 'q18', 'q6']
>>> VARIANTS
('plain', 'no_rids', 'rid_array', 'rid_longs', 'rid_range')
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgument
from . import datagen, tpch
from .session import run_workloads

if TYPE_CHECKING:
    import argparse

    from pyspark.sql import Column, DataFrame, SparkSession

VARIANTS = ("plain", "no_rids", "rid_array", "rid_longs", "rid_range")
_RID = "__rid"

# (filter, grouping columns, aggregate functions): the queries' own, in Spark SQL
WORKLOADS: dict[str, tuple[str, list[str], list[str]]] = {
    "q1": (
        "l_shipdate <= date '1998-09-02'",
        ["l_returnflag", "l_linestatus"],
        [
            "sum(l_quantity)",
            "sum(l_extendedprice)",
            "sum(l_extendedprice * (1 - l_discount))",
            "sum(l_extendedprice * (1 - l_discount) * (1 + l_tax))",
            "avg(l_quantity)",
            "avg(l_extendedprice)",
            "avg(l_discount)",
            "count(*)",
        ],
    ),
    "q6": (
        "l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' "
        "and l_discount between 0.05 and 0.07 and l_quantity < 24",
        [],
        ["sum(l_extendedprice * l_discount)"],
    ),
    "q18": ("true", ["l_orderkey"], ["sum(l_quantity)"]),
}


def _extra(rows: DataFrame, variant: str) -> list[Column]:
    from pyspark.sql import functions as F

    from ..plan.rid_collector import rids_column

    rid = F.col(_RID)
    if variant == "no_rids":  # quantities are 1 to 50: nothing is collected
        return [F.collect_list(F.when(F.col("l_quantity") < 0, rid))]
    if variant == "rid_array":
        return [F.collect_list(rid)]
    if variant == "rid_longs":
        return [rids_column(rows, _RID)]
    if variant == "rid_range":
        return [F.min(rid).alias("__min"), F.max(rid).alias("__max"), F.count(rid).alias("__count")]
    return []


def aggregate(rows: DataFrame, workload: str, variant: str) -> DataFrame:
    """``workload``'s aggregate over ``rows`` (lineitem with its rids as ``__rid``),
    with ``variant``'s rid functions added."""
    from pyspark.sql import functions as F

    where, keys, functions = WORKLOADS[workload]
    picked = rows.where(where)
    aggs = [F.expr(f) for f in functions] + _extra(picked, variant)
    return picked.groupBy(*keys).agg(*aggs) if keys else picked.agg(*aggs)


def dense_share(rows: DataFrame, workload: str) -> float:
    """The share of ``workload``'s groups whose rids are consecutive (a range is exact)."""
    from pyspark.sql import functions as F

    ranged = aggregate(rows, workload, "rid_range")
    dense = (F.col("__max") - F.col("__min") + 1 == F.col("__count")).cast("long")
    groups, dense_groups = ranged.agg(F.count("*"), F.sum(dense)).first()
    return round((dense_groups or 0) / groups, 4) if groups else 1.0


def lineitem_with_rids(spark: SparkSession, path: Path) -> DataFrame:
    """TPC-H lineitem with each row's rid (``__rid``), made by capture's own formula
    (``sources.rid_column``; several files numbered in path order)."""
    from ..sources.identity import rid_column

    df = datagen.read_table(spark, path, "lineitem", "TPC-H")
    files = [(f, 0, 0) for f in sorted(df.inputFiles())]
    return df.withColumn(_RID, rid_column(files))


def run(spark: SparkSession, sf: float, repeat: int, data_dir: str, names: list[str] | None = None) -> dict:
    """Time every variant of each workload ``repeat`` times, interleaved (the order
    rotated between rounds, after one warm-up round); returns the report."""
    unknown = sorted(set(names or ()) - set(WORKLOADS))
    if unknown:
        raise InvalidArgument(f"unknown aggregate workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    rows = lineitem_with_rids(spark, tpch.generate(sf, data_dir))
    results = []
    for name in [w for w in WORKLOADS if not names or w in names]:
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for i in range(repeat + 1):
            k = i % len(VARIANTS)
            for variant in VARIANTS[k:] + VARIANTS[:k]:
                started = time.perf_counter()
                aggregate(rows, name, variant).write.mode("overwrite").format("noop").save()
                if i:  # round 0 warms every variant up
                    times[variant].append(time.perf_counter() - started)
            if i:
                print(f"{name} round {i}/{repeat}: " + ", ".join(f"{v} {times[v][-1]:.2f}s" for v in VARIANTS))
        plain = statistics.median(times["plain"])
        results.append(
            {
                "workload": name,
                "seconds": {v: [round(t, 3) for t in ts] for v, ts in times.items()},
                "median_s": {v: round(statistics.median(ts), 3) for v, ts in times.items()},
                "ratio": {v: round(statistics.median(ts) / plain, 3) for v, ts in times.items()},
                "dense_share": dense_share(rows, name),
            }
        )
    return {"suite": "aggregates", "sf": sf, "repeat": repeat, "workloads": results}


def main(args: argparse.Namespace) -> int:
    report = run_workloads(args, "sparkprov-bench-aggregates", run)
    print(f"\nTPC-H SF {args.sf} lineitem, {args.repeat} interleaved rounds; median time / plain")
    for r in report["workloads"]:
        ratios = "   ".join(f"{v} {r['ratio'][v]:.2f}" for v in VARIANTS[1:])
        print(f"  {r['workload']:<5} plain {r['median_s']['plain']:.2f}s   {ratios}   dense groups {r['dense_share']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0
