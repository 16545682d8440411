"""Building the store's lineage graph on Spark: the triples of every capture and import
numbered (datasets and ops by name on the driver, nodes by Spark), their weakly
connected components, and the files queries read, written as one build folder that
``CURRENT`` then names (a build that stops halfway is never read).

A build folder holds:
- ``nodes/``: ``node, ds, rid, component, cset``, sorted by ``(ds, rid)`` in small row groups
  (a row's node is found from the statistics, reading little);
- ``by_dst/bucket=k/``: the triples whose ``dst`` is ``k`` modulo the bucket count,
  sorted by ``dst`` (the recursive query reads a hop's buckets only);
- ``by_component/bucket=k/``: the triples whose component is ``k`` modulo the bucket
  count, sorted by component (CCProv reads one component's rows from one bucket);
- ``by_set/bucket=k/``: the triples with their component and their ends' connected
  sets, by component modulo the bucket count, sorted by component then ``dst_set``
  (CSProv reads the row groups of its component's block that hold the sets its row's
  lineage passes through: a component's sets are together, whatever their numbers);
- ``set_dependencies/``: ``src_set, dst_set``, every pair of sets a triple joins;
- ``components/``: ``component, nodes, edges, sets``;
- ``sets/``: ``cset, nodes``;
- ``meta.json``: the datasets and ops by number, which dataset feeds which, the captures
  and imports read, the largest node number, sizes and timings; ``layers``, the build
  folders a query reads (this one alone; an update, ``update.py``, adds one on top).
Triples carry their ends' ``ds`` and ``rid`` as well as their node numbers, so an
answer names its rows without another lookup.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..capture.writing import materializer
from ..errors import InvalidArgument
from ..plan.written import read_written
from ..store.catalog import Store
from ..store.files import write_atomic
from ..store.layout import GraphFolders, StoreFolders
from .build_here import layouts, small_triples
from .components import connected
from .sets import SPLIT_DEPTH, THRESHOLD, large_components, set_labels, splits
from .triples import NAMED, committed, from_captures

__all__ = ["BUCKETS", "SPLIT_DEPTH", "THRESHOLD", "build", "current_build", "imported_folders"]

BUCKETS = 16  # files per query layout; a query reads one bucket (CCProv) or a hop's
_ROW_GROUP = str(1 << 20)


class Laps:
    """The time each step of a build took, told to ``progress`` as it ends."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self.progress = progress
        self.started = self.since = time.perf_counter()
        self.timings: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self.since, 3)
        self.progress(f"  {name}: {self.timings[name]:.1f} s")
        self.since = now

    def total(self) -> dict[str, float]:
        return {**self.timings, "total": round(time.perf_counter() - self.started, 3)}


def current_build(folders: GraphFolders) -> int | None:
    """The number of the build ``CURRENT`` names, if any."""
    if not folders.current.is_file():
        return None
    return int(json.loads(folders.current.read_text())["build"])


def imported_folders(folders: GraphFolders) -> list[Path]:
    if not folders.imported.is_dir():
        return []
    return sorted(p for p in folders.imported.iterdir() if p.is_dir() and not p.name.startswith("."))


