"""Connected sets (CSProv, the IBM paper's section IV): large components split along the
graph of datasets, so a query reads the sets its row's lineage passes through rather
than its whole component.

The datasets are split into groups (splits): datasets at the same depth band of the
dataset graph (``SPLIT_DEPTH`` levels each, depth the longest path from a dataset
nothing feeds) that are weakly connected within the band. A large component's nodes in
one split, joined by the triples inside that split, make its connected sets; a small
component is one set. A set is named by its smallest node, and a set depends on another
when a triple goes from one to the other; since the sets of one split are not connected
to each other, every dependency crosses splits, and a row's ancestors all lie in the
sets its own set depends on, directly or not.

>>> splits([(0, 1), (1, 2), (2, 3), (3, 4)], 5, depth_per_split=2)
[0, 0, 1, 1, 2]
>>> splits([(0, 1), (1, 0)], 2, depth_per_split=2)  # not a DAG: one split (sets are components)
[0, 0]
"""

from __future__ import annotations

import os
from pathlib import Path

import rustworkx as rx
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .components import connected

SPLIT_DEPTH = 3  # dataset-graph levels per split
THRESHOLD = 25_000  # nodes from which a component is split into sets (the paper's θ)


def splits(dependencies: list[tuple[int, int]], count: int, depth_per_split: int = SPLIT_DEPTH) -> list[int]:
    """The split of each of ``count`` datasets, given which feeds which."""
    graph = rx.PyDiGraph()
    graph.add_nodes_from(range(count))
    graph.add_edges_from_no_data([(a, b) for a, b in dependencies if a != b])
    if not rx.is_directed_acyclic_graph(graph):
        return [0] * count
    depth = [0] * count
    for n in rx.topological_sort(graph):
        for after in graph.successor_indices(n):
            depth[after] = max(depth[after], depth[n] + 1)
    band = [d // depth_per_split for d in depth]
    within = rx.PyGraph()
    within.add_nodes_from(range(count))
    within.add_edges_from_no_data([(a, b) for a, b in dependencies if a != b and band[a] == band[b]])
    split = [0] * count
    groups = sorted(rx.connected_components(within), key=min)
    for i, group in enumerate(groups):
        for n in group:
            split[n] = i
    return split


def large_components(labels: DataFrame, threshold: int) -> DataFrame:
    """The components of ``labels`` (``node, component``) with ``threshold`` nodes or more."""
    return labels.groupBy("component").count().where(F.col("count") >= threshold).select("component")


def set_labels(
    spark: SparkSession,
    edges: DataFrame,
    labels: DataFrame,
    split: list[int],
    large: DataFrame,
    work: str | os.PathLike,
) -> DataFrame:
    """``(node, component, cset)``: each node's connected set. ``edges`` has ``src, dst,
    src_ds, dst_ds``; ``labels`` is ``(node, component)``; ``large``, the components
    to split (``component``; few), the others each one set named by the component."""
    large = large.select("component", F.lit(True).alias("large"))
    by_split = spark.createDataFrame(list(enumerate(split)), "ds int, split int")
    src_split = F.broadcast(by_split.select(F.col("ds").alias("src_ds"), F.col("split").alias("a")))
    dst_split = F.broadcast(by_split.select(F.col("ds").alias("dst_ds"), F.col("split").alias("b")))
    in_large = labels.join(F.broadcast(large), "component").select(F.col("node").alias("src"))
    inner = (
        edges.join(src_split, "src_ds")
        .join(dst_split, "dst_ds")
        .where(F.col("a") == F.col("b"))
        .join(in_large, "src", "left_semi")
        .select("src", "dst")
    )
    found = connected(spark, inner, Path(work)).select("node", F.col("component").alias("found"))
    with_large = labels.join(F.broadcast(large), "component", "left").join(found, "node", "left")
    cset = F.when(F.col("large").isNull(), F.col("component")).otherwise(F.coalesce("found", "node"))
    return with_large.select("node", "component", cset.alias("cset"))
