"""``sparkprov bench coverage``: run a query suite with capture and check every answer.

Per query: identical answers with capture on and off, the re-execution check on up
to 3 output rows across all sources, and forward/backward consistency (the three
checks of ``docs/semantics.md``, in :mod:`sparkprov.bench.checks`). A query ends
as ``pass``, ``unsupported`` (capture refused it, naming the operator) or ``fail``
(anything else, with the reason).

>>> scoreboard([{"query": "q1", "status": "pass"}, {"query": "q2", "status": "fail", "reason": "x"}])["pass"]
1
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InvalidArgument, UnsupportedOperation
from ..plan.catalyst import Bridge
from . import checks, tpcds, tpch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

STATUSES = ("pass", "unsupported", "fail")


@dataclass(frozen=True)
class Suite:
    """A benchmark's data and query texts."""

    name: str
    generate: Callable[[float, str], object]  # (scale factor, data directory) -> data path
    register: Callable[[SparkSession, object], None]  # temp views over the data
    queries: Callable[[], list[str]]  # query names, in run order
    text: Callable[[str], str]  # query name -> SQL
    adapt: Callable[[SparkSession], None] = lambda spark: None  # fix-ups after views are (re)registered
    conf: tuple[tuple[str, str], ...] = ()  # Spark settings the query texts assume


def _tpch_suite() -> Suite:
    return Suite(
        name="tpch",
        generate=tpch.generate,
        register=tpch.register,
        queries=lambda: [f"q{n}" for n in range(1, tpch.N_QUERIES + 1)],
        text=lambda q: tpch.query(int(q.lstrip("q"))),
    )


def _tpcds_suite() -> Suite:
    return Suite(
        name="tpcds",
        generate=tpcds.generate,
        register=tpcds.register,
        queries=lambda: list(tpcds.QUERIES),
        text=tpcds.query,
        adapt=tpcds.v1_names,
        # The texts predate ANSI mode (Spark 4's default): at small scale factors q90's
        # divisor is 0, which ANSI turns into an error instead of the NULL they expect.
        conf=(("spark.sql.ansi.enabled", "false"),),
    )


SUITES: dict[str, Callable[[], Suite]] = {"tpch": _tpch_suite, "tpcds": _tpcds_suite}


def suite(name: str) -> Suite:
    """The suite called ``name`` (``tpch`` or ``tpcds``)."""
    if name not in SUITES:
        raise InvalidArgument(f"unknown suite {name!r}; choose from {', '.join(sorted(SUITES))}")
    return SUITES[name]()


def check_query(spark: SparkSession, session, data, s: Suite, query: str, rows: int = 3) -> dict:
    """Capture one query of suite ``s`` and run the three checks; returns its result entry."""
    text = s.text(query)
    started = time.time()
    entry: dict = {"query": query}
    try:
        try:
            plain = [tuple(r) for r in spark.sql(text).collect()]
        except Exception as exc:  # not capture's doing, but no answer to check either
            entry.update(status="fail", reason=f"the query fails without capture: {reason(exc)}")
            return entry
        try:
            cap = session.capture(spark.sql(text), name=query)
        except UnsupportedOperation as exc:
            entry.update(status="unsupported", reason=str(exc).splitlines()[0])
            return entry
        problems = []
        if not checks.same_answers(plain, checks.output_rows(cap), ordered=_ordered(text)):
            problems.append("answers differ with capture on and off")

        def rerun(restricted):
            try:
                for name, df in restricted.items():
                    df.createOrReplaceTempView(name)
                s.adapt(spark)
                result = spark.sql(text)
                return spark.createDataFrame(result.collect(), result.schema)
            finally:
                s.register(spark, data)

        for r in cap.output.limit(rows).collect():
            found = checks.check_row(cap, r["_sp_rid"], rerun)
            only_rerun = found and all(p.startswith("re-execution") for p in found)
            if only_rerun and checks.reexecution_by_occurrence(session, lambda: spark.sql(text), cap, r["_sp_rid"]):
                entry["by_occurrence"] = True  # see checks.reexecution_by_occurrence
                continue
            problems.extend(found)
        if problems:
            entry.update(status="fail", reason="; ".join(problems))
        else:
            entry.update(status="pass")
        entry["output_rows"] = len(plain)
    except Exception as exc:  # a crash is a failure of this query, not of the run
        entry.update(status="fail", reason=reason(exc))
    finally:
        entry["seconds"] = round(time.time() - started, 2)
    return entry


