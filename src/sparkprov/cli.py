"""The ``sparkprov`` command line: a thin shell over the public API.

``sparkprov captures`` reads the store's catalog without starting Spark.

>>> build_parser().parse_args(["captures", "--store", "x"]).store
'x'
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .errors import SparkprovError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkprov", description="Record-level lineage for PySpark.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run Titian's running example end to end")
    demo.add_argument("--store", help="keep the demo's captures in this store (default: a temporary one)")

    caps = sub.add_parser("captures", help="list the captures in a store")
    caps.add_argument("--store", default=None, help="store directory (default $SPARKPROV_STORE or ./.sparkprov)")
    caps.add_argument("--json", action="store_true", help="print JSON")

    bench = sub.add_parser("bench", help="benchmarks")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    cap = bench_sub.add_parser("capture", help="capture on/off time ratio on TPC-H queries")
    cap.add_argument("--suite", choices=["tpch"], default="tpch")
    cap.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    cap.add_argument("--queries", default="1,3,6", help="comma-separated query numbers (default 1,3,6)")
    cap.add_argument("--repeat", type=int, default=5, help="interleaved on/off pairs per query (default 5)")
    cap.add_argument("--data", default="data/tpch", help="where TPC-H data is generated (default data/tpch)")
    cap.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    cov = bench_sub.add_parser("coverage", help="capture a query suite and check every answer (scoreboard)")
    cov.add_argument("--suite", choices=["tpch", "tpcds"], default="tpch")
    cov.add_argument("--sf", type=float, default=0.1, help="scale factor (default 0.1)")
    cov.add_argument("--queries", default="", help="comma-separated query names, e.g. q1,q22 (default: all)")
    cov.add_argument("--data", default=None, help="where the suite's data is generated (default data/<suite>)")
    cov.add_argument("--json", dest="json_out", help="write the scoreboard as JSON to this file")
    return parser


def _captures(args: argparse.Namespace) -> int:
    from .store.catalog import Store

    store = Store(args.store or os.environ.get("SPARKPROV_STORE") or ".sparkprov")
    rows = []
    for name in store.names():
        e = store.load(name)
        rows.append({"name": name, "version": e["version"], "created": e["created"], "sources": list(e["sources"])})
    if args.json:
        print(json.dumps(rows, indent=1))
    elif not rows:
        print(f"no captures in {store.root}")
    else:
        for r in rows:
            print(f"{r['name']}  v{r['version']}  {r['created']}  sources: {', '.join(r['sources'])}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            from .demo import main as demo_main

            return demo_main(args.store)
        if args.command == "captures":
            return _captures(args)
        if args.command == "bench" and args.bench_command == "coverage":
            from .bench.coverage import main as coverage_main

            return coverage_main(args)
        if args.command == "bench":
            from .bench.capture import main as bench_main

            return bench_main(args)
    except (SparkprovError, ValueError, FileNotFoundError) as exc:
        print(f"sparkprov: error: {exc}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
