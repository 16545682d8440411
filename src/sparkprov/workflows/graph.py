"""A workflow's provenance graph in memory, and the queries Lipstick defines on it
(section 4): ZoomOut and ZoomIn, deletion propagation, dependency and subgraph queries.

The graph is read from the node and edge tables each execution stored
(``graph_build.py``). Edges are kept as arrays (out-edges by source, in CSR form) for
deletion propagation, which needs every node's in-degree and label; ancestors and
descendants are walked by rustworkx.

A view is the fine graph with some modules zoomed out: their invocations'
intermediate nodes (Definition 4.1: the operations and black boxes between their inputs and outputs)
and state nodes removed, with the base tuples only those state nodes used, and one
node per invocation (kind ``module``) joining its inputs to its outputs. Zooming is a
change of the set of zoomed-out modules, so ``g.zoom_out(M).zoom_in(M)`` is ``g``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgument, UnsupportedOperation
from ..store.parquet import spans

_JOINT = ("·", "⊗")  # a node gone when any one of its inputs is (Definition 4.2)


@dataclass(frozen=True)
class Deletion:
    """What deleting some nodes takes with it (Definition 4.2)."""

    graph: ProvenanceGraph
    deleted: np.ndarray  # the nodes given
    removed: np.ndarray  # every node gone, the given ones included (ids, sorted)
    affected: np.ndarray  # nodes kept whose values may change: below a group (an aggregate) that lost rows

    @property
    def tuples(self) -> pa.Table:
        """The rows (outputs and state rows) gone: dataset, version, rid."""
        return self.graph.tuples_of(self.removed)

    @property
    def changed(self) -> pa.Table:
        """The rows kept whose values may differ: an aggregate below them lost rows.
        Where a filter or join reads such a value, re-running may also drop the row
        (or make another): the graph follows derivations, not values."""
        return self.graph.tuples_of(self.affected)

    def survives(self, node: int) -> bool:
        i = np.searchsorted(self.removed, node)
        return not (i < len(self.removed) and self.removed[i] == node)


class ProvenanceGraph:
    """A workflow's provenance graph (nodes and edges as Arrow tables), or a view of it
    with some modules zoomed out."""

    def __init__(
        self,
        nodes: pa.Table,
        edges: pa.Table,
        tuples: pa.Table,
        not_monotone: dict[int, list[str]] | None = None,
        zoomed: frozenset[str] = frozenset(),
        fine: ProvenanceGraph | None = None,
    ) -> None:
        self.nodes, self.edges, self._tuples = nodes, edges, tuples
        self.zoomed = zoomed
        self._fine = fine if fine is not None else self
        self._not_monotone = not_monotone or {}  # invocation node -> operators a deletion may not follow
        self._codes: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._ids = nodes.column("id").to_numpy()
        if len(self._ids) > 1 and not (np.diff(self._ids) > 0).all():
            order = np.argsort(self._ids)
            self.nodes = nodes.take(order)
            self._ids = self._ids[order]

    def __repr__(self) -> str:
        zoomed = f", zoomed out: {', '.join(sorted(self.zoomed))}" if self.zoomed else ""
        return f"ProvenanceGraph({self.nodes.num_rows} nodes, {self.edges.num_rows} edges{zoomed})"

    # ---- lookups

    def _index(self, nodes) -> np.ndarray:
        nodes = np.atleast_1d(np.asarray(nodes, dtype=np.int64))
        at = np.searchsorted(self._ids, nodes)
        bad = (at >= len(self._ids)) | (self._ids[np.minimum(at, len(self._ids) - 1)] != nodes)
        if bad.any():
            raise InvalidArgument(f"node {int(nodes[bad][0])} is not in this graph ({self!r})")
        return at

    def _column(self, name: str) -> np.ndarray:
        return self.nodes.column(name).to_numpy(zero_copy_only=False)

    @cached_property
    def _labels(self) -> np.ndarray:
        return self._column("label")

    def tuple(self, dataset: str, rid: int, version: int) -> int:
        """The node of row ``rid`` of ``dataset`` (``version``: the execution that wrote
        an input or output, or a state table's version)."""
        found = self._fine._tuple_index.get((dataset, version, rid))  # views share the fine graph's
        if found is None:
            raise InvalidArgument(
                f"row {rid} of {dataset!r} version {version} has no node: no module used it, or it is not in "
                "the executions loaded"
            )
        return found

    @cached_property
    def _tuple_index(self) -> dict[tuple[str, int, int], int]:
        t = self._tuples
        keys = zip(t.column("dataset").to_pylist(), t.column("version").to_pylist(), t.column("rid").to_pylist())
        return dict(zip(keys, t.column("node").to_pylist()))

    def tuples_of(self, nodes: np.ndarray) -> pa.Table:
        """The rows (dataset, version, rid) the nodes stand for, where they stand for one."""
        t = self._tuples
        keep = np.isin(t.column("node").to_numpy(), nodes)
        return t.filter(pa.array(keep)).select(["dataset", "version", "rid", "node"])

    # ---- adjacency

    @cached_property
    def _edge_positions(self) -> tuple[np.ndarray, np.ndarray]:
        # every edge's ends as node positions (both adjacency forms are made from them)
        return self._index(self.edges.column("src").to_numpy()), self._index(self.edges.column("dst").to_numpy())

    @cached_property
    def _csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # out-edges by source (indptr, targets) and in-degrees, over node positions
        n = len(self._ids)
        src, dst = self._edge_positions
        order = np.argsort(src, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        return indptr, dst[order], np.bincount(dst, minlength=n)

    @cached_property
    def _joint(self) -> np.ndarray:
        return np.isin(self._labels, list(_JOINT))

    def _out_edges(self, positions: np.ndarray) -> np.ndarray:
        """The targets of every out-edge of the nodes at ``positions`` (repeats kept)."""
        indptr, targets, _ = self._csr
        left = indptr[positions]
        return targets[spans(left, indptr[positions + 1] - left)]

    @cached_property
    def _rx(self):
        import rustworkx as rx

        g = rx.PyDiGraph(check_cycle=False, multigraph=True)
        g.add_nodes_from(range(len(self._ids)))
        src, dst = self._edge_positions
        g.add_edges_from_no_data(list(zip(src.tolist(), dst.tolist())))
        return g

    def ancestors(self, node: int) -> np.ndarray:
        """Every node ``node`` was derived from (ids, sorted)."""
        import rustworkx as rx

        return np.sort(self._ids[list(rx.ancestors(self._rx, int(self._index(node)[0])))])

    def descendants(self, node: int) -> np.ndarray:
        """Every node derived from ``node`` (ids, sorted)."""
        import rustworkx as rx

        return np.sort(self._ids[list(rx.descendants(self._rx, int(self._index(node)[0])))])

    def subgraph(self, node: int) -> np.ndarray:
        """Lipstick's subgraph query: ``node``, its ancestors and descendants, and the
        other parents of its descendants (what deciding their existence needs)."""
        down = self.descendants(node)
        parents = (
            [self._ids[list(self._rx.predecessor_indices(int(i)))] for i in self._index(down)] if len(down) else []
        )
        return np.unique(np.concatenate([[node], self.ancestors(node), down, *parents]).astype(np.int64))

    # ---- deletion propagation and dependency

    def delete(self, nodes: int | Iterable[int], allow_inexact: bool = False) -> Deletion:
        """Definition 4.2: remove ``nodes``, then every node whose inputs are all gone,
        or labelled ``·`` or ``⊗`` with one input gone. Raises ``UnsupportedOperation``
        when the deletion reaches an invocation whose module has an operator over which
        removing rows can also add or change rows (an anti or outer join, a limit, a
        Python function over groups): the graph cannot say what re-running would give
        there. ``allow_inexact`` returns the graph's answer anyway."""
        start = np.unique(self._index(list(nodes) if isinstance(nodes, Iterable) else [nodes]))
        _, _, indegree = self._csr
        gone = np.zeros(len(self._ids), dtype=bool)
        lost = np.zeros(len(self._ids), dtype=np.int64)  # inputs gone, per node
        gone[start] = True
        frontier = start
        # level by level (the answer is the same fixpoint in any order): each node gone
        # hands its loss to its out-edges once
        while len(frontier):
            reached = self._out_edges(frontier)
            np.add.at(lost, reached, 1)
            candidates = np.unique(reached)
            candidates = candidates[~gone[candidates]]
            frontier = candidates[self._joint[candidates] | (lost[candidates] == indegree[candidates])]
            gone[frontier] = True
        removed = self._ids[gone]
        # groups that lost rows (their values change), and everything derived from them
        changed = ~gone & (lost > 0) & self._column("values")
        frontier = np.flatnonzero(changed)
        while len(frontier):
            reached = np.unique(self._out_edges(frontier))
            frontier = reached[~changed[reached]]
            changed[frontier] = True
        affected_ids = self._ids[changed & ~gone]
        if not allow_inexact:
            self._check_monotone(np.concatenate([removed, affected_ids]))
        return Deletion(self, self._ids[start], removed, affected_ids)

    def _check_monotone(self, reached: np.ndarray) -> None:
        if not self._not_monotone:
            return
        invocations = np.unique(self._column("invocation")[self._index(reached)])
        for inv in invocations.tolist():
            ops = self._not_monotone.get(inv)
            if ops:
                module = self._fine._column("module")[self._fine._index(inv)[0]]
                raise UnsupportedOperation(
                    f"deleting these rows reaches module {module!r}, whose {ops[0]!r} can add or change rows when "
                    "rows are removed: the graph cannot say what re-running would give (allow_inexact=True gives "
                    "the graph's answer)"
                )

    def depends(self, node: int, on: int | Iterable[int]) -> bool:
        """Whether ``node`` depends on ``on`` (Lipstick 4.3): it is gone once ``on`` is deleted."""
        return not self.delete(on).survives(node)

    # ---- zoom

    def zoom_out(self, modules: str | Iterable[str]) -> ProvenanceGraph:
        """ZoomOut (section 4.1): the modules' invocations shown as one node each."""
        return self._fine._view(self.zoomed | self._modules(modules))

    def zoom_in(self, modules: str | Iterable[str]) -> ProvenanceGraph:
        """ZoomIn: the modules' invocations shown in full again."""
        return self._fine._view(self.zoomed - self._modules(modules))

    def coarse(self) -> ProvenanceGraph:
        """Every module zoomed out: invocations, their inputs and outputs."""
        return self.zoom_out(self.modules)

    @cached_property
    def modules(self) -> list[str]:
        if self._fine is not self:  # a view's modules are its fine graph's (asked at every zoom)
            return self._fine.modules
        codes, names = self._coded("module")
        return sorted({names[c] for c in np.unique(codes[self._is("kind", ["invocation"])]).tolist()})

    def _modules(self, modules: str | Iterable[str]) -> frozenset[str]:
        wanted = frozenset([modules] if isinstance(modules, str) else modules)
        unknown = sorted(wanted - set(self.modules))
        if unknown:
            raise InvalidArgument(f"no module {unknown[0]!r} in this graph; modules: {', '.join(self.modules)}")
        return wanted

    def _coded(self, name: str) -> tuple[np.ndarray, list[str]]:
        # a string column as codes and their values: masks over a million nodes are
        # compared as small integers (zooming is asked of the fine graph, many times)
        found = self._codes.get(name)
        if found is None:
            encoded = self.nodes.column(name).combine_chunks().dictionary_encode()
            codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)  # -1: no value
            found = (codes, encoded.dictionary.to_pylist())
            self._codes[name] = found
        return found

    def _is(self, column: str, values: Iterable[str]) -> np.ndarray:
        codes, names = self._coded(column)
        return np.isin(codes, [i for i, n in enumerate(names) if n in set(values)])

    def _view(self, zoomed: frozenset[str]) -> ProvenanceGraph:
        if not zoomed:
            return self
        nodes, edges, ids = self.nodes, self.edges, self._ids
        src, dst = self._edge_positions
        hidden_module = self._is("module", zoomed)
        # Definition 4.1: an invocation's intermediate nodes are the operations between
        # its inputs and outputs; with its state nodes, they go
        drop = hidden_module & self._is("kind", ["op", "blackbox", "state"])
        keep_edge = ~drop[src] & ~drop[dst]
        # base tuples used by no node that stays
        fed_dropped = np.zeros(len(ids), dtype=bool)
        fed_dropped[src[self._is("kind", ["tuple"])[src] & drop[dst]]] = True
        still_used = np.zeros(len(ids), dtype=bool)
        still_used[src[keep_edge & fed_dropped[src]]] = True
        orphan = fed_dropped & ~still_used
        drop |= orphan
        keep_edge &= ~orphan[src]
        # one node per zoomed-out invocation, from its inputs to its outputs; ids below
        # every stored one, ascending (a view's nodes stay sorted by id)
        at = np.flatnonzero(self._is("kind", ["invocation"]) & hidden_module)[::-1]
        invocations = ids[at]
        zoom_ids = -1 - invocations
        inv = self._column("invocation")
        in_nodes = hidden_module & self._is("kind", ["input"])
        out_nodes = hidden_module & self._is("kind", ["output"])
        ascending = invocations[::-1]

        def to_zoom(of: np.ndarray) -> np.ndarray:
            return zoom_ids[::-1][np.searchsorted(ascending, of)]

        new_src = np.concatenate([ids[in_nodes], to_zoom(inv[out_nodes])])
        new_dst = np.concatenate([to_zoom(inv[in_nodes]), ids[out_nodes]])
        names = self.nodes.column("module").take(pa.array(at)).to_pylist()
        added = pa.table(
            {
                "id": zoom_ids,
                "kind": ["module"] * len(zoom_ids),
                "label": names,
                "module": names,
                "execution": self._column("execution")[at],
                "invocation": invocations,
                "dataset": pa.nulls(len(zoom_ids), pa.string()),
                "version": np.full(len(zoom_ids), -1, dtype=np.int32),
                "rid": np.full(len(zoom_ids), -1, dtype=np.int64),
                "values": np.zeros(len(zoom_ids), dtype=bool),
            },
            schema=nodes.schema,
        )
        view_nodes = pa.concat_tables([added, nodes.filter(pa.array(~drop))])
        view_edges = pa.concat_tables(
            [edges.filter(pa.array(keep_edge)), pa.table({"src": new_src, "dst": new_dst}, schema=edges.schema)]
        )
        return ProvenanceGraph(view_nodes, view_edges, self._tuples, self._not_monotone, zoomed, self)

    def same_as(self, other: ProvenanceGraph) -> bool:
        """Whether both graphs have the same nodes (all columns) and edges."""

        def edge_set(g: ProvenanceGraph) -> set:
            return set(zip(g.edges.column("src").to_pylist(), g.edges.column("dst").to_pylist()))

        return self.nodes.equals(other.nodes) and edge_set(self) == edge_set(other)
