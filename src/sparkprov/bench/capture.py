"""``sparkprov bench capture``: time TPC-H queries (TPC-DS files with ``--suite tpcds``,
the data-engineering pipelines of ``bench/pipelines.py`` with ``--suite pipelines``,
Smoke's microbenchmarks with ``--suite micro``) with capture on and off, under a capture
strategy (``--strategy``).

Pairs are interleaved (the order alternates between pairs) in one Spark session and
the median of the per-pair ratios is reported. The plain run writes its result to
Parquet, as a capture writes its output, so both sides do the same user-visible work;
the capture side counts everything until output and lineage are committed, and the
capture's own timings give the ratio until the output alone was written. Lineage
bytes are the pair tables plus the output's slot columns; a capture that keeps its
lineage in the output rows builds its pair table on first use, timed separately, as
does a lazy capture (``--strategy lazy``), whose lineage bytes are what it stores once
built. With
``--witnesses`` the capture keeps why/how structure, and a capture without it runs in
every round too, so the structure's own cost is a same-run ratio. With ``--write`` the
capture also writes its output for the user (``path=``, a new folder each run), as
the plain run writes it; without, only into the store.

A query that capture refuses, that fails, or whose run (plain or captured) outlasts
``timeout`` seconds (its Spark jobs are then cancelled) is reported with its status
(``unsupported``, ``fail``, ``timeout``) and reason, and the suite goes on; the
summary's ratios are over the queries measured (``pass``).

>>> summarize([{"median_ratio": 1.5, "lineage_bytes": 10, "input_bytes": 100},
...            {"median_ratio": 2.5, "lineage_bytes": 30, "input_bytes": 100}])["max_ratio"]
2.5
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..capture import later
from ..capture.run import storage_names
from ..errors import InvalidArgument, SparkprovError, UnsupportedOperation
from ..plan.catalyst import Bridge, task_seconds
from ..store.lineage_bytes import lineage_bytes, slot_bytes, stored_lineage_bytes  # noqa: F401 - also imported from here
from . import coverage, tpch
from .session import workload_names

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def summarize(results: list[dict]) -> dict:
    """The suite's figures over its measured queries, and how many ended otherwise."""
    ended = {s: sum(1 for r in results if r.get("status", "pass") == s) for s in STATUSES}
    results = [r for r in results if r.get("status", "pass") == "pass"]
    if not results:
        return {"median_ratio": None, "max_ratio": None, "storage_ratio": None, **ended}
    ratios = [r["median_ratio"] for r in results]
    lineage = sum(r["lineage_bytes"] for r in results)
    inputs = sum(r["input_bytes"] for r in results)
    return {
        "median_ratio": round(statistics.median(ratios), 3),
        "max_ratio": round(max(ratios), 3),
        "output_median_ratio": round(statistics.median(r.get("output_median_ratio", 0) for r in results), 3),
        **({"check_median_ratio": m} if (m := _median_of(results, "check_median_ratio")) is not None else {}),
        "task_median_ratio": _median_of(results, "task_median_ratio"),
        "cpu_median_ratio": _median_of(results, "cpu_median_ratio"),
        "storage_ratio": float(f"{lineage / inputs:.3g}") if inputs else None,
        **ended,
    }


STATUSES = ("pass", "unsupported", "fail", "timeout")


class _TimedOut(SparkprovError):
    """A run outlasted the benchmark's time limit."""


@contextmanager
def deadline(spark: SparkSession, seconds: float | None, what: str) -> Iterator[None]:
    """Cancel every Spark job if the block runs longer than ``seconds`` and raise
    ``_TimedOut`` naming ``what`` (nothing else runs in a benchmark's session)."""
    if not seconds:
        yield
        return
    lock, fired, done = threading.Lock(), threading.Event(), threading.Event()

    def fire() -> None:
        # again until the block ends: a job submitted after a cancel (the next step of
        # a capture, a write's job after its planning) would otherwise run to its end
        while True:
            with lock:  # never cancel the jobs of whatever runs after the block
                if done.is_set():
                    return
                fired.set()
                spark.sparkContext.cancelAllJobs()
            done.wait(0.25)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except Exception as exc:
        if fired.is_set():
            raise _TimedOut(f"{what} ran longer than {seconds:g} s; its jobs were cancelled") from exc
        raise
    finally:
        with lock:
            done.set()
        timer.cancel()


def _median_of(results: list[dict], key: str) -> float | None:
    values = [r[key] for r in results if key in r]
    return round(statistics.median(values), 3) if values else None


