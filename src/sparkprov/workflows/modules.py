"""A workflow's modules, and the order the names of their inputs and outputs give them.

>>> a = Module("a", print, ("request",), ("bid",), ())
>>> b = Module("b", print, ("bid",), ("best",), ())
>>> [[m.name for m in wave] for wave in waves([b, a])]
[['a'], ['b']]
>>> sorted(workflow_inputs([a, b]))
['request']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidArgument

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Module:
    """A Python function over DataFrames: called with its inputs and state tables by
    name, it returns its outputs (and the new rows of any state table it changes)."""

    name: str
    function: Callable
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    state: tuple[str, ...]


def check_names(what: str, names) -> tuple[str, ...]:
    """Dataset names, as a tuple: Python identifiers (the function takes them as arguments)."""
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    for n in names:
        if not isinstance(n, str) or not _NAME.match(n):
            raise InvalidArgument(f"{what} {n!r}: a name is a letter followed by letters, digits or '_'")
        if n == "graph" and what != "module":  # an execution's folder holds its datasets and its graph
            raise InvalidArgument(f"{what} 'graph': the name of an execution's provenance graph; choose another")
    if len(set(names)) != len(names):
        raise InvalidArgument(f"{what} names repeat: {', '.join(names)}")
    return names


def check_new(module: Module, modules: dict[str, Module]) -> None:
    """That ``module`` fits beside ``modules``: a name, an output and a state table each
    belong to one module."""
    if module.name in modules:
        raise InvalidArgument(f"the workflow has a module {module.name!r} already")
    overlap = set(module.outputs) & (set(module.inputs) | set(module.state))
    overlap |= set(module.inputs) & set(module.state)
    if overlap:
        raise InvalidArgument(f"module {module.name!r} names {sorted(overlap)[0]!r} twice (inputs, outputs, state)")
    for other in modules.values():
        for name in module.outputs:
            if name in other.outputs:
                raise InvalidArgument(
                    f"output {name!r} of module {module.name!r} is an output of module {other.name!r} already"
                )
            if name in other.state:
                raise InvalidArgument(f"output {name!r} of module {module.name!r} is a state table of {other.name!r}")
        for name in module.state:
            if name in other.state or name in other.outputs:
                raise InvalidArgument(
                    f"state table {name!r} of module {module.name!r} belongs to module {other.name!r}: "
                    "a state table belongs to one module"
                )
        for name in module.inputs:
            if name in other.state:
                raise InvalidArgument(
                    f"module {module.name!r} reads {name!r} as an input, but it is a state table of {other.name!r}"
                )


def workflow_inputs(modules) -> set[str]:
    """The datasets a run is given: read by some module, written by none."""
    written = {o for m in modules for o in m.outputs}
    return {i for m in modules for i in m.inputs if i not in written}


def waves(modules) -> list[list[Module]]:
    """The modules in the order their inputs allow, as waves of modules that may run
    at the same time (each after every module writing its inputs)."""
    modules = list(modules)
    ready = workflow_inputs(modules)
    left, out = modules, []
    while left:
        wave = [m for m in left if all(i in ready for i in m.inputs)]
        if not wave:
            names = ", ".join(m.name for m in left)
            raise InvalidArgument(f"the modules {names} read each other's outputs in a cycle: a workflow is a DAG")
        out.append(sorted(wave, key=lambda m: m.name))
        ready |= {o for m in wave for o in m.outputs}
        left = [m for m in left if m not in wave]
    return out
