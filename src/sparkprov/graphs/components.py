"""Weakly connected components of a graph of int64 node ids, on Spark, with the
alternating large-star and small-star steps of Kiveris et al. ("Connected Components
in MapReduce and Beyond", SoCC 2014): every node ends pointing at the smallest node of
its component, which names the component.

Each round's edges are written to Parquet under a work folder and read back, which cuts
the plan (a checkpoint whose files either were written whole or raised). The answer
is then checked against the input: every edge's ends must carry the same label (a lost
round would split a component) and every label must name a node labelled by itself.
(Neither step joins nodes that are not connected, so components cannot merge.)

``connected`` gives the same answer, found in this process (SciPy's sparse-graph
components) when there are at most ``LOCAL_EDGES`` edges (or the Spark conf
``spark.sparkprov.graph.localEdges``; 0 always takes Spark's rounds): each of Spark's
rounds costs seconds however small the graph, and shuffles every edge. The edges are
written once and read back here in chunks (``streamed_components``), so this process
holds one chunk of edges and two numbers per node, not the whole graph.

>>> from pyspark.sql import SparkSession
>>> import tempfile
>>> spark = SparkSession.builder.getOrCreate()
>>> edges = spark.createDataFrame([(1, 2), (2, 3), (7, 8), (9, 9)], "src long, dst long")
>>> work = tempfile.TemporaryDirectory()
>>> labels = weakly_connected(spark, edges, work.name)
>>> sorted((r.node, r.component) for r in labels.collect())
[(1, 1), (2, 1), (3, 1), (7, 7), (8, 7), (9, 9)]
>>> work.cleanup()
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..capture.writing import materializer
from ..errors import InvalidArgument, SparkprovError
from ..plan.written import read_written

log = logging.getLogger("sparkprov")
MAX_ROUNDS = 200  # a chain of n nodes needs O(log n) rounds; far more means something is wrong

_U, _V = "u", "v"  # an undirected edge kept as (larger, smaller)


class ComponentsFailed(SparkprovError):
    """The components found do not hold for the graph (a lost or damaged round)."""


LOCAL_EDGES = 100_000_000  # edges whose components are found in this process
LOCAL_EDGES_CONF = "spark.sparkprov.graph.localEdges"


def local_edges(spark: SparkSession) -> int:
    """The most edges whose components ``connected`` finds in this process."""
    return conf_count(spark, LOCAL_EDGES_CONF, LOCAL_EDGES, "edges")


def conf_count(spark: SparkSession, name: str, default: int, what: str) -> int:
    """The count Spark conf ``name`` holds (``default`` if unset): up to how many
    ``what`` work is done in this process rather than on Spark (0: always on Spark)."""
    value = spark.conf.get(name, None)
    if value is None:
        return default
    try:
        count = int(value.replace("_", ""))
    except ValueError:
        count = -1
    if count < 0:
        raise InvalidArgument(f"{name}={value!r} must be a count of {what} (0: always on Spark)")
    return count


def connected(spark: SparkSession, edges: DataFrame, work: str | os.PathLike) -> DataFrame:
    """``weakly_connected``'s answer, found in this process when ``edges`` has at most
    ``local_edges(spark)`` rows (the answer written under ``work`` and read by Spark)."""
    limit, work = local_edges(spark), Path(work)
    if limit == 0:
        return weakly_connected(spark, edges, work)
    written = work / "edges"
    edges.select(F.col("src").cast("long").alias("src"), F.col("dst").cast("long").alias("dst")).write.parquet(
        str(written)
    )
    files = ds.dataset(str(written), format="parquet")
    if files.count_rows() > limit:
        return weakly_connected(spark, read_written(spark, written), work)
    path = work / "local"
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(streamed_components(_chunks(files, _CHUNK)), path / "part.parquet")
    return read_written(spark, path)


_CHUNK = 5_000_000  # edges per step of streamed_components (about 0.7 GB while it runs)


def _chunks(files: ds.Dataset, size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    pending, rows = [], 0
    for batch in files.to_batches(columns=["src", "dst"]):
        pending.append(batch)
        rows += batch.num_rows
        if rows >= size:
            yield _ends(pending)
            pending, rows = [], 0
    if pending:
        yield _ends(pending)


def _ends(batches: list[pa.RecordBatch]) -> tuple[np.ndarray, np.ndarray]:
    table = pa.Table.from_batches(batches)
    return table.column("src").to_numpy(), table.column("dst").to_numpy()


def streamed_components(chunks: Iterable[tuple[np.ndarray, np.ndarray]]) -> pa.Table:
    """``local_components`` of the edges of every chunk ``(src, dst)``, taken one chunk
    at a time: the nodes met so far keep the smallest node they are connected to, and a
    chunk's ends are replaced by theirs before its components are found, so this holds
    one chunk and two numbers per node.

    >>> chunks = [(np.array([1, 7]), np.array([2, 8])), (np.array([8]), np.array([2]))]
    >>> streamed_components(chunks).to_pydict()
    {'node': [1, 2, 7, 8], 'component': [1, 1, 1, 1]}
    """
    nodes = label = np.empty(0, np.int64)  # sorted; each node's component so far
    for src, dst in chunks:
        if not len(src):
            continue
        found = local_components(_named(nodes, label, src), _named(nodes, label, dst))
        found_nodes, found_label = found.column("node").to_numpy(), found.column("component").to_numpy()
        # a component met before is named by its smallest node, which the chunk's ends
        # were replaced by: its nodes take what that node is connected to now
        at, hit = _find(found_nodes, label)
        label = np.where(hit, found_label[at], label)
        _, known = _find(nodes, found_nodes)
        nodes = np.concatenate([nodes, found_nodes[~known]])
        label = np.concatenate([label, found_label[~known]])
        order = np.argsort(nodes, kind="stable")
        nodes, label = nodes[order], label[order]
    return pa.table({"node": pa.array(nodes, pa.int64()), "component": pa.array(label, pa.int64())})


def _named(nodes: np.ndarray, label: np.ndarray, ends: np.ndarray) -> np.ndarray:
    # each end met before replaced by the node naming its component
    if not len(nodes):
        return ends
    at, hit = _find(nodes, ends)
    return np.where(hit, label[at], ends)


def _find(sorted_values: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # per wanted value: its index in sorted_values (clipped) and whether it is there
    if not len(sorted_values):
        return np.zeros(len(wanted), np.int64), np.zeros(len(wanted), bool)
    at = np.minimum(np.searchsorted(sorted_values, wanted), len(sorted_values) - 1)
    return at, sorted_values[at] == wanted


def local_components(src: np.ndarray, dst: np.ndarray) -> pa.Table:
    """``(node, component)`` of the graph of edges ``src[i] - dst[i]``, in this process.

    >>> local_components(np.array([1, 7, 9]), np.array([2, 8, 9])).to_pydict()
    {'node': [1, 2, 7, 8, 9], 'component': [1, 1, 7, 7, 9]}
    """
    nodes, ends = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = len(src)
    graph = coo_matrix((np.ones(n, np.int8), (ends[:n], ends[n:])), shape=(len(nodes), len(nodes)))
    count, label = connected_components(graph, directed=False)
    smallest = np.full(count, len(nodes), np.int64)
    np.minimum.at(smallest, label, np.arange(len(nodes)))  # nodes are sorted: the smallest index, the smallest node
    return pa.table({"node": pa.array(nodes, pa.int64()), "component": pa.array(nodes[smallest[label]], pa.int64())})


def weakly_connected(spark: SparkSession, edges: DataFrame, work: str | os.PathLike) -> DataFrame:
    """``(node, component)`` for every node of ``edges`` (columns ``src`` and ``dst``,
    int64): ``component`` is the smallest node id it is connected to, ignoring edge
    directions. Rounds are written under ``work`` (left there; the caller removes it)."""
    keep = materializer(spark, Path(work))
    nodes = keep(edges.select(F.col("src").alias("node")).union(edges.select("dst")).distinct())
    e = keep(
        edges.select(F.greatest("src", "dst").alias(_U), F.least("src", "dst").alias(_V))
        .where(F.col(_U) != F.col(_V))
        .distinct()
    )
    for round_ in range(1, MAX_ROUNDS + 1):
        e = keep(_small_star(_large_star(e)))
        if _is_stars(e):
            log.info("sparkprov: components found in %d rounds", round_)
            break
    else:
        raise ComponentsFailed(f"connected components did not settle in {MAX_ROUNDS} rounds")
    parent = e.select(F.col(_U).alias("node"), F.col(_V).alias("component"))
    labels = keep(nodes.join(parent, "node", "left").select("node", F.coalesce("component", "node").alias("component")))
    _check(edges, labels)
    return labels


def _large_star(e: DataFrame) -> DataFrame:
    # each node's larger neighbours are joined to the smallest node of its neighbourhood
    both = e.union(e.select(F.col(_V).alias(_U), F.col(_U).alias(_V)))
    smallest = both.groupBy(_U).agg(F.min(_V).alias("m")).select(_U, F.least(_U, "m").alias("m"))
    return both.join(smallest, _U).where(F.col(_V) > F.col(_U)).select(F.col(_V).alias(_U), F.col("m").alias(_V))


def _small_star(e: DataFrame) -> DataFrame:
    # each node and its smaller neighbours are joined to the smallest of them
    e = e.distinct()
    smallest = e.groupBy(_U).agg(F.min(_V).alias("m"))
    moved = e.join(smallest, _U).where(F.col(_V) != F.col("m")).select(F.col(_V).alias(_U), F.col("m").alias(_V))
    return moved.union(smallest.select(_U, F.col("m").alias(_V))).distinct()


def _is_stars(e: DataFrame) -> bool:
    """Whether every node has at most one parent and no parent has one: stars."""
    parents = e.select(F.col(_V).alias(_U)).distinct()
    several = e.groupBy(_U).count().where("count > 1").select(_U)
    return parents.join(e.select(_U), _U, "left_semi").union(several).isEmpty()


def _check(edges: DataFrame, labels: DataFrame) -> None:
    src = labels.select(F.col("node").alias("src"), F.col("component").alias("a"))
    dst = labels.select(F.col("node").alias("dst"), F.col("component").alias("b"))
    split = edges.join(src, "src", "left").join(dst, "dst", "left")
    wrong = split.where(~F.col("a").eqNullSafe(F.col("b")) | F.col("a").isNull())
    # a label that is not a node labelled by itself, or a node labelled by a larger one
    roots = labels.where(F.col("node") == F.col("component")).select("component")
    foreign = labels.join(roots, "component", "left_anti")
    upward = labels.where(F.col("component") > F.col("node"))
    if not (wrong.isEmpty() and foreign.isEmpty() and upward.isEmpty()):
        raise ComponentsFailed(
            "the connected components found do not hold for the graph (an edge joins two components, or a "
            "component is named by a node that is not its own label); nothing was stored"
        )
