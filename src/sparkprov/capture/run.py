"""Running a capture: rewrite, execute once, store output and lineage, commit.

>>> from sparkprov.capture.run import storage_names
>>> storage_names(["id", "ID", "total"])
['_c0_id', '_c1_ID', '_c2_total']
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import nullcontext, suppress
from dataclasses import replace
from functools import cache, partial
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import InvalidArgument, SparkprovError
from ..functions.tracer import declaration_error
from ..plan.catalyst import Bridge
from ..plan.observed import WatchedJobs
from ..plan.replies import quick_replies
from ..plan.small_writes import write_parquet
from ..plan.written import read_written
from ..sources.identity import RID, NamedLeaf
from ..store import joined_pairs
from ..store.catalog import Store
from ..store.format import resolvable_by_joins
from ..store.layout import CaptureFolders
from . import blackbox, later
from .context import CaptureContext
from .features import entry_features
from .function_keep import FunctionKeep
from .lineage import (
    OUT,
    flattened_here,
    slots_json,
    source_pairs,
)
from .output_write import Write, beside, stored_output_schema, write_for_user
from .shapes import PRUNED
from .snapshots import kept_copy
from .strategy import inject_settings
from .workload import Workload, check_partition_column
from .writing import (
    checking_sets,
    describe_sides,
    in_output_slots,
    joins_resolve,
    lineage_settings,
    names_rows,
    side_graph,
    store_lineage,
    unique_pairs,
    write_shared,
    write_side_rows,
    write_sides,
)

log = logging.getLogger("sparkprov")


def storage_names(columns: list[str]) -> list[str]:
    """Column names safe for Parquet: the user's, unless two collide (case-insensitively)."""
    lowered = [c.lower() for c in columns]
    if len(set(lowered)) == len(lowered) and all(c and not c.startswith("__sp_") and c != RID for c in columns):
        return list(columns)
    return [f"_c{i}_{c}" for i, c in enumerate(columns)]


def run_capture(
    bridge: Bridge,
    store: Store,
    df: DataFrame,
    name: str,
    named: list[NamedLeaf],
    by_occurrence: bool = False,
    write: Write | None = None,
    leaves: dict | None = None,
    witnesses: bool = False,
    strategy: str = "auto",
    workload: Workload | None = None,
    read_elsewhere: frozenset[str] | None = frozenset(),
    function_keep: FunctionKeep | None = None,
) -> dict:
    """Capture ``df`` into ``store`` under ``name``; returns the committed catalog entry.

    ``leaves``, if given, receives ``{source name: (leaf_key, analyzed leaf)}``: how to
    find each source in a plan again (for replay).

    ``by_occurrence`` makes every occurrence of a source in the plan a source of its
    own (for the per-occurrence re-execution check). ``write`` also writes the output
    rows as the user's Parquet files or table; their rids as a source of a later
    capture are then the output's ``_sp_rid``, so traces continue across captures.
    ``witnesses`` also keeps the side relations, the structure why and how
    provenance are read from (``query/provenance.py``). ``strategy`` is how grouping
    operators keep their groups (``rewrite.STRATEGIES``); witnesses need side
    relations, so they make every aggregate keep one (``logical``, its witnesses
    collected in its own state where ``strategy`` would inject). ``workload`` limits the
    sources that keep lineage, and with ``where`` the rows of a source that do;
    ``read_elsewhere`` names the sources other parts of the capture read (its marks),
    which the workload may name too (None: the caller checks the names).
    ``function_keep`` chooses how declared functions keep payloads (capture/function_keep.py).
    """
    if write is not None and write.path is not None and store.holds(write.path):
        write = replace(write, owned=True)
    started = time.time()
    quick_replies(bridge.spark)  # the replies of threads that joined since the last capture too
    capture_id, data = store.new_data_dir()
    try:
        entry = _capture_into(
            bridge,
            df,
            name,
            named,
            capture_id,
            data,
            by_occurrence,
            write,
            leaves,
            witnesses,
            strategy,
            workload,
            read_elsewhere,
            function_keep,
            # read only if a source needs a snapshot: most captures read Parquet alone
            cache(partial(_earlier_snapshots, store, name)),
        )
    except BaseException as e:
        store.discard(capture_id)
        wrong = declaration_error(e)
        if wrong is not None:  # a declared function's lineage does not hold: say so, not Spark's trace
            raise wrong from e
        raise
    entry["seconds"] = round(time.time() - started, 3)
    entry["strategy"] = strategy
    entry = store.commit(name, entry)
    log.info("sparkprov: captured %r version %d in %.1fs", name, entry.version, entry.seconds)
    return entry


