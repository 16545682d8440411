"""Updating the lineage graph with what was captured or imported since its current
build, without building it again.

The new triples make a layer: a build folder holding only them, in the layouts of
``build.py``, whose ``meta.json`` lists every folder a query reads (``layers``).
- Nodes keep their numbers; a row first met here is numbered above every earlier node.
- Components merge: the new triples, each end named by its component (a row met
  before) or by itself (a new row), are the edges of a small graph whose weakly
  connected components say which components became one. A merged component is named
  by its smallest node, as a build names it; every label it replaced is kept in the
  layer's ``aliases/`` (``component, merged_into``: each label replaced so far, to the
  one naming it now), since earlier layers file their triples under the old labels
  (queries read a component under all its labels).
- Connected sets: the new rows of a component under the build's threshold join its set
  (named by the component, as a build names it); those of a larger one make sets of
  their own, new rows joined by new triples within one split (``sets.py``). Sets never
  merge and every triple between two sets is a set dependency, so a row's ancestors
  still lie in the sets its own set depends on (CSProv stays exact; only a build splits
  a component anew).
- Sizes (``meta.json``) are the whole graph's, summed over the layers.

An update only adds: capture versions removed since the build need a build.

>>> extended(["a@1", "b@1"], ["c@1", "a@1"])
['a@1', 'b@1', 'c@1']
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..capture.writing import materializer
from ..errors import InvalidArgument
from ..plan.written import read_written
from ..store.catalog import Store
from ..store.layout import StoreFolders
from . import update_here
from .build import (
    TRIPLE_COLUMNS,
    Laps,
    code,
    commit,
    current_build,
    imported_folders,
    resolved,
    sizes_of,
    union,
    write_triples,
)
from .build_here import small_triples
from .components import connected
from .queries import GraphNotBuilt, read_aliases
from .sets import set_labels, splits
from .triples import NAMED, capture_version_name, committed, from_captures
from .update_here import extended


def update(spark: SparkSession, store: Store, progress: Callable[[str], None] = print) -> dict:
    """Add the captures and imports made since the current build of ``store``'s lineage
    graph as a layer on top of it; returns the new build's ``meta.json`` (the current
    one's when there is nothing to add)."""
    folders = StoreFolders(store.root).graph
    number = current_build(folders)
    if number is None:
        raise GraphNotBuilt(f"no lineage graph in {store.root} to update: build it first (sparkprov graph build)")
    prev = json.loads((folders.build(number) / "meta.json").read_text())
    if "feeds" not in prev:
        raise InvalidArgument(f"build {number} was made by an earlier sparkprov that cannot update it: build it again")
    entries = {capture_version_name(e): e for e in committed(store)}
    built = {f"{n}@{v}" for n, v in prev["captures"]}
    removed = sorted(built - set(entries))
    if removed:
        raise InvalidArgument(
            f"capture versions {', '.join(removed)} were removed since build {number}, and an update only adds: "
            "build the graph again (sparkprov graph build)"
        )
    new = [e for name, e in entries.items() if name not in built]
    imported = [p for p in imported_folders(folders) if p.name not in set(prev["imports"])]
    if not new and not imported:
        progress(f"lineage graph: build {number} holds every capture version and import")
        return {**prev, "added": {"triples": 0, "nodes": 0, "components_merged": 0}}
    progress(f"lineage graph update of build {number}: {len(new)} capture versions, {len(imported)} imports")
    laps = Laps(progress)
    collected = from_captures(spark, store, new)
    parts = [p for p in [collected.triples] if p is not None]
    parts += [read_written(spark, p, NAMED) for p in imported]
    work = folders.work(uuid.uuid4().hex)
    try:
        layers = [folders.build(n) for n in prev["layers"]]
        tmp = folders.root / "builds" / f".tmp-{uuid.uuid4().hex}"
        named = materializer(spark, work / "new")(union(parts))  # (the layer's steps are kept in work/)
        small = small_triples(spark, named)
        if small is not None:  # few new triples: the layer made here, not by Spark's jobs
            made = update_here.layer(small, prev, layers, read_aliases(layers[-1]), tmp)
            aliases = made.pop("aliases")  # written in the layer's aliases/, not in its meta
            found = {**made, **update_here.sizes([*layers, tmp], aliases)}
            laps("updated in this process")
        else:
            found = _on_spark(spark, prev, layers, named, tmp, work, laps)
        meta = {
            **prev,
            "build": number + 1,
            "layers": [*prev["layers"], number + 1],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **found,
            "op_details": {**prev["op_details"], **collected.ops},
            "captures": [*prev["captures"], *collected.captures],
            "imports": [*prev["imports"], *(p.name for p in imported)],
            "timings": laps.total(),
        }
        return commit(folders, tmp, meta)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _on_spark(spark, prev: dict, layers: list[Path], named: DataFrame, tmp: Path, work: Path, laps: Laps) -> dict:
    # the layer's steps as Spark jobs; returns the meta entries it changes and what it added
    layer = _Layer(spark, prev, layers, work)
    layer.number(named)
    laps("numbering")
    layer.merge()
    laps("components")
    layer.split()
    laps("sets")
    added = layer.write(tmp)
    laps("write")
    sizes = sizes_of(spark, [*layer.layers, tmp], layer.aliases)
    return {"datasets": layer.datasets, "ops": layer.ops, "splits": layer.splits, "feeds": layer.feeds,
            "max_node": layer.max_node, **sizes, "added": added}  # fmt: skip


