"""The ``sparkprov`` command line: a thin shell over the public API.

``sparkprov captures`` reads the store's catalog without starting Spark, and
``sparkprov trace`` answers with the embedded engine unless the lineage is too large.

>>> build_parser().parse_args(["captures", "--store", "x"]).store
'x'
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from ..errors import InvalidArgument, SourceChangedWarning, SparkprovError


def printable(text: str) -> str:
    r"""``text`` on one line: characters a terminal would not show as they are (a
    newline in a predicate, a NUL) written as escapes.

    >>> printable("one" + chr(10) + "two")
    'one\\ntwo'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors on one line whatever the arguments held."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {printable(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sparkprov", description="Record-level lineage for PySpark.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run Titian's running example end to end")
    demo.add_argument("--store", help="keep the demo's captures in this store (default: a temporary one)")

    from .store import add_parser as add_store_parser

    add_store_parser(sub)

    run = sub.add_parser("run", help="run an unchanged PySpark script with every action captured")
    run.add_argument("--store", default=None, help="store directory (default $SPARKPROV_STORE or ./.sparkprov)")
    run.add_argument("script", help="the PySpark script (run as `python script.py args...` would)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")

    from .workflows import add_parser as add_workflow_parser

    add_workflow_parser(sub)

    from .graphs import add_parser as add_graph_parser

    add_graph_parser(sub)

    from .ui import add_parser as add_ui_parser

    add_ui_parser(sub)

    trace = sub.add_parser("trace", help="trace output rows back to the sources, or source rows forward")
    trace_sub = trace.add_subparsers(dest="direction", required=True)
    for direction, text in (
        ("backward", "the source rows behind the output rows matching --where"),
        ("forward", "the output rows that the rows of --source matching --where contributed to"),
    ):
        t = trace_sub.add_parser(direction, help=text)
        t.add_argument("name", help="capture name (see `sparkprov captures`)")
        t.add_argument("--where", required=True, help="Spark SQL predicate picking the rows to trace from")
        t.add_argument(
            "--source",
            required=direction == "forward",
            help="the source to trace " + ("from" if direction == "forward" else "to (default: every source)"),
        )
        if direction == "backward":
            t.add_argument(
                "--source-where",
                help="with --source: only the source rows satisfying this Spark SQL predicate "
                "(reads only the partitions it keeps when the capture's workload partitioned the source by its column)",
            )
        t.add_argument("--limit", type=int, default=20, help="rows shown per relation (default 20; counts are exact)")
        t.add_argument("--version", type=int, default=None, help="capture version (default: the newest)")
        t.add_argument("--engine", choices=["auto", "embedded", "spark"], default="auto", help="default: auto")
        t.add_argument(
            "--end-to-end",
            action="store_true",
            help="trace on through the captures that wrote these sources or read this output (Spark)",
        )
        t.add_argument("--store", default=None, help="store directory (default $SPARKPROV_STORE or ./.sparkprov)")
        t.add_argument("--json", action="store_true", help="print JSON")
        t.add_argument("--null", default="NULL", help="how a NULL value is printed (default NULL)")
        t.add_argument(
            "--refuse-changed",
            action="store_true",
            help="refuse a source copied at capture (CSV, JSON...) that changed since, instead of tracing "
            "from the copy with a warning",
        )

    drill = trace_sub.add_parser(
        "drill-down",
        help="the aggregation the capture's workload declared (group_by) of --source's rows behind the output rows "
        "matching --where, from the table stored at capture",
    )
    drill.add_argument("name", help="capture name (see `sparkprov captures`)")
    drill.add_argument("--where", required=True, help="Spark SQL predicate picking output rows")
    drill.add_argument("--source", required=True, help="the source the workload's group_by names")
    drill.add_argument("--version", type=int, default=None, help="capture version (default: the newest)")
    drill.add_argument("--store", default=None, help="store directory (default $SPARKPROV_STORE or ./.sparkprov)")
    drill.add_argument("--json", action="store_true", help="print JSON")
    drill.add_argument("--null", default="NULL", help="how a NULL value is printed (default NULL)")

    for kind, text in (
        ("why", "the witnesses of the output rows matching --where (sets of source rows that derive each)"),
        ("how", "the provenance polynomial of the output rows matching --where"),
    ):
        t = trace_sub.add_parser(kind, help=text + "; needs a capture made with witnesses=True")
        t.add_argument("name", help="capture name (see `sparkprov captures`)")
        t.add_argument("--where", required=True, help="Spark SQL predicate picking output rows")
        t.add_argument("--limit", type=int, default=20, help="output rows shown (default 20)")
        t.add_argument("--version", type=int, default=None, help="capture version (default: the newest)")
        t.add_argument("--store", default=None, help="store directory (default $SPARKPROV_STORE or ./.sparkprov)")
        t.add_argument("--json", action="store_true", help="print JSON")
        t.add_argument("--null", default="NULL", help="how a NULL value is printed (default NULL)")

    bench = sub.add_parser("bench", help="benchmarks")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    cap = bench_sub.add_parser(
        "capture",
        help="capture on/off time ratio on TPC-H or TPC-DS queries, data pipelines, Smoke's or Titian's workloads",
    )
    cap.add_argument("--suite", choices=["tpch", "tpcds", "pipelines", "micro", "titian"], default="tpch")
    cap.add_argument("--sf", type=float, default=1.0, help="TPC-H or TPC-DS scale factor (default 1)")
    cap.add_argument("--size", default="1GB", help="titian: bytes of generated text (default 1GB)")
    cap.add_argument(
        "--queries",
        default=None,
        help="comma-separated TPC-H query numbers (default 1,3,6), TPC-DS files (q3,q14a...; default: all 103), "
        "pipelines, micro or Titian workloads (default: all)",
    )
    cap.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds a run (plain or captured) may take before its jobs are cancelled and the query is reported "
        "as timed out (default 600; 0: no limit)",
    )
    cap.add_argument(
        "--rows", type=int, default=1_000_000, help="micro: rows per table; pipelines: orders (default 1,000,000)"
    )
    cap.add_argument(
        "--strategy",
        choices=("auto", "inject", "logical", "defer", "lazy"),  # capture.strategy.STRATEGIES (light startup)
        default="auto",
        help="how aggregates keep their groups: auto (per operator), inject or logical; defer resolves logical "
        "groups after the output is written; lazy captures nothing and builds lineage on first use, timed "
        "apart (default auto)",
    )
    cap.add_argument("--repeat", type=int, default=5, help="interleaved on/off pairs per query (default 5)")
    cap.add_argument("--data", default=None, help="where the data is generated (default data/<suite>)")
    cap.add_argument("--witnesses", action="store_true", help="capture with witnesses=True (for why/how)")
    cap.add_argument(
        "--write",
        action="store_true",
        help="tpch, tpcds, pipelines: the capture also writes its output for the user (path=), as the plain run does",
    )
    cap.add_argument(
        "--workload-sources",
        default=None,
        help="tpch: capture with workload={'sources': ...}, those of these comma-separated tables a query reads",
    )
    cap.add_argument(
        "--workload-where",
        action="append",
        metavar="SOURCE:PREDICATE",
        help="tpch: with --workload-sources, keep that source's lineage only where the predicate holds "
        "(workload where; repeatable)",
    )
    cap.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    tr = bench_sub.add_parser("trace", help="trace latency (embedded engine) over captured TPC-H queries")
    tr.add_argument(
        "--suite",
        choices=["tpch", "chain"],
        default="tpch",
        help="tpch: each query's capture; chain: end-to-end traces through three captures of TPC-H orders, "
        "and a small output's reads, here against Spark",
    )
    tr.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    tr.add_argument("--queries", default="", help="comma-separated query numbers (default: all 22)")
    tr.add_argument("--samples", type=int, default=50, help="random rows traced per query and direction (default 50)")
    tr.add_argument("--spark-samples", type=int, default=2, help="backward traces per query on Spark, to compare")
    tr.add_argument("--data", default="data/tpch", help="where TPC-H data is generated (default data/tpch)")
    tr.add_argument("--store", default=None, help="keep the captures here and reuse them (default: a temporary store)")
    tr.add_argument("--witnesses", action="store_true", help="capture with witnesses=True and time why/how too")
    tr.add_argument(
        "--object-store",
        action="store_true",
        help="push the captures to an S3 server started here (moto's) and trace them there",
    )
    tr.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    for name, text, workloads, repeat in (
        (
            "aggregates",
            "what keeping rids costs an aggregate: object aggregate, rid arrays, rid ranges",
            "q1, q6, q18",
            5,
        ),
        ("drilldown", "a workload's group_by and partition_by: capture cost, answers against traces", "q1, q5", 3),
    ):
        named = bench_sub.add_parser(name, help=text)
        named.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
        named.add_argument("--workloads", default="", help=f"comma-separated: {workloads} (default: all)")
        named.add_argument("--repeat", type=int, default=repeat, help=f"interleaved rounds (default {repeat})")
        named.add_argument("--data", default="data/tpch", help="where TPC-H data is generated (default data/tpch)")
        named.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    fn = bench_sub.add_parser("functions", help="region lineage for functions over arrays: strategies compared")
    fn.add_argument("--suite", choices=["micro", "astronomy", "genomics", "rows"], default="micro")
    fn.add_argument("--size", type=int, default=1000, help="the array's side (default 1000: 1000×1000)")
    fn.add_argument("--fanin", default="1,10,100", help="comma-separated input cells per region (default 1,10,100)")
    fn.add_argument("--fanout", default="1,10,100", help="comma-separated output cells per region (default 1,10,100)")
    fn.add_argument("--strategies", default="", help="comma-separated encodings and BlackBox (default: all)")
    fn.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    fn.add_argument("--height", type=int, default=512, help="astronomy: the exposures' height (default 512)")
    fn.add_argument("--width", type=int, default=2000, help="astronomy: the exposures' width (default 2000)")
    fn.add_argument("--max-disk-ratio", type=float, default=0.5, help="astronomy: the optimizer's disk budget, × input")
    fn.add_argument("--max-run-ratio", type=float, default=0.3, help="astronomy: its runtime budget, × the workflow")
    fn.add_argument("--rows", type=int, default=1_000_000, help="rows: the generated table's rows (default 1M)")
    fn.add_argument("--functions", default="", help="rows: comma-separated functions measured (default: all)")
    fn.add_argument(
        "--choose-keep", action="store_true", help="rows: sp.choose_keep on the rolling means (a sample), two budgets"
    )
    fn.add_argument("--replicas", type=int, default=100, help="genomics: copies of the 96 patients (default 100)")
    fn.add_argument("--max-disk-mb", default="1,5,10,20,50,100", help="genomics: the optimizer's disk budgets (MB)")
    fn.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    fa = bench_sub.add_parser("faults", help="a capturing driver killed with SIGKILL at random moments: check, traces")
    fa.add_argument("--kills", type=int, default=20, help="workers killed (default 20)")
    fa.add_argument("--sf", type=float, default=0.01, help="TPC-H scale factor of Q3 and Q18 (default 0.01)")
    fa.add_argument("--seed", type=int, default=0, help="the kill moments' seed")
    fa.add_argument("--data", default="data/tpch", help="where TPC-H data is generated (default data/tpch)")
    fa.add_argument("--work", default="data/faults", help="where the store and the word count's text go")
    fa.add_argument(
        "--concurrency-seconds",
        type=float,
        default=180,
        help="writers capturing this long while readers trace (default 180; 0: skip)",
    )
    fa.add_argument("--writers", type=int, default=4, help="processes capturing into one store at once (default 4)")
    fa.add_argument("--readers", type=int, default=2, help="processes listing, loading and tracing (default 2)")
    fa.add_argument("--resources-rows", type=int, default=0, help="an aggregate over this many rows' lineage (0: skip)")
    fa.add_argument("--driver-memory", default="2g", help="the driver's memory for --resources-rows (default 2g)")
    fa.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    gb = bench_sub.add_parser("graph", help="the lineage graph: build time, storage, RQ / CCProv / CSProv traces")
    gb.add_argument("--edges", default="1M", help="comma-separated graph sizes in triples (default 1M)")
    gb.add_argument("--threshold", type=int, default=25_000, help="nodes from which a component is split into sets")
    gb.add_argument("--queries", type=int, default=10, help="rows traced per query class (default 10)")
    gb.add_argument("--seed", type=int, default=0)
    gb.add_argument(
        "--update-pairs",
        type=int,
        default=1_000_000,
        help="triples of one more capture added by an update after the build (default 1M; 0: none)",
    )
    gb.add_argument(
        "--local-edges",
        type=int,
        help="edges up to which components are found in the driver, not by Spark's rounds (default 100M; 0: never)",
    )
    gb.add_argument(
        "--local-triples",
        type=int,
        help="triples up to which a build or update is made in this process, not by Spark's jobs (1M; 0: never)",
    )
    gb.add_argument("--driver-memory", default="2g", help="the Spark driver's memory (default 2g)")
    gb.add_argument(
        "--cold",
        action="store_true",
        help="also trace each row from disk: the page cache emptied first (Linux, needs root)",
    )
    gb.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    wfb = bench_sub.add_parser("workflow", help="Lipstick's WorkflowGen: tracking overhead and graph query times")
    wfb.add_argument("--suite", choices=["dealers", "arctic"], default="dealers")
    wfb.add_argument("--executions", type=int, default=10, help="executions of the workflow (default 10)")
    wfb.add_argument("--cars", type=int, default=20_000, help="dealers: cars over the four dealers (default 20000)")
    wfb.add_argument("--topologies", default="serial,parallel,dense", help="arctic: comma-separated topologies")
    wfb.add_argument("--stations", default="24", help="arctic: comma-separated station counts (default 24)")
    wfb.add_argument("--fanout", type=int, default=6, help="arctic: stations per layer of the dense topology")
    wfb.add_argument("--selectivity", choices=["all", "season", "month", "year"], default="month")
    wfb.add_argument("--queries", type=int, default=200, help="random zoom, delete and subgraph queries (default 200)")
    wfb.add_argument("--seed", type=int, default=0)
    wfb.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    uib = bench_sub.add_parser("ui", help="linked brushing on the flights demo, timed in Chromium, against re-runs")
    uib.add_argument("--copies", default="1,10", help="comma-separated copies of the 336,776 flights (default 1,10)")
    uib.add_argument("--brushes", type=int, default=200, help="random brushes per size (default 200)")
    uib.add_argument("--spark-brushes", type=int, default=20, help="of those, re-run in Spark too (default 20)")
    uib.add_argument(
        "--measure",
        action="append",
        help="what the bars measure, e.g. avg(arr_delay); repeat for several (default count(*))",
    )
    uib.add_argument("--data", default="data/flights", help="where the flights are written (default data/flights)")
    uib.add_argument("--store", default=None, help="keep the captures here and reuse them (default: a temporary store)")
    uib.add_argument("--captures", type=int, default=1000, help="captures view: a store of this many (0: skip)")
    uib.add_argument("--output-rows", type=int, default=1_000_000, help="capture view: output rows paged (0: skip)")
    uib.add_argument("--seed", type=int, default=0)
    uib.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    cov = bench_sub.add_parser("coverage", help="capture a query suite and check every answer (scoreboard)")
    cov.add_argument("--suite", choices=["tpch", "tpcds"], default="tpch")
    cov.add_argument("--sf", type=float, default=0.1, help="scale factor (default 0.1)")
    cov.add_argument("--queries", default="", help="comma-separated query names, e.g. q1,q22 (default: all)")
    cov.add_argument("--data", default=None, help="where the suite's data is generated (default data/<suite>)")
    cov.add_argument("--json", dest="json_out", help="write the scoreboard as JSON to this file")
    return parser


