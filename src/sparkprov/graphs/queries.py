"""Lineage queries over a committed build of the lineage graph, answered in this process
from its Parquet files (no Spark): the recursive query (RQ, one DuckDB read of a hop's
buckets per hop), CCProv (the start's component read once, then walked in memory) and
CSProv (the sets the start's set depends on, found from the small table of set
dependencies, then their triples read once and walked). CCProv and CSProv read only
the row groups whose key range holds their component or sets. All give the same
triples; they differ in what they read.

>>> Trace(("a@1", 0), "backward", "rq", _empty(), 0).rows().num_rows
0
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InvalidArgument, SparkprovError
from ..store.layout import GraphFolders
from ..store.parquet import PairTable, spans
from .build import current_build

METHODS = ("rq", "ccprov", "csprov")
_COLUMNS = ["src", "dst", "op", "src_ds", "src_rid", "dst_ds", "dst_rid"]


class GraphNotBuilt(SparkprovError):
    """The store has no lineage graph yet (``sparkprov graph build``)."""


@dataclass(frozen=True)
class Trace:
    """The answer to a lineage query: the triples on the way from the start row."""

    start: tuple[str, int]
    direction: str  # backward (ancestors) or forward (descendants)
    method: str
    triples: pa.Table  # src_dataset, src_rid, dst_dataset, dst_rid, op
    read: int  # triples read from files to answer

    def rows(self) -> pa.Table:
        """The rows reached (``dataset, rid``), sorted, the start left out."""
        side = "src" if self.direction == "backward" else "dst"
        t = self.triples.select([f"{side}_dataset", f"{side}_rid"]).rename_columns(["dataset", "rid"])
        return t.group_by(["dataset", "rid"]).aggregate([]).sort_by([("dataset", "ascending"), ("rid", "ascending")])


def _empty_coded() -> pa.Table:
    return pa.table({c: pa.array([], pa.int64()) for c in _COLUMNS})


def _empty() -> pa.Table:
    return pa.table({"src_dataset": pa.array([], pa.string()), "src_rid": pa.array([], pa.int64()),
                     "dst_dataset": pa.array([], pa.string()), "dst_rid": pa.array([], pa.int64()),
                     "op": pa.array([], pa.string())})  # fmt: skip


def read_aliases(folder: Path) -> dict[int, int]:
    """The component labels merged into others by the updates up to build folder
    ``folder`` (``update.py``): ``{label: label naming it now}``."""
    path = Path(folder) / "aliases"
    if not path.is_dir():
        return {}
    table = pq.read_table(path)
    return dict(zip(table.column("component").to_pylist(), table.column("merged_into").to_pylist(), strict=True))


class StoredGraph:
    """The build ``CURRENT`` names (its layers: a build and the updates on top), read
    with DuckDB."""

    def __init__(self, folders: GraphFolders) -> None:
        number = current_build(folders)
        if number is None:
            raise GraphNotBuilt(f"no lineage graph in {folders.root.parent}: build it (sparkprov graph build)")
        self.folder = folders.build(number)
        self.meta = json.loads((self.folder / "meta.json").read_text())
        self.layers = [folders.build(n) for n in self.meta.get("layers", [number])]
        self._aliases = read_aliases(self.folder)
        self._labels: dict[int, list[int]] = {}  # a component's labels: its own and those merged into it
        for label, into in self._aliases.items():
            self._labels.setdefault(into, [into]).append(label)
        self.datasets: list[str] = self.meta["datasets"]
        self._ds = {name: i for i, name in enumerate(self.datasets)}
        self.ops: list[str] = self.meta["ops"]
        self.buckets: int = self.meta["buckets"]
        self._con = duckdb.connect()
        self._deps: pa.Table | None = None  # set dependencies, read once
        self._by_key: dict[tuple[str, str], PairTable] = {}  # a file's row groups by key range, read once
        self._nodes: PairTable | None = None
        self._by_component: dict[Path, bool] = {}  # per layer: whether by_set is bucketed by component

    def _files(self, layout: str, buckets=None, layers: list[Path] | None = None) -> list[str]:
        # the files of some buckets of ``layout`` (of every bucket: None), in every layer
        # (or in ``layers``)
        folders = ["bucket=*"] if buckets is None else [f"bucket={int(b)}" for b in buckets]
        return sorted(
            str(p) for f in layers or self.layers for b in folders for p in (f / layout).glob(f"{b}/*.parquet")
        )

    def _all(self, layout: str) -> list[str]:
        return sorted(str(p) for f in self.layers for p in (f / layout).glob("*.parquet"))

    def labels(self, components) -> np.ndarray:
        """Every label the triples of ``components`` (labels of any layer) are filed
        under in the layers."""
        named = {self._aliases.get(int(c), int(c)) for c in np.atleast_1d(components)}
        found = [label for c in named for label in self._labels.get(c, [c])]
        return np.unique(np.asarray(found, np.int64))

    def node(self, dataset: str, rid: int) -> tuple[int, int, int]:
        """``(node, component, connected set)`` of row ``rid`` of ``dataset``."""
        ds = self._ds.get(dataset)
        if ds is None:
            close = [d for d in self.datasets if d.split("@")[0] == dataset.split("@")[0]][:5]
            hint = f"; datasets of that name: {', '.join(close)}" if close else ""
            raise InvalidArgument(f"no dataset {dataset!r} in the lineage graph{hint}")
        found = self._rows_of(ds, np.array([rid], np.int64))
        if not found.num_rows:
            raise InvalidArgument(f"row {rid} of {dataset!r} is in no triple of the lineage graph")
        node, component, cset = (found.column(c)[0].as_py() for c in ("node", "component", "cset"))
        return node, self._aliases.get(component, component), cset

    def _rows_of(self, ds: int, rids: np.ndarray) -> pa.Table:
        # the nodes of rows ``rids`` of dataset ``ds``: node files are sorted by (ds, rid),
        # so a dataset's rows are a block whose row groups the rids narrow down
        if self._nodes is None:
            self._nodes = PairTable(self._all("nodes"), "rid", ("node", "ds", "rid", "component", "cset"), bound="ds")
        found = self._nodes.lookup(np.unique(np.asarray(rids, np.int64)), within=np.array([ds], np.int64))
        return found.filter(pc.equal(found["ds"], ds))

    def trace(self, dataset: str, rid: int, direction: str = "backward", method: str = "ccprov") -> Trace:
        """The triples from row ``rid`` of ``dataset``, backward to its ancestors or
        forward to its descendants, found by ``method`` (``rq``, ``ccprov`` or ``csprov``)."""
        if direction not in ("backward", "forward"):
            raise InvalidArgument(f"direction is 'backward' or 'forward', not {direction!r}")
        if method not in METHODS:
            raise InvalidArgument(f"method is one of {', '.join(METHODS)}, not {method!r}")
        node, component, cset = self.node(dataset, rid)
        if method == "ccprov":
            edges = self._of_components(np.array([component], np.int64))
            found, read = _walk(edges, node, direction), edges.num_rows
        elif method == "csprov":
            edges = self._of_sets(self._set_lineage(cset, direction), component)
            found, read = _walk(edges, node, direction), edges.num_rows
        else:
            found, read = self._recursive(node, direction)
        return Trace((dataset, int(rid)), direction, method, self._named(found), read)

    def reach(self, dataset: str, rids: np.ndarray, direction: str = "backward") -> pa.Table:
        """The triples from every row ``rids`` of ``dataset`` (CCProv: their components'
        triples only), named as :meth:`trace` names them; rows in no triple reach none."""
        ds = self._ds.get(dataset)
        if ds is None or not len(rids):
            return self._named(_empty_coded())
        found = self._rows_of(ds, rids)
        edges = self._of_components(np.unique(found.column("component").to_numpy()))
        return self._named(_walk(edges, found.column("node").to_numpy(), direction))

    def _of_components(self, components: np.ndarray) -> pa.Table:
        # a component's triples, under every label it had when a layer filed them
        labels = self.labels(components)
        return self._read_in(self._files("by_component", np.unique(labels % self.buckets)), "component", labels)

    def _read_in(self, files: list[str], column: str, values: np.ndarray, labels: np.ndarray | None = None) -> pa.Table:
        # the triples of ``files`` whose ``column`` is one of ``values``: only the row
        # groups whose range holds a value (and, given ``labels``, a component's label)
        values = np.unique(np.asarray(values, np.int64))
        parts = []
        for path in files:
            if (path, column) not in self._by_key:
                bound = None if labels is None else "component"
                self._by_key[path, column] = PairTable([path], column, (*_COLUMNS, column), bound=bound)
            parts.append(self._by_key[path, column].lookup(values, within=labels).select(_COLUMNS))
        return pa.concat_tables(parts) if parts else _empty_coded()

    def _read(self, files: list[str], where: str, params: dict) -> pa.Table:
        if not files:
            return _empty_coded()
        sql = f"SELECT {', '.join(_COLUMNS)} FROM read_parquet($files) WHERE {where}"
        return self._con.execute(sql, {"files": files, **params}).fetch_arrow_table()

    def _set_lineage(self, cset: int, direction: str) -> np.ndarray:
        """``cset`` and every set it depends on (backward) or that depends on it."""
        if self._deps is None:
            files = self._all("set_dependencies")
            none = pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64())})
            self._deps = (
                none
                if not files
                else self._con.execute(
                    "SELECT src_set AS src, dst_set AS dst FROM read_parquet($files)", {"files": files}
                ).fetch_arrow_table()
            )
        reached = _walk(self._deps, cset, direction)
        far = "src" if direction == "backward" else "dst"
        return np.union1d([cset], reached.column(far).to_numpy()).astype(np.int64)

    def _of_sets(self, sets: np.ndarray, component: int) -> pa.Table:
        # every triple whose dst lies in one of the sets (all in ``component``): the
        # triples into their nodes, from the row groups of the component's block. A
        # layer's files that may hold it: its labels' buckets where the layer's by_set is
        # bucketed by component, else (a build before that layout: by dst_set) every one
        labels = self.labels([component])
        buckets = np.unique(labels % self.buckets)
        files = [
            p for layer in self.layers
            for p in self._files("by_set", buckets if self._sets_by_component(layer) else None, [layer])
        ]  # fmt: skip
        return self._read_in(files, "dst_set", sets, labels=labels)

    def _sets_by_component(self, layer: Path) -> bool:
        # whether ``layer``'s by_set is bucketed by component (its files have the column)
        if layer not in self._by_component:
            first = next(iter(self._files("by_set", None, [layer])), None)
            self._by_component[layer] = first is not None and "component" in pq.read_schema(first).names
        return self._by_component[layer]

    def _recursive(self, node: int, direction: str) -> tuple[pa.Table, int]:
        # one read per hop: backward, the buckets of the frontier's nodes (by dst);
        # forward, every bucket (no layout is keyed by src)
        near, far = ("dst", "src") if direction == "backward" else ("src", "dst")
        every = range(self.buckets)
        seen = np.array([node], dtype=np.int64)
        frontier = seen
        parts, read = [], 0
        while len(frontier):
            buckets = np.unique(frontier % self.buckets) if direction == "backward" else every
            self._con.register("frontier", pa.table({"n": frontier}))
            part = self._read(self._files("by_dst", buckets), f"{near} IN (SELECT n FROM frontier)", {})
            self._con.unregister("frontier")
            read += part.num_rows
            parts.append(part)
            reached = np.unique(part.column(far).to_numpy())
            frontier = np.setdiff1d(reached, seen, assume_unique=True)
            seen = np.union1d(seen, frontier)
        return pa.concat_tables(parts), read

    def _named(self, edges: pa.Table) -> pa.Table:
        names = pa.array(self.datasets, pa.string())
        ops = pa.array(self.ops, pa.string())
        table = pa.table({
            "src_dataset": names.take(edges.column("src_ds")),
            "src_rid": edges.column("src_rid"),
            "dst_dataset": names.take(edges.column("dst_ds")),
            "dst_rid": edges.column("dst_rid"),
            "op": ops.take(edges.column("op")),
        })  # fmt: skip
        keys = [(c, "ascending") for c in ("dst_dataset", "dst_rid", "src_dataset", "src_rid", "op")]
        return table.group_by(table.column_names).aggregate([]).sort_by(keys)

    def stats(self) -> dict:
        """Sizes and timings of the build, and its components' sizes."""
        aliases = pa.table({"label": pa.array(list(self._aliases), pa.int64()),
                            "into": pa.array(list(self._aliases.values()), pa.int64())})  # fmt: skip
        self._con.register("aliases", aliases)
        try:
            large = self._con.execute(
                "WITH c AS (SELECT coalesce(a.into, c.component) AS component, sum(c.nodes) AS nodes "
                "FROM read_parquet($files) c LEFT JOIN aliases a ON c.component = a.label GROUP BY 1) "
                "SELECT count(*) FILTER (WHERE nodes >= 1000), count(*) FILTER (WHERE nodes < 1000) FROM c",
                {"files": self._all("components")},
            ).fetchone()
        finally:
            self._con.unregister("aliases")
        keys = ("build", "created", "nodes", "edges", "components", "largest_component", "sets", "largest_set",
                "set_dependencies", "threshold", "split_depth", "timings")  # fmt: skip
        return {k: self.meta[k] for k in keys} | {
            "components_1000_nodes_or_more": large[0],
            "components_smaller": large[1],
            "datasets": len(self.datasets),
            "captures": len(self.meta["captures"]),
            "imports": len(self.meta["imports"]),
            "bytes": sum(p.stat().st_size for f in self.layers for p in Path(f).rglob("*.parquet")),
            "layers": len(self.layers),
        }


def _walk(edges: pa.Table, start: int | np.ndarray, direction: str) -> pa.Table:
    """The edges reachable from ``start`` (a node or several; against their direction
    when backward)."""
    near, far = ("dst", "src") if direction == "backward" else ("src", "dst")
    keys, other = edges.column(near).to_numpy(), edges.column(far).to_numpy()
    order = np.argsort(keys, kind="stable")
    keys, other = keys[order], other[order]
    seen = np.unique(np.asarray(start, dtype=np.int64))
    frontier, taken = seen, []
    while len(frontier):
        left, right = np.searchsorted(keys, frontier, "left"), np.searchsorted(keys, frontier, "right")
        at = spans(left, right - left)
        taken.append(at)
        reached = np.unique(other[at])
        frontier = np.setdiff1d(reached, seen, assume_unique=True)
        seen = np.union1d(seen, frontier)
    rows = order[np.concatenate(taken)] if taken else np.array([], dtype=np.int64)
    return edges.take(pa.array(rows))
