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
- ``by_set/bucket=k/``: the triples with their ends' connected sets, by ``dst_set``
  modulo the bucket count (CSProv reads the sets its row's lineage passes through);
- ``set_dependencies/``: ``src_set, dst_set``, every pair of sets a triple joins;
- ``components/``: ``component, nodes, edges, sets``;
- ``meta.json``: the datasets and ops by number, the captures and imports read, sizes
  and timings.
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
from .components import weakly_connected
from .sets import SPLIT_DEPTH, THRESHOLD, set_labels, splits

__all__ = ["BUCKETS", "SPLIT_DEPTH", "THRESHOLD", "build", "current_build", "imported_folders"]
from .triples import NAMED, committed, from_captures

BUCKETS = 16  # files per query layout; a query reads one bucket (CCProv) or a hop's
_ROW_GROUP = str(1 << 20)


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
    started = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - since, 3)
        progress(f"  {name}: {timings[name]:.1f} s")
        return now

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
        named = parts[0]
        for part in parts[1:]:
            named = named.unionByName(part)
        named = keep(named)
        t = lap("triples", started)
        datasets = sorted(
            r[0] for r in named.select("src_dataset").union(named.select("dst_dataset")).distinct().collect()
        )
        ops = sorted(r[0] for r in named.select("op").distinct().collect())
        coded = _coded(spark, named, datasets, ops)
        nodes = keep(
            coded.select(F.col("src_ds").alias("ds"), F.col("src_rid").alias("rid"))
            .union(coded.select("dst_ds", "dst_rid"))
            .distinct()
            .withColumn("node", F.monotonically_increasing_id())
        )
        s = nodes.select(F.col("ds").alias("src_ds"), F.col("rid").alias("src_rid"), F.col("node").alias("src"))
        d = nodes.select(F.col("ds").alias("dst_ds"), F.col("rid").alias("dst_rid"), F.col("node").alias("dst"))
        edges = keep(coded.join(s, ["src_ds", "src_rid"]).join(d, ["dst_ds", "dst_rid"]))
        t = lap("numbering", t)
        labels = weakly_connected(spark, edges.select("src", "dst"), work / "components")
        t = lap("components", t)
        feeds = [(r[0], r[1]) for r in edges.select("src_ds", "dst_ds").distinct().collect()]
        split = splits(feeds, len(datasets), split_depth)
        labelled = keep(set_labels(spark, edges, labels, split, threshold, work / "sets"))
        t = lap("sets", t)
        number = (current_build(folders) or 0) + 1
        tmp = folders.root / "builds" / f".tmp-{uuid.uuid4().hex}"
        sizes = _write(spark, tmp, nodes, edges, labelled, buckets)
        t = lap("write", t)
        meta = {
            "build": number,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "buckets": buckets,
            "datasets": datasets,
            "ops": ops,
            "splits": split,
            "split_depth": split_depth,
            "threshold": threshold,
            "op_details": {k: v for k, v in collected.ops.items() if k in set(ops)},
            "captures": collected.captures,
            "imports": [p.name for p in imported_folders(folders)],
            **sizes,
            "timings": {**timings, "total": round(time.perf_counter() - started, 3)},
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        os.replace(tmp, folders.build(number))
        write_atomic(folders.current, json.dumps({"build": number}))
        return meta
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _coded(spark: SparkSession, named: DataFrame, datasets: list[str], ops: list[str]) -> DataFrame:
    # dataset and op names replaced by their numbers (small tables, broadcast)
    ds = spark.createDataFrame(list(enumerate(datasets)), "ds int, name string")
    op = spark.createDataFrame(list(enumerate(ops)), "op_id int, op string")
    src = F.broadcast(ds.select(F.col("ds").alias("src_ds"), F.col("name").alias("src_dataset")))
    dst = F.broadcast(ds.select(F.col("ds").alias("dst_ds"), F.col("name").alias("dst_dataset")))
    joined = named.join(src, "src_dataset").join(dst, "dst_dataset").join(F.broadcast(op), "op")
    return joined.select("src_ds", "src_rid", "dst_ds", "dst_rid", F.col("op_id").alias("op"))


def _bucketed(df: DataFrame, key: str, buckets: int, path: Path) -> None:
    # one folder per bucket of ``key``, each sorted by it in small row groups
    bucketed = df.withColumn("bucket", F.pmod(key, F.lit(buckets))).repartition(buckets, "bucket")
    writer = bucketed.sortWithinPartitions(key).write.option("parquet.block.size", _ROW_GROUP)
    writer.partitionBy("bucket").parquet(str(path))


def _write(spark, tmp: Path, nodes: DataFrame, edges: DataFrame, labels: DataFrame, buckets: int) -> dict:
    labelled = nodes.join(labels, "node")
    labelled.orderBy("ds", "rid").write.option("parquet.block.size", _ROW_GROUP).parquet(str(tmp / "nodes"))
    columns = ["src", "dst", "op", "src_ds", "src_rid", "dst_ds", "dst_rid"]
    _bucketed(edges.select(*columns), "dst", buckets, tmp / "by_dst")
    src = labels.select(F.col("node").alias("src"), "component", F.col("cset").alias("src_set"))
    dst = labels.select(F.col("node").alias("dst"), F.col("cset").alias("dst_set"))
    sets = edges.select(*columns).join(src, "src").join(dst, "dst")
    _bucketed(sets.drop("src_set", "dst_set"), "component", buckets, tmp / "by_component")
    _bucketed(sets.drop("component"), "dst_set", buckets, tmp / "by_set")
    deps = sets.where(F.col("src_set") != F.col("dst_set")).select("src_set", "dst_set").distinct()
    deps.orderBy("dst_set").write.parquet(str(tmp / "set_dependencies"))
    sizes = labels.groupBy("component").agg(F.count("*").alias("nodes"), F.countDistinct("cset").alias("sets"))
    edge_counts = sets.groupBy("component").agg(F.count("*").alias("edges"))
    table = sizes.join(edge_counts, "component", "left").fillna(0, ["edges"])
    table.write.parquet(str(tmp / "components"))
    summary = read_written(spark, tmp / "components").agg(
        F.count("*").alias("components"), F.sum("nodes").alias("nodes"), F.sum("edges").alias("edges"),
        F.max("nodes").alias("largest"), F.sum("sets").alias("sets"),
    ).first()  # fmt: skip
    largest_set = labels.groupBy("cset").count().agg(F.max("count")).first()[0]
    return {
        "nodes": int(summary["nodes"] or 0),
        "edges": int(summary["edges"] or 0),
        "components": int(summary["components"]),
        "largest_component": int(summary["largest"] or 0),
        "sets": int(summary["sets"] or 0),
        "largest_set": int(largest_set or 0),
        "set_dependencies": read_written(spark, tmp / "set_dependencies").count(),
    }
