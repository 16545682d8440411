"""Concurrency under load: writer processes capture into one store (one name they all
share, one of their own) while reader processes list, load and trace continuously.

Every capture is nine rows of one value in three groups, summed: a reader knows what
any version must answer (three groups, each the sum of three rows, nine source rows
behind them), so a partial read, an entry loaded before its files, or a trace missing
a row shows. At the end every commit a writer reported is in the catalog exactly once,
versions are numbered without gaps, and the store checks whole.

>>> expected_sums(4)
{0: 12, 1: 12, 2: 12}
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

SHARED = "shared"


def expected_sums(value: int) -> dict[int, int]:
    return {g: 3 * value for g in range(3)}


def _writer(store: str, number: int, seconds: float, least: int) -> None:
    """Capture in a loop for ``seconds`` and at least ``least`` times: the shared name
    and this writer's own, each with a value that says which writer and round made it."""
    import sparkprov as sp

    from ..local import local_session

    quiet = {"spark.ui.showConsoleProgress": "false"}
    spark = local_session(f"sparkprov-writer-{number}", 1, "1g", quiet=True, **quiet)
    session = sp.LineageSession(spark, store=store)
    end = time.monotonic() + seconds
    made = []
    i = 0
    while i < least or time.monotonic() < end:
        value = number * 1000 + i
        name = SHARED if i % 2 == 0 else f"own{number}"
        df = spark.createDataFrame([(k % 3, value) for k in range(9)], "g int, v int")
        session.source(df, "numbers")
        cap = session.capture(df.groupBy("g").sum("v"), name=name)
        made.append([name, cap.version, value])
        i += 1
    print(json.dumps(made), flush=True)


def _reader(store: str, done: str) -> None:
    """List, load and trace every version until ``done`` exists (and once more after);
    print what was read and every problem found."""
    from ..errors import CaptureNotFound
    from ..query.embedded import EmbeddedEngine
    from ..store.catalog import Store

    opened = Store(store)
    reads, problems = 0, []
    seen: set = set()
    last = False
    while not last:
        last = Path(done).exists()
        time.sleep(0.05)  # not a busy loop while the writers' JVMs start
        for name in opened.names():
            for version in opened.versions(name):
                try:
                    entry = opened.load(name, version)
                except CaptureNotFound as exc:  # listed, then not there: never
                    problems.append(f"{name}@{version}: {exc}")
                    continue
                engine = EmbeddedEngine(entry)
                outs = engine.output_rids("true")
                rows = engine.output_rows(outs).to_pylist()
                sums = {r["g"]: r["sum(v)"] for r in rows}
                value = sums.get(0, 0) // 3
                behind = engine.backward_ids(outs, "numbers")
                if sums != expected_sums(value) or len(behind) != 9:
                    problems.append(f"{name}@{version}: sums {sums}, {len(behind)} rows behind")
                reads += 1
                seen.add((name, version))
    print(json.dumps({"reads": reads, "versions_seen": len(seen), "problems": problems}), flush=True)


def run(store: Path, writers: int, readers: int, seconds: float, least: int = 1) -> dict:
    """Start the writers (each capturing for ``seconds`` and at least ``least`` times)
    and the readers, wait for them, and account for every capture."""
    from ..store.catalog import Store
    from ..store.check import check_store

    Store(store)  # made once, before anyone races to make it
    me = [sys.executable, "-m", "sparkprov.bench.concurrency"]
    done = store.with_name(store.name + ".done")  # the readers stop once the writers have
    procs = [
        subprocess.Popen([*me, "--writer", *map(str, (store, i, seconds, least))], stdout=subprocess.PIPE, text=True)
        for i in range(writers)
    ]
    readers_procs = [
        subprocess.Popen([*me, "--reader", str(store), str(done)], stdout=subprocess.PIPE, text=True)
        for _ in range(readers)
    ]
    said = []
    for i, proc in enumerate(procs + readers_procs):
        if i == writers:
            done.touch()
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"a {'writer' if i < writers else 'reader'} failed ({proc.returncode})")
        said.append(json.loads(out.strip().splitlines()[-1]))
    made = [tuple(m) for w in said[:writers] for m in w]
    opened = Store(store)
    versions = {n: opened.versions(n) for n in opened.names()}
    problems = [p for r in said[writers:] for p in r["problems"]]
    if len(set((n, v) for n, v, _ in made)) != len(made):
        problems.append("two writers reported the same version")
    for name, found in versions.items():
        if found != list(range(1, len(found) + 1)):
            problems.append(f"{name}: versions {found} are not contiguous")
    if sorted((n, v) for n, v, _ in made) != sorted((n, v) for n, vs in versions.items() for v in vs):
        problems.append("the catalog's versions are not those the writers committed")
    for name, version, value in made:
        rows = {r["g"]: r["sum(v)"] for r in _rows(opened, name, version)}
        if rows != expected_sums(value):
            problems.append(f"{name}@{version} holds {rows}, not the sums of {value}")
    report = check_store(opened)
    return {
        "writers": writers,
        "readers": readers,
        "seconds": seconds,
        "captures": len(made),
        "versions": {n: len(v) for n, v in versions.items()},
        "reads": [r["reads"] for r in said[writers:]],
        "problems": problems + report.errors,
        "orphans": len(report.orphans),
    }


def _rows(opened, name: str, version: int) -> list[dict]:
    from ..query.embedded import EmbeddedEngine

    engine = EmbeddedEngine(opened.load(name, version))
    return engine.output_rows(engine.output_rids("true")).to_pylist()


if __name__ == "__main__":
    if sys.argv[1] == "--writer":
        _writer(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "--reader":
        _reader(sys.argv[2], sys.argv[3])