def reason(exc: Exception) -> str:
    """What went wrong, in one line: the exception's type and its JVM cause where it has one."""
    # a Py4JJavaError's first line only names the py4j call; the JVM exception says what failed
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    java = [x for x in lines if x.startswith(("Caused by:", "org.apache.", "java."))]
    first = java[-1] if java else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {first[:400]}"


def _ordered(text: str) -> bool:
    # only an ORDER BY of the outermost query orders the result; a final one is what counts
    tail = text.upper().rsplit(")", 1)[-1]
    return "ORDER BY" in tail


def scoreboard(results: list[dict]) -> dict:
    """Counts per status plus the per-query list."""
    board = {status: sum(1 for r in results if r["status"] == status) for status in STATUSES}
    board["total"] = len(results)
    board["queries"] = results
    return board


def run(
    spark: SparkSession,
    suite_name: str,
    sf: float,
    data_dir: str,
    queries: list[str] | None = None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Run ``queries`` (default: all) of a suite at scale factor ``sf``; returns the scoreboard."""
    import sparkprov as sp

    s = suite(suite_name)
    wanted = queries or s.queries()
    unknown = sorted(set(wanted) - set(s.queries()))
    if unknown:
        raise InvalidArgument(f"suite {suite_name} has no queries {', '.join(unknown)}")
    data = s.generate(sf, data_dir)
    s.register(spark, data)
    results = []
    with Bridge(spark).settings(dict(s.conf)), tempfile.TemporaryDirectory(prefix="sparkprov-coverage-") as store:
        session = sp.LineageSession(spark, store=store)
        for q in wanted:
            entry = check_query(spark, session, data, s, q)
            results.append(entry)
            if progress:
                progress(entry)
    board = scoreboard(results)
    board.update(suite=suite_name, sf=sf)
    return board


def query_names(text: str) -> list[str]:
    """The query names of a comma-separated ``--queries`` (``3`` is ``q3``).

    >>> query_names("3, q14a,")
    ['q3', 'q14a']
    """
    names = [q.strip() if q.strip().startswith("q") else f"q{q.strip()}" for q in text.split(",")]
    return [q for q in names if q != "q"]


def main(args) -> int:
    """The ``sparkprov bench coverage`` command."""
    import json
    import os
    from pathlib import Path

    from ..local import local_session

    queries = query_names(args.queries or "")
    # one line per query is the progress report; Spark's stage bars would bury it
    spark = local_session(
        "sparkprov-coverage", shuffle_partitions=4, driver_memory="6g", **{"spark.ui.showConsoleProgress": "false"}
    )
    try:

        def progress(entry: dict) -> None:
            reason = f"  ({entry['reason']})" if entry.get("reason") else ""
            print(f"{entry['query']:<6} {entry['status']:<12} {entry['seconds']:>7.1f}s{reason}", flush=True)

        data = os.path.expanduser(args.data or f"data/{args.suite}")
        board = run(spark, args.suite, args.sf, data, queries or None, progress)
        board["spark"] = spark.version
    finally:
        spark.stop()
    print(
        f"\n{args.suite} SF {args.sf} on Spark {board['spark']}: {board['pass']} pass, "
        f"{board['unsupported']} unsupported, {board['fail']} fail, of {board['total']}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(board, indent=1))
    return 0 if board["fail"] == 0 else 1
