"""Array operators that state their lineage (SubZero section V): what an operator
implements, and the writer it is handed to record lineage while it runs.

An operator's ``run(arrays, writer)`` computes its output; when ``writer`` is given it
also records lineage in the one mode the writer asks for (``writer.mode``):

* ``"full"``: region pairs, ``writer.write(outcells, incells_0, ..., incells_n)``;
* ``"payload"``: ``writer.write_payload(outcells, payload)`` for every output cell, and
  ``map_p(cell, payload, i)`` gives a cell's input cells in input ``i`` at query time;
* ``"composite"``: payload pairs only where the mapping's default does not hold.

``map_b`` / ``map_f`` compute lineage from cells and shapes alone, over arrays of cell
ids at once: the whole lineage of a mapping operator (mode ``"map"``), the default of a
composite one (mode ``"composite"``). An operator that records nothing is a black box: it
runs again in ``"full"`` mode at query time. ``all_to_all`` says every output cell
depends on every input cell; ``entire_array`` that the whole output depends on the
whole input (SubZero's entire-array shortcut), both declared by the operator's author.

>>> t = Transpose()
>>> shape = Shape((2, 3))
>>> t.output_shape([shape])
Shape(dims=(3, 2))
>>> t.map_b(np.array([1]), 0, [shape]).tolist()  # output (0, 1) is input (1, 0)
[3]
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument
from .cells import Shape, distinct, distinct_in
from .regions import RegionLog

MODES = ("full", "payload", "composite", "map")


class LineageWriter:
    """SubZero's ``lwrite``: what an operator records of its lineage while it runs."""

    def __init__(self, mode: str, inputs: int) -> None:
        if mode not in ("full", "payload", "composite"):
            raise InvalidArgument(f"a lineage writer records full, payload or composite lineage, not {mode!r}")
        self.mode = mode
        self.logs = [RegionLog() for _ in range(inputs)] if mode == "full" else [RegionLog()]

    def write(self, outcells, *incells) -> None:
        """Every cell of ``outcells`` depends on every cell of ``incells[i]`` in input ``i``."""
        if self.mode != "full":
            raise InvalidArgument(f"this run records {self.mode} lineage: write_payload(), not write()")
        if len(incells) != len(self.logs):
            raise InvalidArgument(f"the operator has {len(self.logs)} inputs; write() got {len(incells)} sets of cells")
        for log, cells in zip(self.logs, incells):
            log.write(outcells, cells)

    def write_many(self, outcells, *incells) -> None:
        """Many region pairs at once: ``outcells[k]`` depends on ``incells[i][k]``."""
        if self.mode != "full":
            raise InvalidArgument(f"this run records {self.mode} lineage: write_payload(), not write_many()")
        for log, cells in zip(self.logs, incells):
            log.write_many(outcells, cells)

    def write_payload(self, outcells, payload: bytes) -> None:
        """The input cells of each of ``outcells`` are ``map_p(cell, payload, i)``."""
        if self.mode == "full":
            raise InvalidArgument("this run records full lineage: write(), not write_payload()")
        self.logs[0].write_payload(outcells, payload)

    def write_payloads(self, outcells, payloads: list[bytes]) -> None:
        """Many payload pairs at once: the input cells of each of ``outcells[k]`` are
        ``map_p(cell, payloads[k], i)``."""
        if self.mode == "full":
            raise InvalidArgument("this run records full lineage: write_many(), not write_payloads()")
        self.logs[0].write_payloads(outcells, payloads)


class ArrayOperator:
    """An operator of an array workflow. Subclasses implement ``run`` and, for the
    modes they list in ``modes``, ``map_b``/``map_f`` and ``map_p``."""

    modes: tuple[str, ...] = ()
    all_to_all = False
    entire_array = False

    @property
    def name(self) -> str:
        return type(self).__name__

    def output_shape(self, shapes: list[Shape]) -> Shape:
        return shapes[0]

    def run(self, arrays: list[np.ndarray], writer: LineageWriter | None) -> np.ndarray:
        raise NotImplementedError

    def map_b(self, cells: np.ndarray, i: int, shapes: list[Shape]) -> np.ndarray:
        """The cells of input ``i`` the output cells ``cells`` depend on (mapping lineage)."""
        raise InvalidArgument(f"{self.name} has no mapping lineage")

    def map_f(self, cells: np.ndarray, i: int, shapes: list[Shape]) -> np.ndarray:
        """The output cells that depend on the cells ``cells`` of input ``i``."""
        raise InvalidArgument(f"{self.name} has no mapping lineage")

    def map_p(self, cell: int, payload: bytes, i: int) -> np.ndarray:
        """A cell's input cells in input ``i``, from its payload (payload lineage)."""
        raise InvalidArgument(f"{self.name} has no payload lineage")

    def map_p_many(self, cells: np.ndarray, payload: bytes, i: int) -> np.ndarray:
        """The input cells of all ``cells``, which share ``payload`` (one call per
        payload; override it when that is cheaper than a call per cell)."""
        found = [np.asarray(self.map_p(int(c), payload, i), dtype=np.int64).ravel() for c in cells]
        return distinct(np.concatenate(found)) if found else np.zeros(0, np.int64)

    def map_p_groups(self, payloads: list[bytes], cells: list[np.ndarray], i: int) -> np.ndarray:
        """The input cells of every group of ``cells`` (``cells[k]`` share
        ``payloads[k]``): a query step's payloads in one call. By default a
        ``map_p_many`` call per payload; override it when the payloads can be read
        together (SubZero's stars: every box of a step built at once)."""
        found = [np.asarray(self.map_p_many(c, p, i), dtype=np.int64).ravel() for p, c in zip(payloads, cells)]
        return distinct(np.concatenate(found)) if found else np.zeros(0, np.int64)


