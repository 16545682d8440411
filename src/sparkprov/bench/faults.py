"""``sparkprov bench faults``: a capturing driver killed with SIGKILL at random moments.

A worker process (this module run as a script) captures TPC-H Q3 and Q18 and an RDD
word count into one store, one after the other. The first worker runs to the end: its
captures are the clean ones every later answer is compared with, and the time each
took is measured. Each later worker is killed while making a capture drawn at random,
at a moment drawn uniformly over the time the clean worker took to make it (planning,
the query, lineage being written, the catalog's commit), and after each kill:

- the store passes ``sparkprov check`` (what the kill left are orphans, not damage);
- every version committed so far loads (its files checked), and the versions the
  killed worker committed, with one earlier version drawn at random, trace: their
  output and every output row's source rows equal the clean capture's;
- the capture being made when the kill came is invisible or complete (no entry names
  a half-written capture, or the check above fails).

At the end ``gc`` removes every orphan, the store checks whole with none left, and
each capture's newest version traces as the clean one.

>>> sorted(CAPTURES)
['q18', 'q3', 'words']
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

CAPTURES = ("q3", "q18", "words")


def _worker(store: str, tpch_dir: str, text: str) -> None:
    """Capture the three, saying when each begins and commits."""
    import sparkprov as sp

    from ..local import local_session
    from . import tpch

    spark = local_session("sparkprov-faults-worker", 2, "1g", quiet=True, **{"spark.ui.showConsoleProgress": "false"})
    session = sp.LineageSession(spark, store=store)
    tpch.register(spark, tpch_dir)
    print("started", flush=True)
    for name in CAPTURES:
        print(f"begin {name}", flush=True)
        if name == "words":
            ctx = sp.LineageContext(spark.sparkContext, session=session)
            words = ctx.textFile(text).flatMap(lambda line: line.split()).map(lambda w: (w, 1))
            words.reduceByKey(lambda a, b: a + b).collect(name=name)
            version = session.store.latest_version(name)
        else:
            version = session.capture(spark.sql(tpch.query(int(name[1:]))), name).version
        print(f"committed {name} {version}", flush=True)


def answers(session, name: str, version: int) -> dict:
    """What a user reads of a capture: its output rows and the source rows behind them all."""
    cap = session.load(name, version)
    out = cap.output
    rids = [r["_sp_rid"] for r in out.select("_sp_rid").collect()]
    values = sorted(tuple(r) for r in out.drop("_sp_rid").collect())
    behind = cap.backward(rids)
    return {"output": values, "behind": {s: sorted(tuple(r) for r in df.collect()) for s, df in sorted(behind.items())}}


class Killer:
    """Workers capturing into ``store``, killed on demand, and what they said."""

    def __init__(self, store: Path, tpch_dir: Path, text: Path) -> None:
        self.args = [sys.executable, "-m", "sparkprov.bench.faults", "--worker", str(store), str(tpch_dir), str(text)]
        self.said = store.with_name(store.name + ".said")  # what a worker printed (a file: read while it runs)

    def run(self, kill: tuple[str, float] | None) -> tuple[dict[str, float], bool]:
        """One worker; with ``kill`` = (capture, seconds), killed that long after it
        began that capture. Returns each line it said with the seconds since its session
        started when it was seen, and whether it was killed."""
        errors = self.said.with_suffix(".err")  # a file, not a pipe: nothing it writes can block it
        with open(self.said, "w") as out, open(errors, "w") as err:
            proc = subprocess.Popen(self.args, stdout=out, stderr=err, text=True)
        seen: dict[str, float] = {}
        started = None
        deadline = None
        while proc.poll() is None:
            now = time.monotonic()
            for line in self.said.read_text().splitlines():
                if line.strip() and line.strip() not in seen:
                    started = started if started is not None else now
                    seen[line.strip()] = now - started
            if kill is not None and deadline is None and f"begin {kill[0]}" in seen:
                deadline = now + kill[1]
            if deadline is not None and now >= deadline:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
        proc.wait()
        killed = proc.returncode == -signal.SIGKILL
        if proc.returncode != 0 and not killed:
            raise RuntimeError(f"the worker failed ({proc.returncode}): {errors.read_text()[-2000:]}")
        end = time.monotonic() - (started or time.monotonic())
        for line in self.said.read_text().splitlines():  # what it said after the last look
            if line.strip():
                seen.setdefault(line.strip(), end)
        return seen, killed


def run(session, store: Path, tpch_dir: Path, text: Path, kills: int, seed: int = 0, progress=print) -> dict:
    """The experiment (see the module's docstring) with ``kills`` kills; ``session`` (a
    LineageSession on ``store``) answers the traces. Returns its counts and findings."""
    from ..store.catalog import Store
    from ..store.check import check_store
    from ..store.collect import MIN_AGE, collect_garbage

    rng = random.Random(seed)
    killer = Killer(store, tpch_dir, text)
    said, _ = killer.run(None)
    clean = {line.split()[1]: int(line.split()[2]) for line in said if line.startswith("committed")}
    took = {n: said[f"committed {n} {v}"] - said[f"begin {n}"] for n, v in clean.items()}
    expected = {name: answers(session, name, version) for name, version in clean.items()}
    runs, differences, damaged = [], [], []
    for i in range(kills):
        target = rng.choice(CAPTURES)
        moment = rng.uniform(0, took[target])
        said, killed = killer.run((target, moment))
        opened = Store(store)
        report = check_store(opened)
        if not report.ok:
            damaged.append({"kill": i, "errors": report.errors})
        made = [(line.split()[1], int(line.split()[2])) for line in said if line.startswith("committed")]
        during = next((line.split()[1] for line in reversed(said) if line.startswith("begin")), None)
        if during is not None and (during, opened.latest_version(during)) in made:
            during = None  # killed after its commit, between captures
        for name in opened.names():
            for version in opened.versions(name):
                opened.load(name, version)  # every version committed loads, its files as written
        earlier = [(n, v) for n in opened.names() for v in opened.versions(n) if (n, v) not in made]
        traced = made + ([rng.choice(earlier)] if earlier else [])
        for name, version in traced:
            if answers(session, name, version) != expected[name]:
                differences.append({"kill": i, "capture": f"{name}@{version}"})
        orphans = [o for o in report.orphans if o.path.parent == opened.folders.data]
        runs.append(
            {
                "target": target,
                "after": round(moment, 2),
                "killed": killed,
                "during": during,
                "committed": [f"{n}@{v}" for n, v in made],
                "orphans": len(orphans),  # in the store so far (gc runs at the end)
                "traced": len(traced),
            }
        )
        progress(f"kill {i + 1}/{kills}: {json.dumps(runs[-1])}")
    garbage = collect_garbage(Store(store), grace=0)
    for name in CAPTURES:  # what gc removed (the RDD contexts' folders too) was nothing a capture needs
        version = Store(store).latest_version(name)
        if answers(session, name, version) != expected[name]:
            differences.append({"kill": "after gc", "capture": f"{name}@{version}"})
    final = check_store(Store(store))
    # a worker killed in a commit leaves its temporary files, which gc leaves a minute
    young = [o for o in final.orphans if o.writer == "unknown" and o.age < MIN_AGE]
    versions = {n: Store(store).versions(n) for n in CAPTURES}
    return {
        "clean_seconds": {n: round(s, 2) for n, s in took.items()},
        "kills": sum(r["killed"] for r in runs),
        "runs": runs,
        "differences": differences,
        "damaged": damaged,
        "versions": versions,
        "gc_removed": len(garbage.removed),
        "final_check": {"ok": final.ok, "orphans": len(final.orphans) - len(young), "young_temporaries": len(young)},
    }


def write_text(path: Path, lines: int = 2000, seed: int = 0) -> Path:
    """A text file of ``lines`` lines of words, for the word count."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(50)]
    path.write_text("\n".join(" ".join(rng.choice(words) for _ in range(8)) for _ in range(lines)) + "\n")
    return path