def _earlier_snapshots(store: Store, name: str) -> dict:
    """The snapshots the newest capture of ``name`` keeps, by key, for this one to link
    (``capture/snapshots.py``): none from a damaged or failed one."""
    found = {}
    try:
        versions = store.versions(name)
        entry = store.read_entry(name, versions[-1]) if versions else None
        for info in entry.sources.values() if entry is not None else ():
            if info.kind == "snapshot" and isinstance(info.key, str) and info.key:
                copy = kept_copy(info.files)
                if copy is not None:
                    found[info.key] = copy
    except (SparkprovError, TypeError, ValueError):  # a damaged entry: this capture writes its own copies
        return {}
    return found


def rewritten(
    bridge: Bridge, df: DataFrame, snapshot_dir: str, named=(), by_occurrence: bool = False, restrict=None
) -> tuple[DataFrame, CaptureContext]:
    """``df`` with capture: the user's columns followed by the slot columns.

    ``restrict`` (with ``by_occurrence``) limits occurrence ``i`` of a source to the
    rows of ``restrict[i]`` (by ``_sp_rid``): the query re-run on traced rows only.
    """
    rewriter = CaptureContext(bridge, snapshot_dir, list(named), by_occurrence=by_occurrence, restrict=restrict)
    return _rewrite(bridge, df, rewriter), rewriter


def _rewrite(bridge: Bridge, df: DataFrame, rewriter: CaptureContext) -> DataFrame:
    result = rewriter.rewrite_root(bridge.inline_ctes(bridge.analyzed(df)))
    return bridge.checked_dataframe(result.plan)


def _capture_into(
    bridge,
    df,
    name,
    named,
    capture_id,
    data: Path,
    by_occurrence: bool,
    write,
    leaves,
    witnesses: bool,
    strategy,
    workload,
    read_elsewhere: frozenset[str] | None,
    function_keep: FunctionKeep | None = None,
    earlier_snapshots: Callable[[], dict] | None = None,
) -> dict:
    rewriter = CaptureContext(
        bridge,
        snapshot_dir=str(CaptureFolders(data).snapshots),
        earlier_snapshots=earlier_snapshots or dict,
        named=list(named),
        by_occurrence=by_occurrence,
        strategy="logical" if witnesses else strategy,
        witnesses=witnesses,
        witness_strategy=strategy if witnesses else "",
        keep=frozenset(workload.sources) if workload else None,
        where=dict(workload.where) if workload else {},
        read_elsewhere=read_elsewhere,
        # files written for the user are sorted as the query says; the store's own
        # output keeps its order for when it is read
        order_when_read=write is None,
        function_keep=function_keep,
    )
    group_by = workload.group_by if workload else {}
    partition_by = workload.partition_by if workload else {}

    def check_columns() -> None:  # the sources' columns are known once the plan is read
        for use in rewriter.sources:
            name = use.info.name
            if use.info.kind != PRUNED and (name in group_by or name in partition_by):
                rows = bridge.to_dataframe(use.leaf)
                if name in group_by:
                    group_by[name].check(rows, name)
                if name in partition_by:
                    check_partition_column(rows, name, partition_by[name])

    try:
        if strategy == "lazy" and not witnesses:  # the query as it is; lineage when first needed
            entry = _run_plain(bridge, name, capture_id, data, df, rewriter, write, check_columns)
            later.remember(capture_id, later.Pending(bridge, df, rewriter))
        else:
            out = _rewrite(bridge, df, rewriter)
            check_columns()
            # with witnesses, defer leaves the pair table to be made from them when first needed
            pairs_later = witnesses and strategy == "defer"
            entry = _run_rewritten(bridge, name, capture_id, data, out, rewriter, write, witnesses, pairs_later)
            if rewriter.blackbox:  # their exact lineage is found when asked, by running the query again
                blackbox.remember(capture_id, later.Pending(bridge, df, rewriter))
        # the tables are built once committed (query/drill_down.py, query/partitioned.py),
        # by the part of a marked capture that reads the source
        read = {use.info.name for use in rewriter.sources if use.info.kind != PRUNED}
        if group_by.keys() & read:
            entry["workload"]["group_by"] = {k: v.to_json() for k, v in group_by.items() if k in read}
        if partition_by.keys() & read:
            entry["workload"]["partition_by"] = {k: v for k, v in partition_by.items() if k in read}
        if leaves is not None:
            leaves.update({use.info.name: (use.key, use.leaf) for use in rewriter.sources})
        return entry
    finally:
        for kept in rewriter.checkpoints:
            kept.unpersist()


