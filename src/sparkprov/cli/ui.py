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


def main(args: argparse.Namespace, store: Path) -> int:
    from ..web.server import UiServer

    server = UiServer(str(store), host=args.host, port=args.port)
    print(f"sparkprov ui: serving store {store}\n  {server.url}\n(Ctrl-C stops it)", flush=True)
    if args.open:
        import webbrowser

        if not webbrowser.open(server.url):
            print("sparkprov ui: no web browser to open; open the address above", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve()
    return 0
