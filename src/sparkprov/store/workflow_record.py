"""What the store keeps of a workflow's executions (sp.Workflow): one JSON record per
execution, written last and atomically, so an execution that failed half way leaves no
record and the next one starts from the state versions the last record names.

>>> import tempfile
>>> from pathlib import Path
>>> folders = WorkflowFolders(Path(tempfile.mkdtemp()))
>>> write_record(folders, ExecutionRecord(1, True, {"request": ["shop.request", 1]}, [], {"cars": 0}, (0, 5), 0.5))
>>> [r.execution for r in records(folders)]
[1]
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import StoreCorrupt
from .files import write_atomic
from .layout import WorkflowFolders


@dataclass(frozen=True)
class Invocation:
    """One module's invocation in one execution: what it read and wrote, its provenance
    graph node, and the operators over which deleting a tuple is not exact."""

    module: str
    node: int  # the invocation's node in the provenance graph (-1 when not tracked)
    reads: dict[str, list]  # dataset -> [kind ("input", "output", "state"), execution or state version]
    writes: dict[str, list]  # dataset -> [kind ("output", "state"), capture name, capture version]
    seconds: float = 0.0
    not_monotone: list[str] = field(default_factory=list)  # operators a deletion may not follow


@dataclass(frozen=True)
class ExecutionRecord:
    """One execution of a workflow."""

    execution: int
    tracked: bool
    inputs: dict[str, list]  # the workflow's input datasets: name -> [capture name, version] (version 0: none)
    invocations: list[Invocation]
    state: dict[str, int]  # every state table's version after this execution
    nodes: tuple[int, int]  # the graph node ids this execution added: [first, end)
    seconds: float
    at: str = ""  # when it finished (UTC, ISO 8601)
    later: bool = False  # run with track="later": tracked when first asked (pending while not tracked)

    @property
    def pending(self) -> bool:
        """Run with ``track="later"`` and not tracked yet."""
        return self.later and not self.tracked

    def to_json(self) -> str:
        data = asdict(self)
        data["nodes"] = list(self.nodes)
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: Path) -> ExecutionRecord:
        try:
            data = json.loads(text)
            invocations = [Invocation(**i) for i in data.pop("invocations")]
            nodes = tuple(data.pop("nodes"))
            return cls(invocations=invocations, nodes=nodes, **data)
        except (ValueError, TypeError, KeyError) as e:
            raise StoreCorrupt(f"workflow record {where} is damaged: {type(e).__name__}: {e}") from e


def write_record(folders: WorkflowFolders, record: ExecutionRecord) -> None:
    """Commit ``record`` (atomically: a reader sees the whole record or none)."""
    _write_atomic(folders.record(record.execution), record.to_json())


def records(folders: WorkflowFolders) -> list[ExecutionRecord]:
    """Every committed execution's record, oldest first."""
    if not folders.records.is_dir():
        return []
    paths = sorted(p for p in folders.records.glob("e*.json"))
    return [ExecutionRecord.from_json(p.read_text(), p) for p in paths]


def initial_state(folders: WorkflowFolders) -> dict[str, list]:
    """The state tables given initial rows: name -> [the capture that wrote them, its version]."""
    path = folders.initial
    if not path.exists():
        return {}
    try:
        return dict(json.loads(path.read_text()))
    except ValueError as e:
        raise StoreCorrupt(f"workflow record {path} is damaged: {e}") from e


def write_initial_state(folders: WorkflowFolders, state: dict[str, list]) -> None:
    _write_atomic(folders.initial, json.dumps(state, indent=1, sort_keys=True))


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