def _run_rewritten(
    bridge,
    name,
    capture_id,
    data,
    out,
    rewriter,
    write: Write | None = None,
    witnesses: bool = False,
    pairs_later: bool = False,
) -> dict:
    slots = rewriter.root.slots
    slot_names = [s.name for s in slots]
    spark = bridge.spark
    folders = CaptureFolders(data)
    lineage_path = str(folders.lineage)
    shared_path, structure, in_output, deferred = None, None, None, {}
    in_rows = bool(slots) and not witnesses and names_rows(rewriter)
    # the output's slot columns are the whole lineage (with a scalar subquery's, stored
    # once, from the row kept before the query ran): no pair table until one is needed
    referenced = {s.ref for s in slots if rewriter.refers_to_shared(s)} if in_rows else set()
    log.info("sparkprov: running %r with capture", name)
    # the jobs that run the query: whether they ran once says if side rows they gathered hold
    jobs = WatchedJobs(spark)
    started = time.perf_counter()
    pool = beside()
    shared, sides = None, None
    try:
        # the subqueries' lineage is read from their kept rows while the query runs: a
        # small job and driver work the query's tasks need not wait for. Not a window's
        # sets: its rows are kept only once the query has computed them, and read before
        # that they were computed again beside it (TPC-DS q12 at SF 1: 1.1 s)
        if referenced:
            shared_path = str(folders.shared)
            graph = side_graph(bridge, rewriter, folders.work)
            if not any(rewriter.has_sets(s) for s in slots):
                shared = pool.submit(write_shared, spark, graph, referenced, shared_path)
        elif pairs_later:
            # why and how read the side relations alone; the pair table is made from them in
            # the process that first needs it (query/provenance.py), without Spark. Those
            # the query's job does not gather are written while the output is: on small
            # data most of a write's time is the driver's (planning, committing files),
            # which the other write overlaps.
            graph = side_graph(bridge, rewriter, folders.work, jobs)
            structure, paths = describe_sides(graph, slots, data / "sides")
            now = {k: p for k, p in paths.items() if rewriter.sides[k].observed is None}
            sides = pool.submit(write_side_rows, graph, now)
        # watched (a job tag set and read back) only when some side is gathered by them
        watched = jobs if any(s.observed is not None for s in rewriter.sides) else nullcontext()
        with watched, bridge.settings(inject_settings(bridge, bool(rewriter.hashed_groups))):
            output_path, display, staged, written = _write_output(bridge, out, len(slot_names), data, write)
        output_done = time.perf_counter()
        if referenced:
            if shared is None:  # a window's sets, read from the rows the query kept
                write_shared(spark, graph, referenced, shared_path)
            else:
                shared.result()
            shutil.rmtree(folders.work, ignore_errors=True)
        if sides is not None:
            sides.result()
            write_side_rows(graph, {k: p for k, p in paths.items() if k not in now})
    finally:  # nothing of this capture left running when it ends, whether or not it failed
        wait([f for f in (shared, sides) if f is not None])
    if in_rows:
        in_output = {"slots": slots_json(in_output_slots(rewriter)), "unique": unique_pairs(rewriter)}
    elif rewriter.strategy == "defer" and not witnesses:
        # the capture returns now; the slots are resolved in the background
        shared_path, deferred = str(folders.shared), {"later": "defer"}
        kept, rewriter.checkpoints = rewriter.checkpoints, []  # read by the side relations: released after

        def resolve() -> None:
            try:
                _resolve(bridge, rewriter, output_path, lineage_path, False, data)
            finally:
                for df in kept:
                    df.unpersist()

        later.run_later(capture_id, name, resolve)
    elif pairs_later:
        shutil.rmtree(folders.work, ignore_errors=True)
        shared_path, deferred = None, {"later": "witnesses"}
    else:
        shared_path, structure, left = _resolve(bridge, rewriter, output_path, lineage_path, witnesses, data, jobs)
        if left:  # to the witnesses: the pairs are made from them by the first answer that needs them
            deferred = {"later": "witnesses"}
    # what dominates a capture's cost: the query with slots, or resolving them into pairs
    timings = {"output_s": round(output_done - started, 3), "lineage_s": round(time.perf_counter() - output_done, 3)}
    lineage = {"path": lineage_path, "shared": shared_path, **({"in_output": in_output} if in_output else deferred)}
    # a deferred capture's windows may yet keep blocks: its entry commits first
    blocked = None if deferred.get("later") == "defer" else bool(rewriter.blocked)
    features = entry_features(rewriter.sides, rewriter.operators, blocked)
    return _entry(
        bridge, capture_id, rewriter, output_path, display, staged, lineage, written, timings, structure, features
    )


