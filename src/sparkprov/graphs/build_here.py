"""A small lineage graph's build made in this process: the same files as the build on
Spark (``build.py`` lists them), from the triples read into Arrow, numbered and joined
by DuckDB, its components and connected sets found by SciPy. Each of Spark's steps
costs a job or more however few the triples (a graph of two triples took some sixty
jobs, 11 s); here it takes a fraction of a second.

A build is made here when its triples are at most ``LOCAL_TRIPLES`` (or the Spark conf
``spark.sparkprov.graph.localTriples``; 0 always builds on Spark) and their files are
local. Nodes are numbered in ``(ds, rid)`` order here and by Spark's partitions there:
answers name rows by dataset and rid, which do not depend on it.

>>> import pyarrow as pa, tempfile
>>> from pathlib import Path
>>> triples = pa.table({"src_dataset": ["raw", "clean"], "src_rid": [1, 10], "dst_dataset": ["clean", "report"],
...                     "dst_rid": [10, 100], "op": ["filter", "sum"]})
>>> made = layouts(triples, Path(tempfile.mkdtemp()) / "b", buckets=4, threshold=25_000, split_depth=3)
>>> made["datasets"], made["max_node"], made["components"]
(['clean', 'raw', 'report'], 2, 1)
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from ..plan.small_writes import write_table
from .components import ComponentsFailed, conf_count, local_components
from .sets import splits

LOCAL_TRIPLES = 1_000_000  # triples whose graph is built in this process
LOCAL_TRIPLES_CONF = "spark.sparkprov.graph.localTriples"
_ROW_GROUP_BYTES = 1 << 20  # as the build on Spark writes them: a lookup reads little

_TYPES = {"node": LongType(), "ds": IntegerType(), "rid": LongType(), "component": LongType(), "cset": LongType(),
          "src": LongType(), "dst": LongType(), "op": IntegerType(), "src_ds": IntegerType(), "src_rid": LongType(),
          "dst_ds": IntegerType(), "dst_rid": LongType(), "src_set": LongType(), "dst_set": LongType(),
          "nodes": LongType(), "sets": LongType(), "edges": LongType()}  # fmt: skip
# the columns of each file, in the order the build on Spark writes them
_TRIPLES = ["src", "dst", "op", "src_ds", "src_rid", "dst_ds", "dst_rid"]
_BY_COMPONENT = ["dst", "src", "op", "src_ds", "src_rid", "dst_ds", "dst_rid", "component"]
_BY_SET = [*_BY_COMPONENT, "src_set", "dst_set"]


def local_triples(spark: SparkSession) -> int:
    """The most triples whose graph is built (or a layer of it made) in this process."""
    return conf_count(spark, LOCAL_TRIPLES_CONF, LOCAL_TRIPLES, "triples")


def small_triples(spark: SparkSession, named: DataFrame) -> pa.Table | None:
    """``named`` (the triples, as written and read back) as an Arrow table when they
    are few enough and their files local; else None."""
    limit = local_triples(spark)
    files = named.inputFiles()
    if limit == 0 or not files or any(urlparse(f).scheme not in ("", "file") for f in files):
        return None
    found = ds.dataset([unquote(urlparse(f).path) for f in files], format="parquet")  # Spark's URIs quote spaces
    if found.count_rows() > limit:
        return None
    return found.to_table()


def layouts(triples: pa.Table, folder: Path, buckets: int, threshold: int, split_depth: int) -> dict:
    """Write the build of ``triples`` (``graphs.triples.NAMED`` columns) to the new
    ``folder``; returns what its ``meta.json`` needs: ``datasets``, ``ops``, ``splits``,
    ``feeds``, ``max_node`` and the sizes (``nodes``, ``edges``, ``components``...)."""
    datasets = sorted({d for c in ("src_dataset", "dst_dataset") for d in pc.unique(triples[c]).to_pylist()})
    ops = sorted(pc.unique(triples["op"]).to_pylist())
    coded = code(triples, datasets, ops)
    with duckdb.connect() as con:
        con.register("coded", coded)
        nodes = con.execute(
            "SELECT CAST(row_number() OVER (ORDER BY ds, rid) - 1 AS BIGINT) AS node, ds, rid FROM "
            "(SELECT src_ds AS ds, src_rid AS rid FROM coded UNION SELECT dst_ds, dst_rid FROM coded) "
            "ORDER BY ds, rid"
        ).arrow()
        con.register("numbered", nodes)
        edges = con.execute(
            "SELECT s.node AS src, d.node AS dst, c.op, c.src_ds, c.src_rid, c.dst_ds, c.dst_rid FROM coded c "
            "JOIN numbered s ON c.src_ds = s.ds AND c.src_rid = s.rid "
            "JOIN numbered d ON c.dst_ds = d.ds AND c.dst_rid = d.rid"
        ).arrow()
    src, dst = edges["src"].to_numpy(), edges["dst"].to_numpy()
    node = nodes["node"].to_numpy()
    labels = local_components(src, dst)  # every node ends a triple: in node order
    component = labels["component"].to_numpy()
    if not np.array_equal(labels["node"].to_numpy(), node):  # a node's number indexes the arrays below
        raise ComponentsFailed("the triples' ends were not numbered 0, 1, ... in order: nothing was stored")
    feeds = sorted({(int(a), int(b)) for a, b in zip(edges["src_ds"].to_numpy(), edges["dst_ds"].to_numpy())})
    split = splits(feeds, len(datasets), split_depth)
    cset = _sets(node, component, src, dst, edges, split, threshold)
    nodes = nodes.append_column("component", pa.array(component)).append_column("cset", pa.array(cset))
    sets = edges.append_column("component", pa.array(component[src])).append_column("src_set", pa.array(cset[src]))
    sets = sets.append_column("dst_set", pa.array(cset[dst]))
    crossing = write_triples(nodes, sets, folder, buckets)
    per_component = _components(component, cset, component[src])
    write(per_component, folder / "components")
    csets, set_nodes = np.unique(cset, return_counts=True)
    write(pa.table({"cset": csets, "nodes": set_nodes}), folder / "sets")
    counts = per_component["nodes"].to_numpy()
    sizes = {
        "nodes": len(node),
        "edges": len(src),
        "components": len(counts),
        "largest_component": int(counts.max(initial=0)),
        "sets": len(csets),
        "largest_set": int(set_nodes.max(initial=0)),
        "set_dependencies": crossing,
    }
    return {"datasets": datasets, "ops": ops, "splits": split, "feeds": feeds, "max_node": int(node.max(initial=-1)),
            **sizes}  # fmt: skip


def code(triples: pa.Table, datasets: list[str], ops: list[str]) -> pa.Table:
    """``triples`` with their datasets and ops replaced by their numbers (positions in
    ``datasets`` and ``ops``), as ``build.code`` does on Spark."""

    def index(column: str, names: list[str]) -> pa.Array:
        return pc.index_in(triples[column], value_set=pa.array(names, pa.string())).cast(pa.int32())

    return pa.table({"src_ds": index("src_dataset", datasets), "src_rid": triples["src_rid"],
                     "dst_ds": index("dst_dataset", datasets), "dst_rid": triples["dst_rid"],
                     "op": index("op", ops)})  # fmt: skip


def _sets(node, component, src, dst, edges: pa.Table, split: list[int], threshold: int) -> np.ndarray:
    # each node's connected set: its component's, unless the component has ``threshold``
    # nodes or more; then the smallest node it reaches by triples within one split
    labels, counts = np.unique(component, return_counts=True)
    large = np.isin(component, labels[counts >= threshold])
    cset = component.copy()
    if not large.any():
        return cset
    by_split = np.asarray(split)
    inside = (by_split[edges["src_ds"].to_numpy()] == by_split[edges["dst_ds"].to_numpy()]) & large[src]
    cset[large] = node[large]  # a node no inner triple reaches is a set of its own
    if inside.any():
        found = local_components(src[inside], dst[inside])
        cset[found["node"].to_numpy()] = found["component"].to_numpy()
    return cset


def _components(component: np.ndarray, cset: np.ndarray, edge_component: np.ndarray) -> pa.Table:
    labels, nodes = np.unique(component, return_counts=True)
    pairs = np.unique(np.stack([component, cset], axis=1), axis=0)
    sets = np.bincount(np.searchsorted(labels, pairs[:, 0]), minlength=len(labels))
    edges = np.bincount(np.searchsorted(labels, edge_component), minlength=len(labels))
    return pa.table({"component": labels, "nodes": nodes, "sets": sets.astype(np.int64),
                     "edges": edges.astype(np.int64)})  # fmt: skip


def write_triples(nodes: pa.Table, sets: pa.Table, folder: Path, buckets: int) -> int:
    """A layer's nodes and triples (``sets``: the triple columns with ``component,
    src_set, dst_set``) in the query layouts, as ``build.write_triples`` writes them;
    returns the count of set dependencies."""
    write(nodes, folder / "nodes")
    _bucketed(sets.select(_TRIPLES), "dst", buckets, folder / "by_dst")
    _bucketed(sets.select(_BY_COMPONENT), "component", buckets, folder / "by_component")
    _bucketed(sets.select(_BY_SET), "component", buckets, folder / "by_set", then="dst_set")
    a, b = sets["src_set"].to_numpy(), sets["dst_set"].to_numpy()
    crossing = np.unique(np.stack([a, b], axis=1)[a != b], axis=0).reshape(-1, 2)
    write(
        pa.table({"src_set": crossing[:, 0], "dst_set": crossing[:, 1]}).sort_by("dst_set"), folder / "set_dependencies"
    )
    return len(crossing)


def _bucketed(table: pa.Table, key: str, buckets: int, folder: Path, then: str | None = None) -> None:
    # one folder per bucket that holds rows, as Spark's partitionBy("bucket") writes them
    bucket = table[key].to_numpy() % buckets
    order = [(key, "ascending")] + ([(then, "ascending")] if then else [])
    for b in np.unique(bucket):
        write(table.filter(pa.array(bucket == b)).sort_by(order), folder / f"bucket={int(b)}")


def write(table: pa.Table, folder: Path) -> None:
    """``table`` (columns of a build's files) written to the new ``folder`` as the build
    on Spark writes it: its types, Spark's schema in the footer, row groups of 1 MB."""
    table = table.cast(pa.schema([(c, _arrow(c)) for c in table.column_names]))
    schema = StructType([StructField(c, _TYPES[c]) for c in table.column_names])
    write_table(table, schema, folder, row_group_bytes=_ROW_GROUP_BYTES)


def _arrow(column: str) -> pa.DataType:
    return pa.int32() if isinstance(_TYPES[column], IntegerType) else pa.int64()