_REMOTE_COMMANDS = ("captures", "trace", "push")  # what a store in an object store answers


def _store(args: argparse.Namespace):
    from ..errors import StoreUnsupported
    from ..store.object_store import open_store

    store = open_store(args.store or os.environ.get("SPARKPROV_STORE") or ".sparkprov", create=False)
    if store.remote and args.command not in _REMOTE_COMMANDS:
        raise StoreUnsupported(
            f"`sparkprov {args.command}` reads a local or mounted store; {store.location} is in an object store, "
            f"where sparkprov answers {', '.join(_REMOTE_COMMANDS[:-1])} (docs/store.md)"
        )
    return store


def _trace(args: argparse.Namespace) -> int:
    from .answers import derivations, drill_down, dumps, trace

    store = _store(args)
    entry = store.load(args.name, args.version)
    if args.direction in ("why", "how"):
        found = derivations(entry, args.direction, args.where, args.limit)
        print(dumps(found) if args.json else found.to_text(args.null))
        return 0
    if args.direction == "drill-down":
        groups = drill_down(str(store.root), entry, args.where, args.source)
        print(dumps(groups) if args.json else groups.to_text(args.null))
        return 0
    answer = trace(
        str(store.root),
        entry,
        args.direction,
        args.where,
        args.source,
        args.limit,
        args.engine,
        end_to_end=args.end_to_end,
        source_where=getattr(args, "source_where", None),
    )
    print(dumps(answer) if args.json else answer.to_text(args.null))
    return 0