def _run_plain(
    bridge, name, capture_id, data: Path, df: DataFrame, rewriter: CaptureContext, write, check_more: Callable[[], None]
) -> dict:
    """A lazy capture: the user's query run as it is, its output stored with rids, while
    ``CaptureContext.check_lazy`` (then ``check_more``) checks it and registers its sources."""
    log.info("sparkprov: running %r (lazy capture: lineage on first use)", name)
    plan = bridge.inline_ctes(bridge.analyzed(df))
    started = time.perf_counter()
    checked = []  # its seconds: what a lazy capture adds to the query (docs/benchmarks.md)

    def check() -> None:
        began = time.perf_counter()
        with bridge.remembering():
            rewriter.optimize_lazy(plan)
            rewriter.check_lazy()
        check_more()
        checked.append(time.perf_counter() - began)

    if write is None:
        # the check is driver work (py4j round trips) the query's tasks need not wait for
        output = lambda: _write_output(bridge, df, 0, data, None)  # noqa: E731
        result = _while_checking(bridge.spark, output, check, wait_for_job=not bridge.optimizes_apart())
    else:  # nothing is written where the user asked for a query that could be refused
        check()
        result = _write_output(bridge, df, 0, data, write)
    output_path, display, staged, written = result
    timings = {"output_s": round(time.perf_counter() - started, 3), "lineage_s": 0.0, "check_s": round(checked[0], 3)}
    # where the built lineage will be; "later" says it may not be there yet
    folders = CaptureFolders(data)
    lineage = {"path": str(folders.lineage), "shared": str(folders.shared), "later": "lazy"}
    features = entry_features([], rewriter.operators, None, lazy=True)
    return _entry(bridge, capture_id, rewriter, output_path, display, staged, lineage, written, timings, None, features)


