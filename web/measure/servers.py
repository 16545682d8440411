"""Times the page's application (sparkprov.web.app) under several ASGI servers, on the
flights demo: each server started in a process of its own, then asked for what the page
asks most (the captures, a page of output rows, a linked-views brush) one request at a
time (latency: median and 95th percentile) and from 8 clients at once (requests per
second). The servers other than the one sparkprov ships with are installed for this
measurement only, into measure/servers-deps (pip --target).

Run from web/: ../.venv/bin/python measure/servers.py [--store S] [--json out.json]
"""

import argparse
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

HERE = Path(__file__).parent
DEPS = HERE / "servers-deps"
PACKAGES = ["hypercorn", "granian", "httptools", "uvloop"]  # the newest: their versions are printed
NAMES = ["flights_by_carrier", "flights_by_month", "flights_by_hour", "flights_by_delay", "flights_by_origin"]

SERVERS = {
    "uvicorn (h11, asyncio): shipped": ["-m", "uvicorn", "--http", "h11", "--loop", "asyncio"],
    "uvicorn (httptools, uvloop)": ["-m", "uvicorn", "--http", "httptools", "--loop", "uvloop"],
    "hypercorn (h11, asyncio)": ["-m", "hypercorn"],
    "granian (Rust, ASGI)": ["-m", "granian", "--interface", "asgi"],
}


def _install() -> None:
    if not (DEPS / ".done").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(DEPS), *PACKAGES], check=True)
        (DEPS / ".done").touch()


def _store(path: str) -> str:
    from sparkprov.store.catalog import Store
    from sparkprov.web.flights import CHARTS

    if all(n in Store(path).names() for n in CHARTS):
        return path
    import sparkprov as sp
    from sparkprov.local import local_session
    from sparkprov.web.flights import capture_charts, write_flights

    spark = local_session("sparkprov-measure-servers")
    try:
        capture_charts(sp.LineageSession(spark, store=path), write_flights(Path("../data/flights")))
    finally:
        spark.stop()
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _args(kind: str, port: int) -> list[str]:
    base = SERVERS[kind]
    if "uvicorn" in base:
        return [
            *base,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
            "--lifespan",
            "off",
            "server_app:app",
        ]
    if "hypercorn" in base:
        return [*base, "--bind", f"127.0.0.1:{port}", "--log-level", "warning", "server_app:app"]
    return [*base, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "server_app:app"]


def _summary(ms: list[float]) -> dict:
    return {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95))}


def measure(kind: str, store: str, requests: int, seed: int) -> dict:
    port, token = _free_port(), secrets.token_urlsafe(16)
    env = {**os.environ, "STORE": store, "TOKEN": token, "PORT": str(port)}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(DEPS), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, *_args(kind, port)], env=env, cwd=HERE)
    base = f"http://127.0.0.1:{port}"
    headers = {"x-sparkprov-token": token}
    try:
        client = httpx.Client(base_url=base, headers=headers, timeout=60)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/api/captures").raise_for_status()
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"{kind} did not start") from None
                time.sleep(0.1)
        charts = client.get("/api/linked", params=[("c", n) for n in NAMES]).json()["charts"]
        rng = random.Random(seed)

        def brush() -> dict:
            chart = rng.randrange(len(charts))
            n = len(charts[chart]["labels"])
            lo = rng.randrange(n)
            return {"captures": NAMES, "chart": chart, "groups": list(range(lo, min(n, lo + rng.randrange(1, 4))))}

        asks = {
            "captures": lambda c: c.get("/api/captures"),
            "rows page": lambda c: c.get(f"/api/captures/{NAMES[2]}/1/rows", params={"order": "flights", "limit": 50}),
            "brush": lambda c: c.post("/api/linked/brush", json=brush()),
        }
        result = {}
        for what, ask in asks.items():
            for _ in range(20):  # warm
                ask(client).raise_for_status()
            times = []
            for _ in range(requests):
                t0 = time.perf_counter()
                ask(client).raise_for_status()
                times.append((time.perf_counter() - t0) * 1000)
            result[what] = _summary(times)
        done, clients = [0], 8
        stop = time.monotonic() + 5

        def hammer() -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
                while time.monotonic() < stop:
                    asks["brush"](c).raise_for_status()
                    done[0] += 1

        threads = [threading.Thread(target=hammer) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        result["brushes per second, 8 clients"] = done[0] / 5
        return result
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--store", default=None, help="a store holding the flights demo (default: made in a temp folder)"
    )
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="every server measured this many times, interleaved")
    parser.add_argument("--json", dest="json_out")
    args = parser.parse_args()
    _install()
    versions = {}
    for name in ["uvicorn", "starlette", *PACKAGES]:
        found = list(DEPS.glob(f"{name}-*.dist-info")) if name in PACKAGES else []
        if found:
            versions[name] = found[0].name.removesuffix(".dist-info").split("-")[1]
        else:
            from importlib.metadata import version

            versions[name] = version(name)
    print("versions:", versions, flush=True)
    store = _store(args.store or tempfile.mkdtemp(prefix="sparkprov-servers-"))
    runs = {k: [] for k in SERVERS}
    for r in range(args.rounds):
        for kind in SERVERS:
            runs[kind].append(measure(kind, store, args.requests, seed=r))
            print(f"round {r + 1}: {kind}: {runs[kind][-1]}", flush=True)
    table = {}
    for kind, results in runs.items():
        table[kind] = {
            what: (
                {s: float(np.median([x[what][s] for x in results])) for s in ("p50", "p95")}
                if isinstance(results[0][what], dict)
                else float(np.median([x[what] for x in results]))
            )
            for what in results[0]
        }
    print("\nmedians over rounds (ms; brushes per second):")
    for kind, row in table.items():
        cells = [
            f"{w} p50 {v['p50']:.1f} p95 {v['p95']:.1f}" if isinstance(v, dict) else f"{w} {v:.0f}"
            for w, v in row.items()
        ]
        print(f"  {kind}: " + "; ".join(cells))
    if args.json_out:
        out = {"requests": args.requests, "rounds": args.rounds, "versions": versions, "servers": table}
        Path(args.json_out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