def operator_strategies(entry: dict) -> list[list[str]]:
    """``[operator, strategy]`` per operator of the captured plan (its explain() lines);
    the strategy is named by the text before its first colon."""
    return [[line[1][:100], line[3].split(":")[0]] for line in entry.explain]


def run(
    spark: SparkSession,
    sf: float,
    queries: list[int],
    repeat: int,
    data_dir: str,
    witnesses: bool = False,
    strategy: str = "auto",
    workload_sources: list[str] | None = None,
    workload_where: dict[str, str] | None = None,
    timeout: float | None = None,
    write: bool = False,
) -> dict:
    """Benchmark TPC-H ``queries`` at scale factor ``sf`` on ``spark``; returns the report.

    ``timeout``: seconds each run may take. ``witnesses`` captures with
    ``witnesses=True`` (the structure why/how read), whose stored side relations
    count as lineage bytes. ``strategy`` is passed to capture, and
    ``workload_sources`` as ``workload={"sources": ...}``: a query keeps lineage for
    those of them it reads (and for all its sources if it reads none of them), with
    ``workload_where``'s predicates for those it names (``{"where": ...}``). ``write``:
    each capture also writes its output to a new folder (``path=``).
    """
    path = tpch.generate(sf, data_dir)
    tpch.register(spark, path)
    keep = (workload_sources, workload_where or {}) if workload_sources else None
    results = compare(spark, [(n, tpch.query(n)) for n in queries], repeat, witnesses, strategy, keep, timeout, write)
    return {
        "suite": "tpch",
        "write": write,
        "sf": sf,
        "repeat": repeat,
        "witnesses": witnesses,
        "strategy": strategy,
        "workload_sources": workload_sources,
        "workload_where": workload_where,
        "queries": results,
        **summarize(results),
    }


def run_tpcds(
    spark: SparkSession,
    sf: float,
    queries: list[str] | None,
    repeat: int,
    data_dir: str,
    strategy: str = "auto",
    witnesses: bool = False,
    timeout: float | None = None,
    write: bool = False,
) -> dict:
    """Benchmark TPC-DS files ``queries`` (names such as ``q3`` or ``q14a``; None: all
    103) at scale factor ``sf`` on ``spark``, with the suite's settings
    (``bench coverage``'s); returns the report, as :func:`run`'s."""
    s = coverage.suite("tpcds")
    wanted = queries or s.queries()
    unknown = [q for q in wanted if q not in s.queries()]
    if unknown:
        raise InvalidArgument(
            f"TPC-DS has no files {', '.join(unknown)}; names are q1..q99 with q14a/b, q23a/b, q24a/b, q39a/b"
        )
    s.register(spark, s.generate(sf, data_dir))
    with Bridge(spark).settings(dict(s.conf)):
        results = compare(
            spark, [(q, s.text(q)) for q in wanted], repeat, witnesses, strategy, timeout=timeout, write=write
        )
    return {
        "suite": "tpcds",
        "write": write,
        "sf": sf,
        "repeat": repeat,
        "witnesses": witnesses,
        "strategy": strategy,
        "timeout_s": timeout,
        "queries": results,
        **summarize(results),
    }


def run_pipelines(
    spark: SparkSession,
    rows: int,
    repeat: int,
    data_dir: str,
    names: list[str] | None = None,
    strategy: str = "auto",
    timeout: float | None = None,
    write: bool = False,
) -> dict:
    """The pipelines of ``bench/pipelines.py`` over ``rows`` orders (None: all of them);
    returns the report, as :func:`run`'s."""
    from . import pipelines

    unknown = [n for n in names or () if n not in pipelines.PIPELINES]
    if unknown:
        raise InvalidArgument(f"unknown pipelines {unknown}; choose from {', '.join(pipelines.PIPELINES)}")
    pipelines.register(spark, pipelines.generate(rows, data_dir))
    chosen = [(n, functools.partial(f, spark)) for n, f in pipelines.PIPELINES.items() if not names or n in names]
    results = compare(spark, chosen, repeat, False, strategy, timeout=timeout, write=write)
    return {
        "suite": "pipelines",
        "write": write,
        "rows": rows,
        "repeat": repeat,
        "strategy": strategy,
        "timeout_s": timeout,
        "queries": results,
        **summarize(results),
    }