def _warn(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"sparkprov: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _warn
        if getattr(args, "refuse_changed", False):
            warnings.simplefilter("error", SourceChangedWarning)
        try:
            return _main(args)
        except SourceChangedWarning as exc:
            print(f"sparkprov: error: {printable(str(exc))}", file=sys.stderr)
            return 1


def _main(args: argparse.Namespace) -> int:
    try:
        if args.command == "demo":
            from ..demo import main as demo_main

            return demo_main(args.store)
        if args.command in ("captures", "check", "gc", "rm", "push"):
            from .store import main as store_main

            return store_main(args, _store(args))
        if args.command == "run":
            from ..script.runner import run_script

            return run_script(args.script, args.args, args.store or os.environ.get("SPARKPROV_STORE") or ".sparkprov")
        if args.command == "trace":
            return _trace(args)
        if args.command == "workflow":
            from .workflows import main as workflow_main

            return workflow_main(args, _store(args).root)
        if args.command == "graph":
            from .graphs import main as graph_main

            return graph_main(args, _store(args).root)
        if args.command == "ui":
            from .ui import main as ui_main

            if args.demo:  # makes its store
                return ui_main(args, args.store or os.environ.get("SPARKPROV_STORE") or ".sparkprov")
            return ui_main(args, str(_store(args).root))
        if args.command == "bench" and args.bench_command == "trace":
            from ..bench.trace import main as trace_main

            return trace_main(args)
        if args.command == "bench" and args.bench_command == "aggregates":
            from ..bench.aggregates import main as aggregates_main

            return aggregates_main(args)
        if args.command == "bench" and args.bench_command == "drilldown":
            from ..bench.drill_down import main as drill_down_main

            return drill_down_main(args)
        if args.command == "bench" and args.bench_command == "functions":
            from ..bench.functions import main as functions_main

            return functions_main(args)
        if args.command == "bench" and args.bench_command == "faults":
            from ..bench.faults import main as faults_main

            return faults_main(args)
        if args.command == "bench" and args.bench_command == "graph":
            from ..bench.graph import main as graph_bench_main

            return graph_bench_main(args)
        if args.command == "bench" and args.bench_command == "workflow":
            from ..bench.workflows import main as workflow_bench_main

            return workflow_bench_main(args)
        if args.command == "bench" and args.bench_command == "ui":
            from ..bench.ui import main as ui_bench_main

            return ui_bench_main(args)
        if args.command == "bench" and args.bench_command == "coverage":
            from ..bench.coverage import main as coverage_main

            return coverage_main(args)
        if (
            args.command == "bench"
            and args.bench_command == "capture"
            and args.write
            and args.suite not in ("tpch", "tpcds", "pipelines")
        ):
            raise InvalidArgument(f"--write applies to the tpch, tpcds and pipelines suites, not {args.suite}")
        if args.command == "bench" and args.suite == "titian":
            from ..bench.titian import main as titian_main

            args.data = args.data or "data/titian"
            return titian_main(args)
        if args.command == "bench":
            from ..bench.capture import main as bench_main

            args.data = args.data or f"data/{args.suite}"
            if args.suite == "tpch":
                args.queries = args.queries or "1,3,6"

            return bench_main(args)
    except (SparkprovError, ValueError, FileNotFoundError) as exc:
        print(f"sparkprov: error: {printable(str(exc))}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
