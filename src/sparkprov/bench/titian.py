"""``sparkprov bench capture --suite titian``: Titian's workloads as PySpark RDD programs.

Titian (section 5) measures word count and grep over generated text (Zipf over an
8,000-term vocabulary), its running example (error counts of a log), and PigMix-style
L2 (join), L6 (aggregate) and L7 (nested plan) over page_views and users. Each
workload here is one function of its source (``sc`` for the plain run, a fresh
``LineageContext`` for the traced one), so both run the same program; both end in
``saveAsTextFile``. Plain and traced runs alternate in one session; the ratio counts
all the work tracing causes (copying the text into the store, the side files, the
lineage resolved and committed).

>>> sorted(WORKLOADS)
['grep', 'log', 'pigmix_l2', 'pigmix_l6', 'pigmix_l7', 'wordcount']
>>> len(vocabulary())
8000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from operator import add
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument

VOCABULARY = 8000
ZIPF_S = 1.0
WORDS_PER_LINE = 10
GREP_TERM_RANK = 200  # a term found in about 1 line in 100
LEVELS = ("INFO", "WARN", "ERROR")
USERS = 20_000
SPLIT_HOUR = 43_200  # seconds: L7 counts morning and afternoon views


def vocabulary(seed: int = 8000) -> list[str]:
    """8,000 distinct lower-case terms of 3 to 10 letters, by Zipf rank."""
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        n = int(rng.integers(3, 11))
        words["".join(chr(97 + c) for c in rng.integers(0, 26, n))] = None
    return list(words)


GREP_TERM = vocabulary()[GREP_TERM_RANK]


@dataclass(frozen=True)
class Data:
    text: str
    log: str
    page_views: str
    power_users: str
    input_bytes: dict


def parse_size(size: str) -> int:
    """``"1GB"``, ``"100MB"``, ``"5MB"``... in bytes."""
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
    text = size.strip().upper()
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    raise InvalidArgument(f"--size takes a size such as 100MB or 1GB, not {size!r}")


def generate(size: int, directory: str | os.PathLike) -> Data:
    """The suite's data at ``size`` bytes of text (the log and page_views are a quarter
    of that each), generated once per size under ``directory`` and reused."""
    root = Path(directory) / f"titian-{size}"
    if not (root / "DONE").exists():
        tmp = root.with_name(f".{root.name}-{uuid.uuid4().hex}")
        tmp.mkdir(parents=True)
        rng = np.random.default_rng(5)
        _write_lines(tmp / "text", size, lambda n: _text_lines(rng, n))
        _write_lines(tmp / "log", size // 4, lambda n: _log_lines(rng, n))
        _write_lines(tmp / "page_views", size // 4, lambda n: _page_view_lines(rng, n))
        (tmp / "power_users").mkdir()
        (tmp / "power_users" / "part-00000.txt").write_text(
            "".join(
                f"user{u}\t555-{u:04d}\t{u} Main St\tCity{u % 50}\tCA\t{90000 + u % 1000}\n"
                for u in range(0, USERS, 20)
            )
        )
        (tmp / "DONE").write_text("")
        if root.exists():
            shutil.rmtree(root)
        tmp.rename(root)
    sizes = {name: _bytes(root / name) for name in ("text", "log", "page_views", "power_users")}
    return Data(*(str(root / n) for n in ("text", "log", "page_views", "power_users")), sizes)


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _slot_bytes(entry: dict) -> int:
    """Bytes of the records' slot columns in a capture's output files (their lineage)."""
    from ..store.files import parquet_files
    from ..store.parquet import column_chunk_sum

    slots = {name for name, _, _ in entry.lineage.rdd["slots"]}
    return column_chunk_sum(parquet_files(entry.output.path), slots, "total_compressed_size")


def _write_lines(folder: Path, size: int, make: Callable[[int], list[str]], file_bytes: int = 64 << 20) -> None:
    folder.mkdir()
    written, part = 0, 0
    out = None
    while written < size:
        if out is None or out.tell() >= file_bytes:
            if out is not None:
                out.close()
            out = open(folder / f"part-{part:05d}.txt", "w")  # noqa: SIM115 - closed below
            part += 1
        chunk = "".join(line + "\n" for line in make(20_000))
        out.write(chunk)
        written += len(chunk)
    out.close()


def _zipf_ranks(rng: np.random.Generator, shape) -> np.ndarray:
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_S
    return rng.choice(VOCABULARY, size=shape, p=weights / weights.sum())


def _text_lines(rng: np.random.Generator, n: int) -> list[str]:
    words = np.array(vocabulary())[_zipf_ranks(rng, (n, WORDS_PER_LINE))]
    return [" ".join(row) for row in words.tolist()]


def _log_lines(rng: np.random.Generator, n: int) -> list[str]:
    levels = rng.choice(len(LEVELS), n, p=[0.7, 0.2, 0.1])
    codes = rng.integers(1, 50, n)
    users = rng.integers(0, USERS, n)
    return [f"{LEVELS[lv]} {c} event{c} user{u}" for lv, c, u in zip(levels.tolist(), codes.tolist(), users.tolist())]


def _page_view_lines(rng: np.random.Generator, n: int) -> list[str]:
    users = rng.integers(0, USERS, n).tolist()
    terms = np.array(vocabulary())[_zipf_ranks(rng, n)].tolist()
    spent = rng.integers(1, 600, n).tolist()
    stamps = rng.integers(0, 86_400, n).tolist()
    ips = rng.integers(0, 256, n).tolist()
    revenue = np.round(rng.random(n) * 10, 2).tolist()
    return [
        f"user{u}\tview\t{s}\t{t}\t10.0.0.{ip}\t{ts}\t{r}"
        for u, s, t, ip, ts, r in zip(users, spent, terms, ips, stamps, revenue)
    ]


# ---- the workloads: one program over `src` (a SparkContext or a LineageContext) ------
def wordcount(src: Any, d: Data) -> Any:
    return src.textFile(d.text).flatMap(lambda line: line.split(" ")).map(lambda w: (w, 1)).reduceByKey(add)


def grep(src: Any, d: Data) -> Any:
    term = GREP_TERM
    return src.textFile(d.text).filter(lambda line: term in line.split(" "))


def log(src: Any, d: Data) -> Any:  # Titian's running example: error counts by code
    errors = src.textFile(d.log).filter(lambda line: line.startswith("ERROR"))
    return errors.map(lambda line: (int(line.split(" ")[1]), 1)).reduceByKey(add)


def _views(src: Any, d: Data) -> Any:
    return src.textFile(d.page_views).map(lambda line: line.split("\t"))


def pigmix_l2(src: Any, d: Data) -> Any:  # join: revenue of the power users' views
    views = _views(src, d).map(lambda f: (f[0], float(f[6])))
    power = src.textFile(d.power_users).map(lambda line: (line.split("\t")[0], None))
    return views.join(power).map(lambda kv: (kv[0], kv[1][0]))


def pigmix_l6(src: Any, d: Data) -> Any:  # aggregate: time spent per (user, term, ip, time)
    return _views(src, d).map(lambda f: ((f[0], f[3], f[4], f[5]), int(f[2]))).reduceByKey(add)


def pigmix_l7(src: Any, d: Data) -> Any:  # nested plan: views per user in the morning and afternoon
    per_user = _views(src, d).map(lambda f: (f[0], int(f[5]))).groupByKey()
    return per_user.mapValues(lambda ts: (sum(t < SPLIT_HOUR for t in ts), sum(t >= SPLIT_HOUR for t in ts)))


WORKLOADS: dict[str, Callable[[Any, Data], Any]] = {
    "wordcount": wordcount,
    "grep": grep,
    "log": log,
    "pigmix_l2": pigmix_l2,
    "pigmix_l6": pigmix_l6,
    "pigmix_l7": pigmix_l7,
}
_INPUTS = {
    "wordcount": ["text"],
    "grep": ["text"],
    "log": ["log"],
    "pigmix_l2": ["page_views", "power_users"],
    "pigmix_l6": ["page_views"],
    "pigmix_l7": ["page_views"],
}


def run(spark: Any, size: int, workloads: list[str], repeat: int, data_dir: str) -> dict:
    """Benchmark ``workloads`` at ``size`` bytes of text; returns the report."""
    import sparkprov as sp

    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise InvalidArgument(f"unknown Titian workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    data = generate(size, data_dir)
    sc = spark.sparkContext
    work = Path(tempfile.mkdtemp(prefix="sparkprov-titian-"))
    results = []
    try:
        session = sp.LineageSession(spark, store=work / "store")
        for name in workloads:
            program = WORKLOADS[name]
            plain_t, traced_t = [], []
            ctx = None

            def plain(i: int, program=program, name=name) -> float:
                out = work / f"plain-{name}-{i}"
                t = time.perf_counter()
                program(sc, data).saveAsTextFile(str(out))
                elapsed = time.perf_counter() - t
                shutil.rmtree(out, ignore_errors=True)
                return elapsed

            def traced(i: int, program=program, name=name):
                out = work / f"traced-{name}-{i}"
                t = time.perf_counter()
                lc = sp.LineageContext(sc, session=session)  # fresh: its text copy counts
                rdd = program(lc, data)
                rdd.saveAsTextFile(str(out), name=name)
                elapsed = time.perf_counter() - t
                shutil.rmtree(out, ignore_errors=True)
                return elapsed, lc, rdd.capture

            plain(-1)  # warm-up: file listings, Python workers
            for i in range(repeat):
                for kind in ("plain", "traced") if i % 2 == 0 else ("traced", "plain"):
                    if kind == "plain":
                        plain_t.append(plain(i))
                    else:
                        t, ctx, cap = traced(i)
                        traced_t.append(t)
                print(
                    f"{name} round {i + 1}/{repeat}: plain {plain_t[-1]:.2f}s, traced {traced_t[-1]:.2f}s", flush=True
                )
            results.append(_report(name, plain_t, traced_t, ctx, cap, data))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratios = [r["median_ratio"] for r in results]
    return {
        "suite": "titian",
        "size_bytes": size,
        "repeat": repeat,
        "workloads": results,
        "median_ratio": round(statistics.median(ratios), 3),
        "max_ratio": round(max(ratios), 3),
    }


def _report(name: str, plain_t: list, traced_t: list, ctx: Any, cap: Any, data: Data) -> dict:
    entry = cap._entry
    input_bytes = sum(data.input_bytes[k] for k in _INPUTS[name])
    # the capture's links to the side files the program's tasks wrote, and the records'
    # slot columns (pairs are resolved only when a Spark answer needs them: none has, yet)
    from ..store.layout import capture_dir

    sides = capture_dir(entry) / "sides"
    lineage_bytes = (_bytes(sides) if sides.exists() else 0) + _slot_bytes(entry)
    copies = ctx._state.root / "sources"
    copy_bytes = _bytes(copies) if copies.exists() else 0
    report = {
        "workload": name,
        "plain_s": [round(x, 3) for x in plain_t],
        "traced_s": [round(x, 3) for x in traced_t],
        "median_ratio": round(statistics.median(t / p for t, p in zip(traced_t, plain_t)), 3),
        "input_bytes": input_bytes,
        "lineage_bytes": lineage_bytes,
        "text_copy_bytes": copy_bytes,
        "storage_ratio": float(f"{lineage_bytes / input_bytes:.3g}"),
        "output_rows": cap.output.count(),
    }
    if name == "wordcount":
        report["backward_trace"] = _trace_times(cap)
    return report


def _trace_times(cap: Any) -> list[dict]:
    """Backward traces of single word counts (the most frequent word, a middle one and
    the rarest): as ``sparkprov trace`` answers them (its engine, the count and 20
    rows), and as the Python API's ``backward(...).count()``."""
    from pyspark.sql import functions as F

    from ..cli.answers import trace

    counted = cap.output.orderBy(F.col("_2").desc(), F.col("_1")).select("_sp_rid", "_1", "_2").collect()
    picks = [counted[0], counted[len(counted) // 2], counted[-1]]
    (source,) = list(cap.sources)
    store = str(cap._session.store.root)
    found = []
    for row in picks:
        t = time.perf_counter()
        answer = trace(store, cap._entry, "backward", f"_sp_rid = {row['_sp_rid']}", source, limit=20)
        cli = time.perf_counter() - t
        t = time.perf_counter()
        lines = cap.backward([row["_sp_rid"]], source=source).count()
        api = time.perf_counter() - t
        found.append(
            {
                "word": row["_1"],
                "count": row["_2"],
                "lines": lines,
                "engine": answer.engine,
                "seconds": round(cli, 3),
                "api_seconds": round(api, 3),
            }
        )
    return found


def main(args: argparse.Namespace) -> int:
    from ..local import local_session

    if args.repeat < 1:
        raise InvalidArgument("--repeat must be at least 1")
    size = parse_size(args.size)
    workloads = [w.strip() for w in (args.queries or ",".join(WORKLOADS)).split(",") if w.strip()]
    spark = local_session("sparkprov-bench-titian", shuffle_partitions=8, driver_memory="6g")
    try:
        report = run(spark, size, workloads, args.repeat, os.path.expanduser(args.data))
    finally:
        spark.stop()
    print(f"\nTitian workloads, {args.size} of text, {args.repeat} interleaved pairs (traced time / plain time)")
    for r in report["workloads"]:
        print(
            f"  {r['workload']:<10} median ratio {r['median_ratio']:.2f}   plain median "
            f"{statistics.median(r['plain_s']):.2f}s   lineage/input bytes {r['storage_ratio']}   "
            f"{r['output_rows']} records"
        )
        for t in r.get("backward_trace", []):
            print(
                f"    backward of {t['word']!r} ({t['count']}): {t['lines']} lines; sparkprov trace "
                f"{t['seconds']:.3f}s ({t['engine']}), backward().count() {t['api_seconds']:.3f}s"
            )
    print(f"  median {report['median_ratio']}, max {report['max_ratio']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0