def run_micro(spark: SparkSession, rows: int, repeat: int, data_dir: str, names=None, strategy: str = "auto") -> dict:
    """Smoke's microbenchmarks (``bench/micro.py``) over ``rows`` rows; returns the report."""
    from . import micro

    path = micro.generate(rows, data_dir)
    micro.register(spark, path)
    texts = micro.workloads(rows)
    unknown = sorted(set(names or ()) - set(texts))
    if unknown:
        raise InvalidArgument(f"unknown micro workloads {unknown}; choose from {', '.join(texts)}")
    chosen = [(n, t) for n, t in texts.items() if not names or n in names]
    results = compare(spark, chosen, repeat, False, strategy)
    return {
        "suite": "micro",
        "rows": rows,
        "repeat": repeat,
        "strategy": strategy,
        "queries": results,
        **summarize(results),
    }


def compare(
    spark,
    workloads: list[tuple],
    repeat: int,
    witnesses: bool,
    strategy: str,
    keep: tuple | None = None,
    timeout: float | None = None,
    write: bool = False,
) -> list[dict]:
    """Each ``(label, SQL text)`` (or ``(label, a function of no arguments that gives the
    DataFrame)``) run plain and captured, interleaved; one result per workload.
    ``keep``: ``(sources, {source: predicate})``, the sources to keep lineage for (a
    workload), among those each query reads, and the predicates of some of them.
    ``timeout``: seconds each run may take (see the module's docstring). ``write``: each
    capture also writes its output to a new folder, as the plain run does."""
    import sparkprov as sp

    work = Path(tempfile.mkdtemp(prefix="sparkprov-bench-"))
    results = []
    try:
        session = sp.LineageSession(spark, store=work / "store")
        for n, text in workloads:
            started = time.perf_counter()
            try:
                result = _pairs(spark, session, work, n, text, repeat, witnesses, strategy, keep, timeout, write)
            except Exception as exc:  # this query's end, not the suite's
                result = {"query": n, **_ended(exc)}
                print(f"{_label(n)}: {result['status']}: {result['reason']}", flush=True)
            result["seconds"] = round(time.perf_counter() - started, 1)
            results.append(result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def _ended(exc: Exception) -> dict:
    """How a query that was not measured ended, and why."""
    if isinstance(exc, _TimedOut):
        return {"status": "timeout", "reason": str(exc)}
    if isinstance(exc, UnsupportedOperation):
        return {"status": "unsupported", "reason": str(exc).splitlines()[0]}
    return {"status": "fail", "reason": coverage.reason(exc)}


def _pairs(spark, session, work: Path, n, text, repeat, witnesses, strategy, keep, timeout, write=False) -> dict:
    """One workload's interleaved runs, plain and captured; its result."""
    query = text if callable(text) else lambda: spark.sql(text)
    plain_t, cap_t, default_t, output_t, check_t = [], [], [], [], []
    plain_tasks, cap_tasks = [], []
    cap = None
    name = n if isinstance(n, str) else f"q{n}"

    def plain(i: int) -> float:
        t = time.perf_counter()
        with deadline(spark, timeout, f"{_label(n)} without capture"):
            df = query()
            # Parquet refuses repeated column names (TPC-DS q14b's two "channel"s): the
            # names a capture stores its output under, as a user would rename them
            stored = storage_names(df.columns)
            (df if stored == df.columns else df.toDF(*stored)).write.parquet(str(work / f"plain-{name}-{i}"))
        return time.perf_counter() - t

    workload = _workload(text, keep) if isinstance(text, str) else None

    def captured(i: int, kept: bool = witnesses):
        t = time.perf_counter()
        with deadline(spark, timeout, f"{_label(n)}'s capture"):
            path = str(work / f"capture-{name}-{i}-{kept}") if write else None
            c = session.capture(query(), name, witnesses=kept, strategy=strategy, workload=workload, path=path)
            returned = time.perf_counter() - t
            if c._entry.lineage.later == "defer":
                c.build_lineage()  # waits for the background resolution: part of capture's work
        # the time until both are stored, and until the output alone was
        return time.perf_counter() - t, returned - c._entry.timings["lineage_s"], c

    # warm-up, each kind once: file listings, generated code (a capture's plan
    # compiles classes of its own: Q2's first capture compiles 32), the JIT
    warm_up = {"plain_s": round(plain(-1), 3), "capture_s": round(captured(-1)[0], 3)}
    # each round runs every kind once, in an order rotated between rounds; with
    # witnesses, a capture without them is a third kind, to compare in the same run
    kinds = ["plain", "capture", "default"] if witnesses else ["plain", "capture"]
    for i in range(repeat):
        k = i % len(kinds)
        for kind in kinds[k:] + kinds[:k]:
            before, _ = task_seconds(spark)
            if kind == "plain":
                plain_t.append(plain(i))
                plain_tasks.append(task_seconds(spark, before)[1])
            elif kind == "capture":
                t, until_output, cap = captured(i)
                cap_t.append(t)
                output_t.append(until_output)
                check_t.append(cap._entry.timings.get("check_s"))
                cap_tasks.append(task_seconds(spark, before)[1])
            else:
                default_t.append(captured(i, kept=False)[0])
        extra = f", without witnesses {default_t[-1]:.2f}s" if default_t else ""
        print(
            f"{_label(n)} round {i + 1}/{repeat}: plain {plain_t[-1]:.2f}s, capture {cap_t[-1]:.2f}s{extra}",
            flush=True,
        )
    result = _result(spark, n, cap, plain_t, cap_t, output_t, default_t, witnesses)
    if None not in check_t:  # lazy: its check beside the query, against the plain run
        result["check_s"] = check_t
        result["check_median_ratio"] = round(statistics.median(c / p for c, p in zip(check_t, plain_t)), 3)
    result.update(_task_ratios(plain_tasks, cap_tasks), warm_up=warm_up)
    return result


def _task_ratios(plain: list[tuple], captured: list[tuple]) -> dict:
    """The executors' side of each pair: task run time and CPU time, captured over plain,
    and the GC time within them. Less exposed than wall time to other work on a shared
    machine (a waiting task is not running), and blind to the driver: planning, the
    commit, and lazy's nothing-to-do."""
    return {
        "plain_task_s": [[round(x, 3) for x in t] for t in plain],
        "capture_task_s": [[round(x, 3) for x in t] for t in captured],
        "task_median_ratio": round(statistics.median(c[0] / p[0] for c, p in zip(captured, plain)), 3),
        "cpu_median_ratio": round(statistics.median(c[1] / p[1] for c, p in zip(captured, plain)), 3),
    }


def _workload(text: str, keep: tuple | None) -> dict | None:
    """``{"sources": ..., "where": ...}``: those of ``keep``'s sources the query's text
    names (as TPC-H names its tables, which are its views) and their predicates, or None."""
    sources, where = keep or ((), {})
    read = [s for s in sources if re.search(rf"\b{re.escape(s)}\b", text, re.IGNORECASE)]
    return {"sources": read, "where": {s: p for s, p in where.items() if s in read}} if read else None


def _label(query) -> str:
    return f"Q{query}" if isinstance(query, int) else query


def _result(spark, n, cap, plain_t, cap_t, output_t, default_t, witnesses: bool) -> dict:
    entry = cap._entry
    # a lazy capture stores lineage when first used: built first, so its bytes count
    deferred = entry.lineage.later == "lazy"
    pair_table_s = cap.build_lineage() if deferred else 0.0
    pair_bytes, witness_bytes, slots = lineage_bytes(entry)
    kept = pair_bytes + witness_bytes + slots
    shared = later.shared_path(entry.lineage)
    # lineage kept in the output rows: the pair table is built by the first answer
    # that needs one; what that costs, once
    if not deferred:
        pair_table_s = cap.build_lineage()
    input_bytes = sum(sum(f[1] for f in s.original) for s in entry.sources.values())
    result = {
        "query": n,
        "status": "pass",
        "plain_s": [round(x, 3) for x in plain_t],
        "capture_s": [round(x, 3) for x in cap_t],
        "median_ratio": round(statistics.median(c / p for c, p in zip(cap_t, plain_t)), 3),
        "output_median_ratio": round(statistics.median(o / p for o, p in zip(output_t, plain_t)), 3),
        "lineage_bytes": kept,
        "slot_bytes": slots,
        "witness_bytes": witness_bytes,
        "output_rows": spark.read.parquet(entry.output.path).count(),
        "pairs": spark.read.parquet(entry.lineage.path).count(),
        "shared_pairs": spark.read.parquet(shared).count() if shared else 0,
        "input_bytes": input_bytes,
        "storage_ratio": float(f"{kept / input_bytes:.3g}") if input_bytes else None,
        "timings": entry.timings,
        "lineage_in_output": bool(entry.lineage.in_output),
        "pair_table_s": round(pair_table_s, 3),
        "strategies": operator_strategies(entry),
    }
    if witnesses:
        result["without_witnesses_s"] = [round(x, 3) for x in default_t]
        result["without_witnesses_median_ratio"] = round(
            statistics.median(d / p for d, p in zip(default_t, plain_t)), 3
        )
        result["witness_cost_median_ratio"] = round(statistics.median(c / d for c, d in zip(cap_t, default_t)), 3)
    return result


def main(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise InvalidArgument("--repeat must be at least 1")
    from ..local import local_session

    # a line per round is the progress report; Spark's stage bars would bury it
    spark = local_session(
        "sparkprov-bench", shuffle_partitions=8, driver_memory="6g", **{"spark.ui.showConsoleProgress": "false"}
    )
    try:
        data = os.path.expanduser(args.data)
        if args.suite == "micro":
            names = workload_names(args.queries)
            report = run_micro(spark, args.rows, args.repeat, data, names, args.strategy)
            title = f"Smoke microbenchmarks, {args.rows:,} rows"
        elif args.suite == "pipelines":
            names = workload_names(args.queries)
            report = run_pipelines(spark, args.rows, args.repeat, data, names, args.strategy, args.timeout, args.write)
            title = f"pipelines, {args.rows:,} orders"
        elif args.suite == "tpcds":
            names = coverage.query_names(args.queries or "") or None
            report = run_tpcds(
                spark, args.sf, names, args.repeat, data, args.strategy, args.witnesses, args.timeout, args.write
            )
            title = f"TPC-DS SF {args.sf}"
        else:
            queries = [int(q) for q in args.queries.split(",") if q.strip()]
            keep = [s.strip() for s in args.workload_sources.split(",") if s.strip()] if args.workload_sources else None
            where = _where_args(args.workload_where, keep)
            report = run(
                spark, args.sf, queries, args.repeat, data, args.witnesses, args.strategy, keep, where, args.timeout,
                args.write,
            )  # fmt: skip
            title = f"TPC-H SF {args.sf}"
        report["spark"] = spark.version  # the line measured (make test-all-spark's venvs run others)
    finally:
        spark.stop()
    kept = (" with witnesses" if args.witnesses else "") + (", writing its output (path=)," if args.write else "")
    print(
        f"\n{title} on Spark {report['spark']}, strategy {args.strategy}, {args.repeat} interleaved pairs per query "
        f"(capture{kept} time / plain time; until the output alone was written in brackets)"
    )
    for r in report["queries"]:
        if r["status"] != "pass":
            print(f"  {_label(r['query']):<18} {r['status']}: {r['reason']}")
            continue
        print(
            f"  {_label(r['query']):<18} median ratio {r['median_ratio']:.2f} ({r['output_median_ratio']:.2f})   "
            f"plain median {statistics.median(r['plain_s']):.2f}s   task time {r['task_median_ratio']:.2f}, "
            f"CPU {r['cpu_median_ratio']:.2f}   lineage/input bytes {r['storage_ratio']}   "
            f"{r['output_rows']} rows, {r['pairs']} pairs + {r['shared_pairs']} shared"
            + (f"   check {r['check_median_ratio']:.3f} of plain" if "check_median_ratio" in r else "")
            + (
                f"   without witnesses {r['without_witnesses_median_ratio']:.2f}, "
                f"witnesses / without {r['witness_cost_median_ratio']:.2f}"
                if args.witnesses
                else ""
            )
        )
    ended = ", ".join(f"{report[s]} {s}" for s in STATUSES[1:] if report[s])
    if ended:
        print(f"  {report['pass']} measured; {ended}")
    if report["median_ratio"] is None:
        return 1
    print(
        f"  median {report['median_ratio']} ({report['output_median_ratio']}), max {report['max_ratio']}, "
        f"storage {report['storage_ratio']}; executors' task time {report['task_median_ratio']}, "
        f"CPU {report['cpu_median_ratio']}"
        + (f"; lazy's check {report['check_median_ratio']} of plain" if "check_median_ratio" in report else "")
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0


def _where_args(given: list[str] | None, keep: list[str] | None) -> dict[str, str]:
    """``--workload-where source:predicate`` arguments as ``{source: predicate}``."""
    where = {}
    for arg in given or []:
        source, sep, predicate = arg.partition(":")
        if not sep or not source.strip() or not predicate.strip():
            raise SystemExit(f"--workload-where takes source:predicate, not {arg!r}")
        if source.strip() not in (keep or []):
            raise SystemExit(f"--workload-where names {source.strip()!r}, which --workload-sources does not list")
        where[source.strip()] = predicate.strip()
    return where