def build(
    spark: SparkSession,
    store: Store,
    buckets: int = BUCKETS,
    progress: Callable[[str], None] = print,
    threshold: int = THRESHOLD,
    split_depth: int = SPLIT_DEPTH,
) -> dict:
    """Build the lineage graph of every capture in ``store`` and every import; returns
    the build's ``meta.json`` (sizes, timings). Components of ``threshold`` nodes or
    more are split into connected sets along splits of ``split_depth`` dataset levels."""
    folders = StoreFolders(store.root).graph
    laps = Laps(progress)
    entries = committed(store)
    progress(f"lineage graph: {len(entries)} capture versions, {len(imported_folders(folders))} imports")
    collected = from_captures(spark, store, entries)
    parts = [p for p in [collected.triples] if p is not None]
    parts += [read_written(spark, p, NAMED) for p in imported_folders(folders)]
    if not parts:
        raise InvalidArgument(f"store {store.root} holds no captures and no imported triples: no graph to build")
    work = folders.work(uuid.uuid4().hex)
    keep = materializer(spark, work)

    try:
        named = keep(union(parts))
        laps("triples")
        number = (current_build(folders) or 0) + 1
        tmp = folders.root / "builds" / f".tmp-{uuid.uuid4().hex}"
        small = small_triples(spark, named)
        if small is not None:  # few triples: the layouts made here, not by Spark's jobs
            made = layouts(small, tmp, buckets, threshold, split_depth)
            laps("built in this process")
        else:
            made = _on_spark(spark, keep, laps, named, tmp, buckets, threshold, split_depth, work)
        meta = {
            "build": number,
            "layers": [number],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "buckets": buckets,
            **made,
            "feeds": sorted(made["feeds"]),
            "split_depth": split_depth,
            "threshold": threshold,
            "op_details": {k: v for k, v in collected.ops.items() if k in set(made["ops"])},
            "captures": collected.captures,
            "imports": [p.name for p in imported_folders(folders)],
            "timings": laps.total(),
        }
        return commit(folders, tmp, meta)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _on_spark(
    spark, keep, laps, named: DataFrame, tmp: Path, buckets: int, threshold: int, split_depth: int, work: Path
) -> dict:
    # the build's steps as Spark jobs: the triples numbered, their components and sets,
    # the layouts written to ``tmp``; returns what build_here.layouts returns
    datasets = sorted(r[0] for r in named.select("src_dataset").union(named.select("dst_dataset")).distinct().collect())
    ops = sorted(r[0] for r in named.select("op").distinct().collect())
    coded = code(spark, named, datasets, ops)
    nodes = keep(
        coded.select(F.col("src_ds").alias("ds"), F.col("src_rid").alias("rid"))
        .union(coded.select("dst_ds", "dst_rid"))
        .distinct()
        .withColumn("node", F.monotonically_increasing_id())
    )
    s = nodes.select(F.col("ds").alias("src_ds"), F.col("rid").alias("src_rid"), F.col("node").alias("src"))
    d = nodes.select(F.col("ds").alias("dst_ds"), F.col("rid").alias("dst_rid"), F.col("node").alias("dst"))
    edges = keep(coded.join(s, ["src_ds", "src_rid"]).join(d, ["dst_ds", "dst_rid"]))
    laps("numbering")
    labels = connected(spark, edges.select("src", "dst"), work / "components")
    laps("components")
    feeds = [(r[0], r[1]) for r in edges.select("src_ds", "dst_ds").distinct().collect()]
    split = splits(feeds, len(datasets), split_depth)
    labelled = keep(set_labels(spark, edges, labels, split, large_components(labels, threshold), work / "sets"))
    laps("sets")
    sizes = _write(spark, keep, tmp, nodes, edges, labelled, buckets)
    laps("write")
    max_node = int(nodes.agg(F.max("node")).first()[0])
    return {"datasets": datasets, "ops": ops, "splits": split, "feeds": feeds, "max_node": max_node, **sizes}


def commit(folders: GraphFolders, tmp: Path, meta: dict) -> dict:
    """Make the build written in ``tmp`` build ``meta["build"]`` and the current one."""
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    os.replace(tmp, folders.build(meta["build"]))
    write_atomic(folders.current, json.dumps({"build": meta["build"]}))
    return meta


def code(spark: SparkSession, named: DataFrame, datasets: list[str], ops: list[str]) -> DataFrame:
    # dataset and op names replaced by their numbers (small tables, broadcast)
    ds = spark.createDataFrame(list(enumerate(datasets)), "ds int, name string")
    op = spark.createDataFrame(list(enumerate(ops)), "op_id int, op string")
    src = F.broadcast(ds.select(F.col("ds").alias("src_ds"), F.col("name").alias("src_dataset")))
    dst = F.broadcast(ds.select(F.col("ds").alias("dst_ds"), F.col("name").alias("dst_dataset")))
    joined = named.join(src, "src_dataset").join(dst, "dst_dataset").join(F.broadcast(op), "op")
    return joined.select("src_ds", "src_rid", "dst_ds", "dst_rid", F.col("op_id").alias("op"))


def bucketed(df: DataFrame, key: str, buckets: int, path: Path, then: str | None = None) -> None:
    """``df`` written as one folder per bucket of ``key``, each sorted by it (and then by
    ``then``) in small row groups."""
    bucketed = df.withColumn("bucket", F.pmod(key, F.lit(buckets))).repartition(buckets, "bucket")
    order = [key] if then is None else [key, then]
    writer = bucketed.sortWithinPartitions(*order).write.option("parquet.block.size", _ROW_GROUP)
    writer.partitionBy("bucket").parquet(str(path))