def _workload(rewriter: CaptureContext) -> dict:
    """The catalog entry's ``workload``: the sources kept, and those read without lineage."""
    if rewriter.keep is None:
        return {}
    pruned = [u.info.name for u in rewriter.sources if u.info.kind == PRUNED]
    kept = {"sources": sorted(rewriter.keep), "pruned": pruned}
    if rewriter.where:  # query/: a backward answer says it is restricted, a forward trace is refused
        kept["where"] = dict(rewriter.where)
    return {"workload": kept}


def _while_checking(spark, job: Callable, check: Callable[[], None], wait_for_job: bool = False):
    """``job()``'s result; it runs (Spark jobs) in a thread while ``check()`` runs here.
    If the check raises, the job's Spark jobs are cancelled and the check's error raised.

    The check starts at once: while the job's query is planned (one core of the
    driver), the other core is free for it. With ``wait_for_job`` it starts once the
    job's first Spark job has, when the query is planned: for a check that changes
    session settings for a moment (``Bridge.optimized`` without its helper), which the
    planning of the query must not see. (Adaptive execution plans again between
    stages, but with its own optimizer rules, which those settings do not touch.)
    """
    group = f"sparkprov-{uuid.uuid4().hex}"
    sc = spark.sparkContext

    def run():
        sc.setJobGroup(group, "sparkprov: a lazy capture's output", interruptOnCancel=True)
        try:
            return job()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sparkprov-output") as pool:
        done = pool.submit(run)
        if wait_for_job:
            tracker = sc.statusTracker()
            # each look is a JVM round trip competing with the query's planning for the
            # driver; the check need only finish before the job does
            while not done.done() and not tracker.getJobIdsForGroup(group):
                time.sleep(0.01)
        try:
            check()
        except BaseException:
            # a job not yet started is not cancelled: cancel until the query stops
            while not done.done():
                sc.cancelJobGroup(group)
                wait([done], timeout=0.05)
            done.exception()  # the check's error is the one to report
            raise
        return done.result()


def _write_output(bridge, out: DataFrame, slot_count: int, data: Path, write: Write | None):
    """Write ``out`` (the user's columns, then ``slot_count`` slots) as the capture's
    output, with rids; returns (path, the user's column names, the staged frame, what
    was written for the user)."""
    display = out.columns[: len(out.columns) - slot_count]
    if RID in display:
        raise InvalidArgument(f"the query's output has a column named {RID}, which sparkprov reserves; rename it")
    output_path = str(data / "output")
    stored = storage_names(display)
    # renaming makes a new Dataset, analyzed again (milliseconds): only when names change
    staged = out if stored == display else out.toDF(*stored, *out.columns[len(display) :])
    written = None
    if write is None:
        write_parquet(staged.withColumn(RID, F.monotonically_increasing_id()), output_path)
    else:
        written = write_for_user(bridge, staged, display, write, output_path)
    return output_path, display, staged, written


def _entry(
    bridge, capture_id, rewriter, output_path, display, staged, lineage, written, timings, witnesses=None, features=()
) -> dict:
    return {
        "id": capture_id,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spark_version": bridge.spark.version,
        "plan": bridge.tree_string(rewriter.optimized),
        "output": {
            "path": output_path,
            "columns": display,
            "stored": storage_names(display),
            "schema": stored_output_schema(staged).json(),
            **({"order": [list(key) for key in rewriter.order]} if rewriter.order else {}),
        },
        "sources": {use.info.name: use.info.to_json() for use in rewriter.sources if use.info.kind != PRUNED},
        "lineage": {
            **lineage,
            "sources": {u.info.name: i for i, u in enumerate(rewriter.sources) if u.info.kind != PRUNED},
        },
        **_workload(rewriter),
        "operators": sorted(rewriter.operators),
        "explain": [line.to_json() for line in rewriter.report],
        "written": written,
        "witnesses": witnesses,
        **({"blackbox": sorted(set(rewriter.blackbox))} if rewriter.blackbox else {}),
        "timings": timings,
        **({"features": list(features)} if features else {}),
    }


