"""What a store's catalog names: every entry read once (committed, removed or damaged),
the paths inside the store each names, which captures read what another wrote, and
which capture versions a workflow's records name. ``sparkprov check`` and the garbage
collector (``store/collect.py``) both start here.

>>> import tempfile
>>> contents = read_contents(Store(tempfile.mkdtemp()))
>>> contents.live, contents.damaged
({}, {})
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CaptureTooNew, EmbeddedUnsupported, StoreCorrupt
from .catalog import Store
from .entry import CaptureEntry
from .layout import StoreFolders, local_path
from .links import dataset_files
from .workflow_record import initial_state, records

Version = tuple[str, int]  # (capture name, version)


@dataclass
class Contents:
    """The catalog of one store, read at one moment."""

    root: Path
    live: dict[Version, CaptureEntry] = field(default_factory=dict)  # committed and not removed (failed ones too)
    removed: dict[Version, CaptureEntry] = field(default_factory=dict)
    damaged: dict[Version, str] = field(default_factory=dict)  # entries that cannot be read: why
    # entries a newer sparkprov wrote, in forms this one does not read: (data directory, why)
    newer: dict[Version, tuple[str | None, str]] = field(default_factory=dict)
    # capture versions the records of a workflow name: who names them ("workflow w execution 2")
    in_workflows: dict[Version, list[str]] = field(default_factory=dict)
    workflow_damage: list[str] = field(default_factory=list)
    _reads: tuple[dict, dict] | None = field(default=None, repr=False)  # readers' index, made on first use

    def named(self) -> tuple[set[str], list[Path]]:
        """The data directories (capture ids) and the paths inside the store that the
        live entries name."""
        ids = {entry.id for entry in self.live.values() if entry.id}
        ids |= {data for data, _ in self.newer.values() if data}  # its data at least is not an orphan
        paths = [p for entry in self.live.values() for p in paths_named(entry, self.root)]
        return ids, paths

    def readers(self, version: Version) -> list[Version]:
        """The live captures that read what capture ``version`` keeps or wrote (its output,
        its written files, in the store or not): removing it cuts their traces short."""
        entry = self.live.get(version) or self.removed.get(version)
        if entry is None or entry.id is None:
            return []
        inside = [StoreFolders(self.root).capture(entry.id).root]
        written = entry.written or {}
        if written.get("path"):
            path = local(written["path"])
            if path is not None and path.is_relative_to(self.root):
                inside.append(path)
        dataset = dataset_files(written.get("files") or [])
        by_files, under = self._index()
        found = set(by_files.get(tuple(dataset), ())) if dataset else set()
        for folder in inside:
            found |= under.get(folder, set())
        # entries removed since the index was made (by the collector) read nothing now
        return sorted(v for v in found if v != version and v in self.live and not self.live[v].failed)

    def _index(self) -> tuple[dict, dict]:
        # what each live entry reads, made once (readers() is asked of every version the
        # collector removes: a scan of every entry each time was quadratic): the file
        # fingerprints of its Parquet sources, and every folder holding one of its
        # sources' paths (a path is relative to exactly itself and its parents)
        if self._reads is None:
            by_files: dict[tuple, set[Version]] = {}
            under: dict[Path, set[Version]] = {}
            for version, reader in self.live.items():
                for source in reader.sources.values():
                    if source.kind == "parquet":
                        by_files.setdefault(tuple(dataset_files(source.original)), set()).add(version)
                    for p in _source_paths(source):
                        for folder in (p, *p.parents):
                            under.setdefault(folder, set()).add(version)
            self._reads = (by_files, under)
        return self._reads


def local(path: str) -> Path | None:
    """The local path a stored path or ``file:`` URI names; None for another file system's."""
    try:
        return Path(local_path(path))
    except EmbeddedUnsupported:  # another file system's: never inside a local store
        return None


def _source_paths(source) -> list[Path]:
    spelled = [f[0] for f in source.files] + [f[0] for f in source.original] + list(source.roots)
    return [p for p in map(local, spelled) if p is not None]


def paths_named(entry: CaptureEntry, root: Path) -> list[Path]:
    """The paths inside the store at ``root`` that ``entry`` names: its output, lineage
    and written files, and its sources' files (an RDD context's copies, checkpoints)."""
    spelled: list[str] = []
    if entry.output:
        spelled.append(entry.output.path)
    if entry.lineage:
        spelled += [p for p in (entry.lineage.path, entry.lineage.shared) if p]
    written = entry.written or {}
    if written.get("path"):
        spelled.append(written["path"])
    spelled += [f[0] for f in written.get("files") or []]
    found = [p for p in map(local, spelled) if p is not None]
    for source in entry.sources.values():
        found += _source_paths(source)
    return [Path(os.path.normpath(p)) for p in found if p.is_relative_to(root)]


def _data_id(store: Store, name: str, version: int) -> str | None:
    """The data directory an entry this sparkprov cannot read names (a newer one's)."""
    try:
        data = json.loads(store.folders.entry(name, version).read_text()).get("id")
    except (OSError, ValueError, AttributeError):
        return None
    return data if isinstance(data, str) and data and "/" not in data and data not in (".", "..") else None


def read_contents(store: Store) -> Contents:
    """Every entry of ``store``'s catalog, and what its workflows' records name."""
    contents = Contents(store.root)
    catalog = store.folders.catalog
    names = sorted(p.name for p in catalog.iterdir() if p.is_dir()) if catalog.is_dir() else []
    for name in names:
        removed = set(store.removed(name))
        for version in store._taken(name):
            try:
                entry = store.read_entry(name, version)
            except CaptureTooNew as exc:
                contents.newer[(name, version)] = (_data_id(store, name, version), str(exc))
                continue
            except StoreCorrupt as exc:
                contents.damaged[(name, version)] = str(exc)
                continue
            (contents.removed if version in removed else contents.live)[(name, version)] = entry
    workflows = store.root / "workflows"
    for folder in sorted(workflows.iterdir()) if workflows.is_dir() else []:
        wf = StoreFolders(store.root).workflow(folder.name)
        try:
            for name, version in initial_state(wf).values():
                contents.in_workflows.setdefault((name, version), []).append(f"workflow {folder.name}'s initial state")
            for record in records(wf):
                who = f"workflow {folder.name} execution {record.execution}"
                named = list(record.inputs.values()) + [w[1:] for i in record.invocations for w in i.writes.values()]
                for name, version in named:
                    if version:
                        contents.in_workflows.setdefault((name, version), []).append(who)
        except (StoreCorrupt, ValueError, TypeError) as exc:
            contents.workflow_damage.append(f"workflow {folder.name}: {exc}")
    return contents
