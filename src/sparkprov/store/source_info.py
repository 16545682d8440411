"""What the store keeps about each source a capture read, and the check that the files
behind it are still the ones it read (``sources/identity.py`` makes these at capture).

>>> snapshot_column(2)
'c2'
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import SourceChanged, SourceChangedWarning


@dataclass
class SourceInfo:
    """What the store keeps about one source (serialised into the catalog)."""

    name: str
    kind: str  # "parquet" or "text" (read in place), or "snapshot" (copied into the capture)
    format: str  # file format of the original, or "memory" / "range"
    files: list[tuple[str, int, int]] = field(default_factory=list)  # rid-numbered files
    roots: list[str] = field(default_factory=list)  # original locations, for change checks
    original: list[tuple[str, int, int]] = field(default_factory=list)  # fingerprint
    schema: str = ""  # JSON of the source's full schema
    table: str | None = None
    splits: list[tuple[str, int, int]] = field(default_factory=list)  # "text": (path, start, length)
    key: str = ""  # "snapshot": what its rows depend on, hashed (capture/snapshots.py), for a later capture to link

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "format": self.format,
            "files": [list(f) for f in self.files],
            "roots": self.roots,
            "original": [list(f) for f in self.original],
            "schema": self.schema,
            "table": self.table,
            "splits": [list(f) for f in self.splits],
            **({"snapshot_key": self.key} if self.key else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> SourceInfo:
        return cls(
            name=d["name"],
            kind=d["kind"],
            format=d["format"],
            files=[tuple(f) for f in d["files"]],
            roots=list(d["roots"]),
            original=[tuple(f) for f in d["original"]],
            schema=d["schema"],
            table=d.get("table"),
            splits=[tuple(f) for f in d.get("splits", [])],
            key=d.get("snapshot_key", ""),
        )


def snapshot_column(i: int) -> str:
    """The name of column ``i`` in a snapshot's files (positional: any name survives)."""
    return f"c{i}"


def compare_fingerprint(info: SourceInfo, files: list[tuple[str, int, int | None]], spelled=lambda path: path) -> None:
    """Raise ``SourceChanged`` unless ``files`` (path, size, mtime; mtime None where the
    file system keeps none of the writer's) are the files ``info`` was captured from;
    ``spelled`` turns the stored paths into the spelling ``files`` use. A source copied
    into the capture (CSV, JSON...) is read from its copy: a change only warns
    (``SourceChangedWarning``)."""
    now = {path: (size, mtime) for path, size, mtime in files}
    then = {spelled(path): (size, mtime) for path, size, mtime in info.original}
    for path, (_, mtime) in now.items():  # no time (an object store's): the size alone is compared
        if mtime is None and path in then:
            then[path] = (then[path][0], None)
    if now != then:
        added = now.keys() - then.keys()
        gone = then.keys() - now.keys()
        changed = {p for p in now.keys() & then.keys() if now[p] != then[p]}
        detail = []
        for label, group in (("removed", gone), ("added", added), ("modified", changed)):
            if group:
                detail.append(f"{label}: {', '.join(sorted(group)[:3])}{' ...' if len(group) > 3 else ''}")
        message = f"source {info.name!r} changed after capture ({'; '.join(detail)})"
        if info.kind == "snapshot":
            # its rows are read from the copy capture kept, so the answer is the captured one:
            # said, not refused (warnings.simplefilter("error", SourceChangedWarning) refuses)
            warnings.warn(SourceChangedWarning(f"{message}; traced from the copy kept at capture"), stacklevel=3)
            return
        raise SourceChanged(message)