def _resolve(
    bridge, rewriter, output_path: str, lineage_path: str, witnesses: bool, data: Path, jobs: WatchedJobs | None = None
):
    """Resolve the output's slots into the pair table (and shared lineage, and with
    ``witnesses`` the side relations); returns (shared lineage path, witnesses,
    whether the pair table is left to them). With witnesses that joins resolve
    (``store.format.resolvable_by_joins``) only those are written.
    ``jobs``: those that ran the query (side rows they gathered are written as they are)."""
    slots = rewriter.root.slots
    spark = bridge.spark
    work = data / "work"
    graph = side_graph(bridge, rewriter, work, jobs)
    # Pair tables can be much larger than the query's own shuffles (an output row
    # times its inputs): more, smaller partitions to start with keep each task's
    # distinct within memory, and adaptive execution merges the small ones again.
    shared = any(s.shared for s in rewriter.sides)
    with lineage_settings(bridge):
        structure = None
        if witnesses:
            # kept first: the pairs then read each side's rows from its files, not by
            # running its input again
            structure = write_sides(graph, slots, data / "sides", read_written(spark, output_path))
            if resolvable_by_joins(structure) and not shared:
                # the pair table is then made from them when first needed, in the
                # process that asks, by joins in DuckDB (store/joined_pairs.py): a
                # capture without witnesses also leaves its pairs to the first answer.
                # Not with a shared side (a scalar subquery's row): its lineage is
                # kept once, not in the pairs of every row (TPC-H Q11 at SF 1: 33.6M
                # pairs for 1,048 rows)
                shutil.rmtree(work, ignore_errors=True)
                return None, structure, True
        in_files = structure  # the sides whose rows are in files
        if any(s.ranged for s in rewriter.sides) and joins_resolve(graph, slots, shared=True):
            # A window's ranges flattened by joins in DuckDB over its side's rows, here:
            # Spark's joins, distinct and write of the pairs took 44 s for the
            # pipelines suite's running totals at 1M orders (9.5M pairs). The sets of
            # its shared sides (a window over whole partitions beside it) too, those the
            # output refers to, each kept once: on small data, Spark's jobs resolving
            # and checking them took most of a capture (a 60-row query's three windows:
            # 25 jobs and 3.6 s, against 0.6 s for the query)
            paths = {}  # the sides' rows to write (none where witnesses hold them)
            if in_files is None:
                in_files, paths = describe_sides(graph, slots, work / "sides")
            reached = any(side.get("shared") for side in in_files["sides"].values())
            sets = data / "shared" if reached else None
            # the check's jobs beside the sides' writes and the joins: it must pass
            # before the sets are stored
            checked = checking_sets(graph) if reached else None
            try:
                write_side_rows(graph, paths)
                accept = flattened_here(graph)
                if joined_pairs.publish(Path(lineage_path), output_path, in_files, accept, sets, checked):
                    shutil.rmtree(work, ignore_errors=True)
                    return (str(sets) if sets is not None else None), structure, False
            finally:
                if checked is not None:
                    # nothing left running; a clash was raised by publish, or is raised by
                    # the check of Spark's path below (where the joins declined)
                    with suppress(Exception):
                        checked()
        if in_files is not None:
            written = {int(k): side["path"] for k, side in in_files["sides"].items()}
            run = graph.relation
            graph = replace(graph, relation=lambda k: read_written(spark, written[k]) if k in written else run(k))
        rows = read_written(spark, output_path).select(F.col(RID).alias(OUT), *[s.name for s in slots])
        pairs = source_pairs(rows, slots, graph)
        distinct = not unique_pairs(rewriter)
        shared_path = store_lineage(spark, pairs, graph, Path(lineage_path), data / "shared", distinct)
    shutil.rmtree(work, ignore_errors=True)
    return shared_path, structure, False