class _Layer:
    """The steps of one update, each kept (written and read back) for the next."""

    def __init__(self, spark: SparkSession, prev: dict, layers: list[Path], work: Path) -> None:
        self.spark, self.prev, self.layers, self.work = spark, prev, layers, work
        self.keep = materializer(spark, work)
        self.offset = prev["max_node"] + 1  # new rows are numbered from here
        self.aliases = read_aliases(layers[-1])

    def number(self, named: DataFrame) -> None:
        """The new triples, their ends numbered: rows met before keep their node,
        component and set; new rows are numbered from ``offset``. (``named`` is kept
        already: written and read back.)"""
        ends = named.select("src_dataset").union(named.select("dst_dataset")).distinct()
        self.datasets = extended(self.prev["datasets"], [r[0] for r in ends.collect()])
        self.ops = extended(self.prev["ops"], [r[0] for r in named.select("op").distinct().collect()])
        coded = self.keep(code(self.spark, named, self.datasets, self.ops))
        rows = self.keep(
            coded.select(F.col("src_ds").alias("ds"), F.col("src_rid").alias("rid"))
            .union(coded.select("dst_ds", "dst_rid"))
            .distinct()
        )
        earlier = len(self.prev["datasets"])
        touched = [r[0] for r in rows.select("ds").distinct().collect() if r[0] < earlier]
        met = None
        if touched:  # rows of earlier datasets: read from each layer's nodes, sorted by (ds, rid)
            nodes = union([read_written(self.spark, p / "nodes") for p in self.layers])
            met = nodes.where(F.col("ds").isin(touched)).join(rows, ["ds", "rid"], "left_semi")
            met = resolved(self.spark, met.select("ds", "rid", "node", "component", "cset"), "component", self.aliases)
        fresh = rows if met is None else rows.join(met.select("ds", "rid"), ["ds", "rid"], "left_anti")
        fresh = fresh.withColumn("node", F.monotonically_increasing_id() + F.lit(self.offset))
        no_set = F.lit(None).cast("long").alias("cset")
        fresh = fresh.select("ds", "rid", "node", F.col("node").alias("component"), no_set)
        known = self.keep(fresh if met is None else met.unionByName(fresh))
        counted = known.agg(F.count(F.when(F.col("node") >= self.offset, 1)), F.max("node")).first()
        self.fresh_count, top = int(counted[0]), counted[1]
        self.max_node = max(self.prev["max_node"], int(top if top is not None else -1))

        def end(side: str) -> DataFrame:
            return known.select(*[F.col(c).alias(f"{side}_{c}") for c in ("ds", "rid", "node", "component", "cset")])

        edges = coded.join(end("src"), ["src_ds", "src_rid"]).join(end("dst"), ["dst_ds", "dst_rid"])
        self.edges = self.keep(edges.withColumnRenamed("src_node", "src").withColumnRenamed("dst_node", "dst"))
        self.known = known

    def merge(self) -> None:
        """The components the new triples join: ``roots`` (label, the label naming it
        now), ``aliases`` updated, and every new row's component."""
        pairs = self.edges.select(F.col("src_component").alias("src"), F.col("dst_component").alias("dst"))
        roots = self.keep(connected(self.spark, pairs, self.work / "components"))
        merged = {
            int(r["node"]): int(r["component"])
            for r in roots.where((F.col("node") < self.offset) & (F.col("node") != F.col("component"))).collect()
        }
        self.merged = len(merged)
        # labels replaced before, now under a label this update replaced in turn
        self.aliases = {label: merged.get(into, into) for label, into in self.aliases.items()} | merged
        root = roots.select(F.col("node").alias("label"), F.col("component").alias("root"))
        known = self.known.join(root, F.col("component") == F.col("label"), "left")
        component = F.coalesce("root", "component").alias("component")
        self.known = self.keep(known.select("ds", "rid", "node", component, "cset"))
        self.roots = roots

    def split(self) -> None:
        """Sets for the new rows, and the split of every dataset (``sets.py``)."""
        new_feeds = {(r[0], r[1]) for r in self.edges.select("src_ds", "dst_ds").distinct().collect()}
        self.feeds = sorted({tuple(f) for f in self.prev["feeds"]} | new_feeds)
        self.splits = splits(self.feeds, len(self.datasets), self.prev["split_depth"])
        fresh = self.known.where(F.col("node") >= self.offset)
        sizes = union(
            [read_written(self.spark, p / "components").select("component", "nodes") for p in self.layers]
            + [fresh.groupBy("component").agg(F.count("*").alias("nodes"))]
        )
        touched = self.roots.select(F.col("component")).distinct()
        totals = resolved(self.spark, sizes, "component", self.aliases).join(touched, "component", "left_semi")
        large = totals.groupBy("component").agg(F.sum("nodes").alias("n"))
        large = large.where(F.col("n") >= self.prev["threshold"]).select("component")
        inner = self.edges.where((F.col("src") >= self.offset) & (F.col("dst") >= self.offset))
        labels = fresh.select("node", "component")
        sets = set_labels(self.spark, inner, labels, self.splits, large, self.work / "sets")
        found = sets.select("node", F.col("cset").alias("found"))
        known = self.known.join(found, "node", "left")
        cset = F.coalesce("cset", "found").alias("cset")
        self.known = self.keep(known.select("ds", "rid", "node", "component", cset))

    def write(self, tmp: Path) -> dict:
        """The layer's files; returns what it added."""
        src = self.known.select(F.col("node").alias("src"), "component", F.col("cset").alias("src_set"))
        dst = self.known.select(F.col("node").alias("dst"), F.col("cset").alias("dst_set"))
        sets = self.keep(self.edges.select(*TRIPLE_COLUMNS).join(src, "src").join(dst, "dst"))
        fresh = self.known.where(F.col("node") >= self.offset)
        write_triples(tmp, fresh, sets, self.prev["buckets"])
        # a component's new rows, new triples and new sets (a set named by a new row)
        new_sets = fresh.where(F.col("cset") >= self.offset).select("component", "cset").distinct()
        table = (
            sets.groupBy("component").agg(F.count("*").alias("edges"))
            .join(fresh.groupBy("component").agg(F.count("*").alias("nodes")), "component", "full")
            .join(new_sets.groupBy("component").agg(F.count("*").alias("sets")), "component", "left")
            .fillna(0, ["nodes", "edges", "sets"])
        )  # fmt: skip
        table.select("component", "nodes", "edges", "sets").write.parquet(str(tmp / "components"))
        fresh.groupBy("cset").agg(F.count("*").alias("nodes")).write.parquet(str(tmp / "sets"))
        aliases = pa.table({
            "component": pa.array(list(self.aliases), pa.int64()),
            "merged_into": pa.array(list(self.aliases.values()), pa.int64()),
        })  # fmt: skip
        (tmp / "aliases").mkdir()
        pq.write_table(aliases, tmp / "aliases" / "part-0.parquet")
        return {"triples": sets.count(), "nodes": self.fresh_count, "components_merged": self.merged}