def main(args: argparse.Namespace) -> int:
    import sparkprov as sp

    from ..local import local_session
    from . import tpch

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tpch_dir = tpch.generate(args.sf, args.data)
    text = write_text(work / "lines.txt")
    store = work / f"store-{int(time.time())}"
    spark = local_session("sparkprov-bench-faults", quiet=True, **{"spark.ui.showConsoleProgress": "false"})
    try:
        session = sp.LineageSession(spark, store=store)
        result = run(session, store, tpch_dir, text, args.kills, args.seed, progress=lambda s: print(s, flush=True))
    finally:
        spark.stop()
    result = {"sf": args.sf, "seed": args.seed, **result}
    if args.concurrency_seconds:
        from .concurrency import run as concurrently

        seconds = args.concurrency_seconds
        print(f"concurrency: {args.writers} writers, {args.readers} readers, {seconds:g} s", flush=True)
        result["concurrency"] = concurrently(
            work / f"concurrent-{int(time.time())}", args.writers, args.readers, args.concurrency_seconds
        )
    if args.resources_rows:
        from .resources import run as resources

        print(f"resources: {args.resources_rows:,} rows under a {args.driver_memory} driver", flush=True)
        spark = local_session("sparkprov-bench-resources", quiet=True, **{"spark.ui.showConsoleProgress": "false"})
        try:
            result["resources"] = resources(work, args.resources_rows, 100, args.driver_memory, spark)
        finally:
            spark.stop()
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1))
    concurrent = result.get("concurrency", {"problems": []})
    fine = not result["differences"] and not result["damaged"] and result["final_check"]["ok"]
    return 0 if fine and not concurrent["problems"] and "failed" not in result.get("resources", {}) else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        _worker(*sys.argv[2:5])
