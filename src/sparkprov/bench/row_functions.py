"""What declaring a Python function's lineage costs a capture, and what it buys:
``sparkprov bench functions --suite rows``.

Five functions of the kinds PySpark pipelines use, over a generated table of
``rows`` rows (Parquet): a model's scores per row (``mapInPandas``, declared
``rowwise``), the two largest values per group (``applyInPandas``, declared ``full``),
a normalisation per batch written as Arrow (``mapInArrow``, declared ``map`` with
every output row from its own input row), outliers replaced by their neighbours'
mean (``mapInPandas``, declared ``composite``: a row from its own input row, an
outlier from its two neighbours, named in a payload), and rolling means per group
(``applyInPandas``, declared ``payload``: a row from the ``WINDOW`` rows up to it, the
first named in a payload; also with its payloads kept, ``keep="payload"``). Each runs plain (its result written to
Parquet), captured undeclared (coarse: whole groups or partitions) and captured
declared, interleaved, in one Spark session (the grouped function also declared
``blackbox``: stored per group, found when asked; the batch functions also declared
vectorized); reported: the median capture/plain
ratios, the rows one output row's backward trace returns in each case and how long
that trace takes. An undeclared
partition function's capture is attempted only where its coarse lineage (every row of
the partition behind every output row) stays below ``COARSE_PAIRS_MAX`` pairs.

>>> sorted(FUNCTIONS)
['cleaned batches', 'group rolling means', 'group top two', 'row scores', 'shifted batches']
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import sparkprov as sp

from ..errors import InvalidArgument
from ..functions.declare import declaration_of
from .capture import stored_lineage_bytes


@sp.lineage("rowwise")
def scores(batches):
    for pdf in batches:
        yield pdf.assign(x=pdf.x * 0.7 + 0.1 * (pdf.g % 7))


def top_two_plain(pdf):
    best = pdf.nlargest(2, "x")
    return best.head(1)[["g"]].assign(x=best.x.sum())


@sp.lineage("full", column="inputs")
def top_two(pdf):
    return top_two_plain(pdf).assign(inputs=[list(pdf.nlargest(2, "x").index)])


# the same function, its lineage found when asked (stored per group at capture)
top_two_blackbox = sp.lineage("blackbox", column="inputs")(declaration_of(top_two).function)


@sp.lineage("map", backward=lambda i, meta: [i])
def shifted(batches):
    import pyarrow.compute as pc

    for batch in batches:
        yield batch.set_column(2, "x", pc.subtract(batch.column("x"), pc.min(batch.column("x"))))


# the same function, its mapping called once per batch with every row's position
shifted_vectorized = sp.lineage("map", backward=lambda rows, meta: rows, vectorized=True)(
    declaration_of(shifted).function
)


def _cleaned(pdf):
    # outliers (x below 0.01, about one row in a hundred) replaced by the mean of their
    # neighbours in the batch; with the positions of those neighbours, None elsewhere
    import numpy as np

    x = pdf.x.to_numpy()
    at = np.arange(len(x))
    before, after = np.maximum(at - 1, 0), np.minimum(at + 1, len(x) - 1)
    outlier = x < 0.01
    positions = pdf.index.to_numpy()  # sp.lineage's positions (a plain run: the batch's own numbering)
    near = np.full(len(x), None, object)
    for i in np.nonzero(outlier)[0]:  # one object per row (a list assigned through a mask would be spread)
        near[i] = [int(positions[before[i]]), int(positions[after[i]])]
    return pdf.assign(x=np.where(outlier, (x[before] + x[after]) / 2, x)), near


def cleaned_plain(batches):
    for pdf in batches:
        yield _cleaned(pdf)[0]


@sp.lineage("composite", column="near", backward=lambda i, meta: [i], map_p=lambda i, near, meta: near)
def cleaned(batches):
    for pdf in batches:
        out, near = _cleaned(pdf)
        yield out.assign(near=near)


# the same function, its mapping and map_p called once per batch (SubZero's cosmic-ray removal, vectorized)
cleaned_vectorized = sp.lineage(
    "composite", column="near", backward=lambda rows, meta: rows, map_p=lambda rows, near, meta: near, vectorized=True
)(declaration_of(cleaned).function)


WINDOW = 20  # rolling means: each output row from the 20 rows up to it


def _rolling(pdf):
    # the mean of x over each row and the rows before it in the group (WINDOW in all),
    # in the order the group's rows came; lo: the first of them (a payload)
    import numpy as np

    at = np.arange(len(pdf))
    return pdf.assign(x=pdf.x.rolling(WINDOW, min_periods=1).mean()), np.maximum(at - WINDOW + 1, 0)


def rolling_plain(pdf):
    return _rolling(pdf)[0]


def _window_of(i, lo, meta):
    return range(lo, i + 1)


@sp.lineage("payload", column="lo", map_p=_window_of)
def rolling(pdf):
    out, lo = _rolling(pdf)
    return out.assign(lo=lo)


# the same function, its payloads kept and map_p run when a trace asks (SubZero's PayOne)
rolling_kept = sp.lineage("payload", column="lo", map_p=_window_of, keep="payload")(declaration_of(rolling).function)


SCHEMA = "id long, g long, x double"
# (the query, the declared function, the same function undeclared: a full declaration's
# reported column is dropped by sp.lineage, so its undeclared form must not make it)
FUNCTIONS = {
    "row scores": (lambda df, f: df.mapInPandas(f, SCHEMA), scores, declaration_of(scores).function),
    "group top two": (lambda df, f: df.groupBy("g").applyInPandas(f, "g long, x double"), top_two, top_two_plain),
    "shifted batches": (lambda df, f: df.mapInArrow(f, SCHEMA), shifted, declaration_of(shifted).function),
    "cleaned batches": (lambda df, f: df.mapInPandas(f, SCHEMA), cleaned, cleaned_plain),
    "group rolling means": (lambda df, f: df.groupBy("g").applyInPandas(f, SCHEMA), rolling, rolling_plain),
}


# the same functions declared otherwise, measured beside the declared one
ALSO = {
    "group top two": {"blackbox": top_two_blackbox},
    "shifted batches": {"vectorized": shifted_vectorized},
    "cleaned batches": {"vectorized": cleaned_vectorized},
    "group rolling means": {"kept payloads": rolling_kept},
}


# an undeclared partition function's lineage is every row of its input partition for
# every output row: above this many pairs its capture is not attempted (at 1M rows in two
# partitions it would be 5 × 10^11 pairs)
COARSE_PAIRS_MAX = 50_000_000


def _coarse_pairs(table, name: str) -> int:
    """The pairs undeclared capture would store: rows² / partitions for a partition
    function; for the grouped top two (one output row per group) each row once; for the
    rolling means (a row per input row) each row once per row of its group."""
    rows = table.count()
    if name == "group top two":
        return rows
    if name == "group rolling means":
        return rows * rows // table.select("g").distinct().count()
    return rows * rows // max(table.rdd.getNumPartitions(), 1)


def _measure(session, table, work: Path, name: str, repeat: int) -> dict:
    """One function plain, captured undeclared and captured declared, interleaved
    (undeclared only where its coarse lineage is of a size a capture can keep)."""
    build, declared, undeclared = FUNCTIONS[name]
    coarse = _coarse_pairs(table, name)
    functions = {"plain": undeclared, "declared": declared}
    if coarse <= COARSE_PAIRS_MAX:
        functions["undeclared"] = undeclared
    functions.update(ALSO.get(name, {}))
    times: dict[str, list[float]] = {k: [] for k in functions}
    caps = {}

    def once(kind: str, i: int) -> None:
        started = time.perf_counter()
        query = build(table, functions[kind])
        if kind == "plain":
            query.write.parquet(str(work / f"plain-{name}-{i}"))
        else:
            caps[kind] = session.capture(query, f"{name}-{kind}".replace(" ", "_"))
        if i >= 0:
            times[kind].append(time.perf_counter() - started)

    kinds = list(functions)
    for kind in kinds:
        once(kind, -1)  # warm-up
    for i in range(repeat):
        for kind in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
            once(kind, i)
    plain = statistics.median(times["plain"])
    ratios = {k: round(statistics.median(times[k]) / plain, 2) for k in times if k != "plain"}
    backward = {}
    for kind, cap in caps.items():  # one output row's trace (the blackbox one runs the query again)
        seconds = []
        for _ in range(max(repeat, 1)):
            started = time.perf_counter()
            cap.backward([0], "table").count()
            seconds.append(time.perf_counter() - started)
        backward[kind] = round(statistics.median(seconds), 3)
    return {
        "function": name,
        "plain_s": round(plain, 3),
        "undeclared_ratio": ratios.get("undeclared"),  # None: not attempted (coarse_pairs)
        "declared_ratio": ratios["declared"],
        "blackbox_ratio": ratios.get("blackbox"),
        "vectorized_ratio": ratios.get("vectorized"),
        "kept_payloads_ratio": ratios.get("kept payloads"),
        "backward_s": backward,
        "coarse_pairs": coarse,
        "rows_behind_one_output_row": {k: cap.backward([0], "table").count() for k, cap in caps.items()},
        "lineage_bytes": {k: stored_lineage_bytes(cap._entry) for k, cap in caps.items()},
    }


# sp.choose_keep on the rolling means over a sample of the table: the budgets it is given
# (None: none; a fraction: of the bytes every function keeping pairs stores)
KEEP_BUDGETS = (None, 0.5)
KEEP_SAMPLE_GROUPS = 100  # of the table's 1,000


def choose_keeps(session, table, repeat: int, ids: tuple[int, ...] = (12, 45_050, 99_001)) -> list[dict]:
    """``sp.choose_keep`` for the rolling means declared with pairs kept, over the
    sample's groups, with a workload of three output rows traced back and one source row
    forward (``ids``: rows of the sample, whose ``id % 1000`` is below
    ``KEEP_SAMPLE_GROUPS``); under no budget, then under a disk budget of half what
    pairs store."""
    from ..tuning.keep import Trace, choose_keep

    build, declared, _ = FUNCTIONS["group rolling means"]
    query = build(table.where(f"g < {KEEP_SAMPLE_GROUPS}"), declared)
    workload = [Trace("backward", f"id = {i}", "table") for i in ids] + [Trace("forward", f"id = {ids[1]}", "table")]
    found, pairs = [], None
    for share in KEEP_BUDGETS:
        max_disk = None if share is None else share * pairs
        plan = choose_keep(session, query, workload, max_disk=max_disk, repeat=repeat)
        pairs = plan.base.bytes
        found.append(
            {
                "max_disk": max_disk,
                "keep": plan.keep,
                "base": vars(plan.base),
                "deltas": {k: vars(v) for k, v in plan.deltas.items()},
                "predicted": vars(plan.predicted),
                "measured": vars(plan.measured),
                "explain": plan.explain(),
            }
        )
        print(plan.explain(), flush=True)
    return found


def main(args) -> dict:
    from pyspark.sql import functions as F

    from ..local import local_session

    names = [n.strip() for n in args.functions.split(",") if n.strip()] if getattr(args, "functions", "") else []
    unknown = [n for n in names if n not in FUNCTIONS]
    if unknown:
        raise InvalidArgument(f"unknown function {unknown[0]!r}; functions: {', '.join(FUNCTIONS)}")
    names = names or list(FUNCTIONS)
    spark = local_session("sparkprov-bench-row-functions", shuffle_partitions=4, driver_memory="4g")
    work = Path(tempfile.mkdtemp(prefix="sparkprov-bench-rows-"))
    try:
        data = str(work / "table")
        spark.range(args.rows).select("id", (F.col("id") % 1000).alias("g"), F.rand(1).alias("x")).write.parquet(data)
        session = sp.LineageSession(spark, store=work / "store")
        table = session.source(spark.read.parquet(data), "table")
        results = []
        for name in names:
            r = _measure(session, table, work, name, args.repeat)
            results.append(r)
            traced = r["rows_behind_one_output_row"]
            if r["undeclared_ratio"] is None:
                undeclared = f"undeclared not attempted ({r['coarse_pairs']:,} pairs)"
            else:
                undeclared = f"undeclared {r['undeclared_ratio']:.2f}x ({traced['undeclared']:,} rows behind a row)"
            print(
                f"{name:<16} plain {r['plain_s']:.2f}s  captured {undeclared}, declared {r['declared_ratio']:.2f}x "
                f"({traced['declared']:,} rows behind a row)",
                flush=True,
            )
            if r["blackbox_ratio"] is not None:
                print(
                    f"{'':<16} blackbox {r['blackbox_ratio']:.2f}x ({traced['blackbox']:,} rows behind a row); "
                    f"one row's backward: declared {r['backward_s']['declared']:.3f}s, "
                    f"blackbox {r['backward_s']['blackbox']:.3f}s",
                    flush=True,
                )
            if r["vectorized_ratio"] is not None:
                print(f"{'':<16} declared vectorized {r['vectorized_ratio']:.2f}x "
                      f"({traced['vectorized']:,} rows behind a row)", flush=True)  # fmt: skip
            if r["kept_payloads_ratio"] is not None:
                sizes = r["lineage_bytes"]
                print(
                    f"{'':<16} payloads kept {r['kept_payloads_ratio']:.2f}x, {sizes['kept payloads']:,} bytes "
                    f"(declared: {sizes['declared']:,}); one row's backward {r['backward_s']['kept payloads']:.3f}s "
                    f"(declared: {r['backward_s']['declared']:.3f}s)",
                    flush=True,
                )
        report = {"suite": "rows", "rows": args.rows, "repeat": args.repeat, "functions": results}
        if getattr(args, "choose_keep", False):
            report["choose_keep"] = choose_keeps(session, table, args.repeat)
        return report
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
