"""A small update of the lineage graph made in this process: the layer ``update.py``
makes on Spark (its docstring says what a layer holds and why), from new triples read
into Arrow (``build_here.small_triples``: at most ``LOCAL_TRIPLES``, local files), the
earlier layers' nodes and sizes read by DuckDB, components merged by SciPy.

>>> _resolved(np.array([4, 9, 7]), {4: 2, 9: 2})
array([2, 2, 7])
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .build_here import code, write, write_triples
from .components import local_components
from .sets import splits

_NODES = ["ds", "rid", "node", "component", "cset"]  # a layer's nodes, as update.py writes them


def extended(names: list[str], found: list[str]) -> list[str]:
    """``names`` and then the new ones of ``found``, sorted: earlier names keep their numbers."""
    return names + sorted(set(found) - set(names))


def _resolved(labels: np.ndarray, aliases: dict[int, int]) -> np.ndarray:
    # component labels as the latest merges name them
    if not aliases:
        return labels
    old = np.fromiter(aliases, np.int64, len(aliases))
    new = np.fromiter(aliases.values(), np.int64, len(aliases))
    order = np.argsort(old)
    old, new = old[order], new[order]
    at = np.minimum(np.searchsorted(old, labels), len(old) - 1)
    return np.where(old[at] == labels, new[at], labels)


def _files(layers: list[Path], layout: str) -> list[str]:
    return [str(p) for f in layers for p in sorted((f / layout).glob("*.parquet"))]


def layer(triples: pa.Table, prev: dict, layers: list[Path], aliases: dict[int, int], tmp: Path) -> dict:
    """Write the layer of ``triples`` (``graphs.triples.NAMED`` columns) on top of the
    build folders ``layers`` (``prev``: the current build's meta) to the new ``tmp``;
    returns the meta entries the layer changes, its ``aliases`` and what it ``added``."""
    datasets = extended(prev["datasets"], [d for c in ("src_dataset", "dst_dataset")
                                             for d in pc.unique(triples[c]).to_pylist()])  # fmt: skip
    ops = extended(prev["ops"], pc.unique(triples["op"]).to_pylist())
    offset = prev["max_node"] + 1  # rows first met here are numbered from it
    coded = code(triples, datasets, ops)
    with duckdb.connect() as con:
        con.register("coded", coded)
        con.execute(
            "CREATE TABLE ends AS "
            "SELECT src_ds AS ds, src_rid AS rid FROM coded UNION SELECT dst_ds, dst_rid FROM coded"
        )
        earlier = len(prev["datasets"])
        # rows of earlier datasets keep their node, component and set (each layer's nodes)
        met = con.execute(
            "SELECT n.ds, n.rid, n.node, n.component, n.cset FROM read_parquet($files) n "
            "SEMI JOIN ends e ON n.ds = e.ds AND n.rid = e.rid WHERE n.ds < $earlier",
            {"files": _files(layers, "nodes"), "earlier": earlier},
        ).arrow()
        con.register("met", met)
        fresh = con.execute(
            "SELECT ds, rid, CAST(row_number() OVER (ORDER BY ds, rid) - 1 + $offset AS BIGINT) AS node FROM "
            "(SELECT * FROM ends ANTI JOIN met USING (ds, rid)) ORDER BY ds, rid",
            {"offset": offset},
        ).arrow()
        nodes = np.concatenate([met["node"].to_numpy(), fresh["node"].to_numpy()])
        component = np.concatenate([_resolved(met["component"].to_numpy(), aliases), fresh["node"].to_numpy()])
        known = pa.table({"ds": pa.concat_arrays([met["ds"].combine_chunks(), fresh["ds"].combine_chunks()]),
                          "rid": pa.concat_arrays([met["rid"].combine_chunks(), fresh["rid"].combine_chunks()]),
                          "node": nodes})  # fmt: skip
        con.register("known", known)
        edges = con.execute(
            "SELECT s.node AS src, d.node AS dst, c.op, c.src_ds, c.src_rid, c.dst_ds, c.dst_rid FROM coded c "
            "JOIN known s ON c.src_ds = s.ds AND c.src_rid = s.rid "
            "JOIN known d ON c.dst_ds = d.ds AND c.dst_rid = d.rid"
        ).arrow()
        order = np.argsort(nodes)
        nodes, component = nodes[order], component[order]
        cset = np.concatenate([met["cset"].to_numpy(zero_copy_only=False), np.full(len(fresh), -1)])[order]
        ds = known["ds"].to_numpy()[order]
        rid = known["rid"].to_numpy()[order]

        def at(ids: np.ndarray) -> np.ndarray:
            return np.searchsorted(nodes, ids)

        src, dst = at(edges["src"].to_numpy()), at(edges["dst"].to_numpy())
        # components merged: the new triples' ends named by their components
        roots = local_components(component[src], component[dst])
        labels, root = roots["node"].to_numpy(), roots["component"].to_numpy()
        merged = {int(a): int(b) for a, b in zip(labels, root) if a < offset and a != b}
        aliases = {label: merged.get(into, into) for label, into in aliases.items()} | merged
        component = _resolved(component, {int(a): int(b) for a, b in zip(labels, root) if a != b})
        # sets of the new rows: their component's, or (a component over the threshold) their own
        new_feeds = zip(edges["src_ds"].to_numpy().tolist(), edges["dst_ds"].to_numpy().tolist())
        feeds = sorted({tuple(f) for f in prev["feeds"]} | set(new_feeds))
        split = splits(feeds, len(datasets), prev["split_depth"])
        fresh_at = nodes >= offset
        sizes = con.execute(
            "SELECT component, nodes FROM read_parquet($files)", {"files": _files(layers, "components")}
        ).arrow()
        counted = np.concatenate([_resolved(sizes["component"].to_numpy(), aliases), component[fresh_at]])
        weights = np.concatenate([sizes["nodes"].to_numpy(), np.ones(fresh_at.sum(), np.int64)])
        large_labels = _large(counted, weights, set(np.unique(root).tolist()), prev["threshold"])
        cset[fresh_at] = _fresh_sets(nodes, component, fresh_at, src, dst, edges, split, large_labels)
    table = pa.table({"ds": pa.array(ds, pa.int32()), "rid": rid, "node": nodes, "component": component, "cset": cset})
    fresh_nodes = table.filter(pa.array(fresh_at)).sort_by([("ds", "ascending"), ("rid", "ascending")])
    sets = edges.append_column("component", pa.array(component[src]))
    sets = sets.append_column("src_set", pa.array(cset[src])).append_column("dst_set", pa.array(cset[dst]))
    write_triples(fresh_nodes, sets, tmp, prev["buckets"])
    _write_sizes(tmp, fresh_nodes, sets, offset)
    (tmp / "aliases").mkdir()
    pq.write_table(pa.table({"component": pa.array(list(aliases), pa.int64()),
                             "merged_into": pa.array(list(aliases.values()), pa.int64())}),
                   tmp / "aliases" / "part-0.parquet")  # fmt: skip
    return {
        "datasets": datasets,
        "ops": ops,
        "splits": split,
        "feeds": feeds,
        "max_node": max(prev["max_node"], int(nodes.max(initial=-1))),
        "aliases": aliases,
        "added": {"triples": sets.num_rows, "nodes": int(fresh_at.sum()), "components_merged": len(merged)},
    }


def _large(counted: np.ndarray, weights: np.ndarray, touched: set[int], threshold: int) -> np.ndarray:
    # the components the new triples touched that hold ``threshold`` nodes or more
    labels, inverse = np.unique(counted, return_inverse=True)
    totals = np.bincount(inverse, weights=weights)
    return np.array([c for c, n in zip(labels.tolist(), totals.tolist()) if n >= threshold and c in touched], np.int64)


def _fresh_sets(nodes, component, fresh_at, src, dst, edges: pa.Table, split: list[int], large: np.ndarray):
    # a new row's set: its component's, unless the component is large; then the
    # smallest new row it reaches by new triples within one split (or its own)
    cset = component[fresh_at].copy()
    big = np.isin(component, large) & fresh_at
    if not big.any():
        return cset
    by_split = np.asarray(split)
    inner = (fresh_at[src] & fresh_at[dst] & big[src]
             & (by_split[edges["src_ds"].to_numpy()] == by_split[edges["dst_ds"].to_numpy()]))  # fmt: skip
    own = np.where(big, nodes, component)
    if inner.any():
        found = local_components(nodes[src[inner]], nodes[dst[inner]])
        own[np.searchsorted(nodes, found["node"].to_numpy())] = found["component"].to_numpy()
    return own[fresh_at]


def _write_sizes(tmp: Path, fresh: pa.Table, sets: pa.Table, offset: int) -> None:
    # per component: its new rows, new triples and new sets (a set named by a new row);
    # per set: its new rows
    with duckdb.connect() as con:
        con.register("fresh", fresh)
        con.register("sets", sets)
        table = con.execute(
            "SELECT component, coalesce(n.nodes, 0) AS nodes, coalesce(e.edges, 0) AS edges, "
            "coalesce(s.sets, 0) AS sets FROM "
            "(SELECT component, count(*) AS edges FROM sets GROUP BY 1) e "
            "FULL JOIN (SELECT component, count(*) AS nodes FROM fresh GROUP BY 1) n USING (component) "
            "LEFT JOIN (SELECT component, count(DISTINCT cset) AS sets FROM fresh WHERE cset >= $offset GROUP BY 1) s "
            "USING (component) ORDER BY component",
            {"offset": offset},
        ).arrow()
        write(table, tmp / "components")
        write(con.execute("SELECT cset, count(*) AS nodes FROM fresh GROUP BY 1 ORDER BY 1").arrow(), tmp / "sets")


def sizes(layers: list[Path], aliases: dict[int, int]) -> dict:
    """The sizes of the graph held by build folders ``layers`` (``build.sizes_of``, read
    here)."""
    with duckdb.connect() as con:
        components = con.execute(
            "SELECT component, nodes, edges, sets FROM read_parquet($files)", {"files": _files(layers, "components")}
        ).arrow()
        labels = _resolved(components["component"].to_numpy(), aliases)
        con.register("per", components.set_column(0, "component", pa.array(labels)))
        summary = con.execute(
            "SELECT count(*), sum(nodes), sum(edges), max(nodes), sum(sets) FROM "
            "(SELECT component, sum(nodes) AS nodes, sum(edges) AS edges, sum(sets) AS sets FROM per GROUP BY 1)"
        ).fetchone()
        largest_set = con.execute(
            "SELECT max(n) FROM (SELECT cset, sum(nodes) AS n FROM read_parquet($files) GROUP BY 1)",
            {"files": _files(layers, "sets")},
        ).fetchone()[0]
        deps = con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT src_set, dst_set FROM read_parquet($files))",
            {"files": _files(layers, "set_dependencies")},
        ).fetchone()[0]
    count, nodes, edges, largest, sets = summary
    return {"nodes": int(nodes or 0), "edges": int(edges or 0), "components": int(count),
            "largest_component": int(largest or 0), "sets": int(sets or 0), "largest_set": int(largest_set or 0),
            "set_dependencies": int(deps)}  # fmt: skip