TRIPLE_COLUMNS = ["src", "dst", "op", "src_ds", "src_rid", "dst_ds", "dst_rid"]


def write_triples(tmp: Path, nodes: DataFrame, sets: DataFrame, buckets: int) -> None:
    """A layer's nodes (``node, ds, rid, component, cset``) and triples (``sets``: the
    ``TRIPLE_COLUMNS`` with ``component, src_set, dst_set``) in the query layouts."""
    nodes.orderBy("ds", "rid").write.option("parquet.block.size", _ROW_GROUP).parquet(str(tmp / "nodes"))
    bucketed(sets.select(*TRIPLE_COLUMNS), "dst", buckets, tmp / "by_dst")
    bucketed(sets.drop("src_set", "dst_set"), "component", buckets, tmp / "by_component")
    bucketed(sets, "component", buckets, tmp / "by_set", then="dst_set")
    deps = sets.where(F.col("src_set") != F.col("dst_set")).select("src_set", "dst_set").distinct()
    deps.orderBy("dst_set").write.parquet(str(tmp / "set_dependencies"))


def _write(spark, keep, tmp: Path, nodes: DataFrame, edges: DataFrame, labels: DataFrame, buckets: int) -> dict:
    labelled = nodes.join(labels, "node")
    src = labels.select(F.col("node").alias("src"), "component", F.col("cset").alias("src_set"))
    dst = labels.select(F.col("node").alias("dst"), F.col("cset").alias("dst_set"))
    # joined once: three layouts, the set dependencies and the sizes read it
    sets = keep(edges.select(*TRIPLE_COLUMNS).join(src, "src").join(dst, "dst"))
    write_triples(tmp, labelled, sets, buckets)
    sizes = labels.groupBy("component").agg(F.count("*").alias("nodes"), F.countDistinct("cset").alias("sets"))
    edge_counts = sets.groupBy("component").agg(F.count("*").alias("edges"))
    table = sizes.join(edge_counts, "component", "left").fillna(0, ["edges"])
    table.write.parquet(str(tmp / "components"))
    labels.groupBy("cset").agg(F.count("*").alias("nodes")).write.parquet(str(tmp / "sets"))
    return sizes_of(spark, [tmp], {})


def sizes_of(spark: SparkSession, layers: list[Path], aliases: dict[int, int]) -> dict:
    """The sizes of a graph held by build folders ``layers`` (``components/`` and
    ``sets/`` of each: a component's rows in later layers add to those before, under
    the label ``aliases`` maps its earlier labels to)."""
    components = resolved(spark, union([read_written(spark, p / "components") for p in layers]), "component", aliases)
    per = components.groupBy("component").agg(*[F.sum(c).alias(c) for c in ("nodes", "edges", "sets")])
    summary = per.agg(
        F.count("*").alias("components"), F.sum("nodes").alias("nodes"), F.sum("edges").alias("edges"),
        F.max("nodes").alias("largest"), F.sum("sets").alias("sets"),
    ).first()  # fmt: skip
    sets = union([read_written(spark, p / "sets") for p in layers]).groupBy("cset").agg(F.sum("nodes").alias("n"))
    deps = union([read_written(spark, p / "set_dependencies") for p in layers]).distinct()
    return {
        "nodes": int(summary["nodes"] or 0),
        "edges": int(summary["edges"] or 0),
        "components": int(summary["components"]),
        "largest_component": int(summary["largest"] or 0),
        "sets": int(summary["sets"] or 0),
        "largest_set": int(sets.agg(F.max("n")).first()[0] or 0),
        "set_dependencies": deps.count(),
    }


def resolved(spark: SparkSession, df: DataFrame, column: str, aliases: dict[int, int]) -> DataFrame:
    """``df`` with the component labels of ``column`` as the latest merges name them
    (``aliases``: each label replaced, to the one naming it now)."""
    if not aliases:
        return df
    table = spark.createDataFrame(list(aliases.items()), "_label long, _into long")
    joined = df.join(F.broadcast(table), F.col(column) == F.col("_label"), "left")
    return joined.withColumn(column, F.coalesce("_into", column)).drop("_label", "_into")


def union(parts: list[DataFrame]) -> DataFrame:
    found = parts[0]
    for part in parts[1:]:
        found = found.unionByName(part)
    return found