class PayloadFunction:
    """An operator's payload function for one input, as the encodings call it:
    ``f(cell, payload)``, ``f.many(cells, payload)`` for cells sharing a payload, and
    ``f.groups(payloads, cells)`` for a step's cells grouped by payload."""

    def __init__(self, op: ArrayOperator, i: int) -> None:
        self.op, self.i = op, i

    def __call__(self, cell: int, payload: bytes) -> np.ndarray:
        return self.op.map_p(cell, payload, self.i)

    def many(self, cells: np.ndarray, payload: bytes) -> np.ndarray:
        return self.op.map_p_many(cells, payload, self.i)

    def groups(self, payloads: list[bytes], cells: list[np.ndarray]) -> np.ndarray:
        return self.op.map_p_groups(payloads, cells, self.i)


class FunctionOperator(ArrayOperator):
    """An operator whose output is ``function(*inputs)``; subclasses say its lineage."""

    def __init__(self, function, name: str | None = None) -> None:
        self.function, self._name = function, name

    @property
    def name(self) -> str:
        return self._name or type(self).__name__

    def run(self, arrays, writer):
        return self.function(*arrays)


class Elementwise(FunctionOperator):
    """A mapping operator applying ``function`` cell by cell to arrays of one shape:
    an output cell depends on the cell at the same coordinates of each input."""

    modes = ("map",)

    def map_b(self, cells, i, shapes):
        return distinct(cells)

    def map_f(self, cells, i, shapes):
        return distinct(cells)


class Transpose(ArrayOperator):
    """A 2-D transpose (a mapping operator)."""

    modes = ("map",)

    def output_shape(self, shapes):
        return Shape(shapes[0].dims[::-1])

    def run(self, arrays, writer):
        return arrays[0].T.copy()

    def map_b(self, cells, i, shapes):
        out = self.output_shape(shapes)
        r, c = np.unravel_index(cells, out.dims)
        return distinct(np.ravel_multi_index((c, r), shapes[0].dims))

    def map_f(self, cells, i, shapes):
        r, c = np.unravel_index(cells, shapes[0].dims)
        return distinct(np.ravel_multi_index((c, r), self.output_shape(shapes).dims))


def neighbourhood(cells: np.ndarray, shape: Shape, radius: int) -> np.ndarray:
    """Every cell within ``radius`` (in each dimension) of ``cells``, inside the array."""
    if not len(cells) or radius == 0:
        return distinct(cells)
    cells = np.asarray(cells, dtype=np.int64)
    coords = np.unravel_index(cells, shape.dims)
    window = np.array(list(np.ndindex(*[2 * radius + 1] * len(shape.dims)))) - radius
    shifts = window @ shape.strides  # a cell moved by a step of the window, in id space
    if len(cells) * len(window) <= 1 << 16:  # few cells: every step at once
        inside = np.ones((len(cells), len(window)), dtype=bool)
        for coord, steps, dim in zip(coords, window.T, shape.dims):
            moved = coord[:, None] + steps[None, :]
            inside &= (moved >= 0) & (moved < dim)
        return distinct_in((cells[:, None] + shifts[None, :])[inside], shape.size)
    found = []  # many: a step at a time, so memory stays at a few times the cells'
    for steps, shift in zip(window, shifts):
        inside = np.ones(len(cells), dtype=bool)
        for coord, step, dim in zip(coords, steps, shape.dims):
            if step:
                inside &= (coord + step >= 0) & (coord + step < dim)
        found.append(cells[inside] + shift)
    return distinct_in(np.concatenate(found), shape.size)
