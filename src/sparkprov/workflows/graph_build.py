"""One execution's part of a workflow's provenance graph (Lipstick, section 3), built
from its invocations' captures.

Nodes (``kind``, ``label``):

* ``tuple``: a base tuple, named ``dataset#rid``: a workflow input's row, a state
  table's initial row, a row of a source the workflow did not write;
* ``invocation``: a module's invocation (label: the module);
* ``input`` and ``state`` (label ``·``): a tuple given to an invocation as input, or
  read from its state, joined with the invocation node;
* ``op``: the operations of the invocation's how-provenance, ``·`` (joint use),
  ``+`` (alternatives) and ``δ`` (a group; ``values`` when the row's values are
  computed from the group: an aggregate);
* ``blackbox``: an opaque function (a Python UDF) the invocation's query called, on
  every row it wrote (label: the functions' names), between the row's provenance and
  its output node;
* ``output`` (label ``·``): a row the invocation wrote (an output, or a state
  table's new row), joined with the invocation node. Later invocations read it as
  the tuple it is.

A state row kept as it was (its provenance is the row of the state's previous
version alone) stays the tuple it was: state keeps its tuples' identity across
executions, so deleting a car from the lot reaches every later bid that used it.
A workflow input's row gets a node when some invocation uses it; a state table's row
gets one as soon as a version carries it (that is its identity), used or not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from ..query.provenance import Group, Polynomial, Product, Sum, Var

NODE_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("kind", pa.string()),
        ("label", pa.string()),
        ("module", pa.string()),
        ("execution", pa.int32()),
        ("invocation", pa.int64()),  # the invocation node of an input, state, op or output node; else -1
        ("dataset", pa.string()),
        ("version", pa.int32()),  # an input's or output's execution, a state row's version; else -1
        ("rid", pa.int64()),
        ("values", pa.bool_()),  # a group whose row's values are computed from its rows
    ]
)
EDGE_SCHEMA = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
TUPLE_SCHEMA = pa.schema([("dataset", pa.string()), ("version", pa.int32()), ("rid", pa.int64()), ("node", pa.int64())])

TupleKey = tuple[str, int, int]  # (dataset, version, rid)


@dataclass
class Read:
    """A dataset an invocation read: its kind and version."""

    kind: str  # "input" (a workflow input), "output" (another module's), "state"
    version: int  # the execution that wrote an input or output; a state table's version
    base: bool = False  # a state version with no graph (initial, or written untracked): its rows are base tuples


@dataclass
class ExecutionGraph:
    """The nodes and edges one execution adds, and the tuples it names."""

    execution: int
    first: int  # the first node id it may use
    lookup: Callable[[TupleKey], int | None]  # tuples named by earlier executions
    columns: dict[str, list] = field(default_factory=lambda: {f.name: [] for f in NODE_SCHEMA})
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    tuples: dict[TupleKey, int] = field(default_factory=dict)  # named by this execution

    @property
    def end(self) -> int:
        return self.first + len(self.columns["id"])

    def _node(self, kind: str, label: str, module: str | None = None, invocation: int = -1, **named) -> int:
        node = self.end
        row = {"id": node, "kind": kind, "label": label, "module": module, "execution": self.execution}
        row |= {"invocation": invocation, "dataset": None, "version": -1, "rid": -1, "values": False} | named
        for name, values in self.columns.items():
            values.append(row[name])
        return node

    def _edge(self, src: int, dst: int) -> None:
        self.src.append(src)
        self.dst.append(dst)

    def tuple_node(self, key: TupleKey) -> int | None:
        """The node of a tuple named so far (this execution first)."""
        found = self.tuples.get(key)
        return found if found is not None else self.lookup(key)

    def base_tuple(self, key: TupleKey) -> int:
        """A base tuple's node, made when first used."""
        found = self.tuple_node(key)
        if found is None:
            dataset, version, rid = key
            found = self._node("tuple", f"{dataset}#{rid}", dataset=dataset, version=version, rid=rid)
            self.tuples[key] = found
        return found

    def invocation(self, module: str) -> int:
        return self._node("invocation", module, module)

    def add_capture(
        self,
        module: str,
        invocation: int,
        polynomials: dict[int, Polynomial],
        reads: dict[str, Read],
        written: tuple[str, str, int],
        blackboxes: list[str] = (),
    ) -> None:
        """The provenance of every row one capture of ``invocation`` wrote:
        ``written`` is (dataset, kind ("output" or "state"), version); ``blackboxes``:
        the opaque functions its query called."""
        dataset, kind, version = written
        joined: dict[tuple[str, int], int] = {}  # (kind, tuple node) -> its input or state node
        made: dict[int, int] = {}  # id(polynomial part) -> its node (the parts are shared)

        def tuple_of(var: Var) -> tuple[str, int]:
            read = reads.get(var.source)
            if read is None:  # a source the workflow did not write
                return "input", self.base_tuple((var.source, self.execution, var.rid))
            key = (var.source, read.version, var.rid)
            if read.kind == "output" or (read.kind == "state" and not read.base):
                node = self.tuple_node(key)
                if node is None:
                    raise KeyError(f"no graph node for row {var.rid} of {var.source} version {read.version}")
                return ("state" if read.kind == "state" else "input"), node
            return ("state" if read.kind == "state" else "input"), self.base_tuple(key)

        def node_of(p: Polynomial) -> int:
            if id(p) in made:
                return made[id(p)]
            if isinstance(p, Var):
                how, tup = tuple_of(p)
                if (how, tup) not in joined:
                    joined[(how, tup)] = self._node(how, "·", module, invocation)
                    self._edge(tup, joined[(how, tup)])
                    self._edge(invocation, joined[(how, tup)])
                node = joined[(how, tup)]
            else:
                label = "·" if isinstance(p, Product) else "+" if isinstance(p, Sum) else "δ"
                values = isinstance(p, Group) and p.values
                node = self._node("op", label, module, invocation, values=values)
                for part in p.parts:
                    self._edge(node_of(part), node)
            made[id(p)] = node
            return node

        carries = kind == "state" and dataset in reads  # a state table read and written: its kept rows
        for rid, p in sorted(polynomials.items()):
            if carries and isinstance(p, Var) and p.source == dataset:
                # a state row kept as it was: the same tuple
                self.tuples[(dataset, version, rid)] = tuple_of(p)[1]
                continue
            out = self._node("output", "·", module, invocation, dataset=dataset, version=version, rid=rid)
            if not (isinstance(p, Product) and not p.factors):  # 1: made from no row (constants)
                root = node_of(p)
                if blackboxes:
                    box = self._node("blackbox", ", ".join(blackboxes), module, invocation)
                    self._edge(root, box)
                    root = box
                self._edge(root, out)
            self._edge(invocation, out)
            self.tuples[(dataset, version, rid)] = out

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """(nodes, edges, tuples) as Arrow tables."""
        nodes = pa.table(self.columns, schema=NODE_SCHEMA)
        edges = pa.table({"src": self.src, "dst": self.dst}, schema=EDGE_SCHEMA)
        keys = list(self.tuples)
        tuples = pa.table(
            {
                "dataset": [k[0] for k in keys],
                "version": [k[1] for k in keys],
                "rid": [k[2] for k in keys],
                "node": list(self.tuples.values()),
            },
            schema=TUPLE_SCHEMA,
        )
        return nodes, edges, tuples
