"""``sparkprov check``: is a store whole? Read from the store alone, without Spark.

For every catalog entry: it parses, with a format version this sparkprov reads; the
files of its data directory are those it recorded (sizes and footers, no file missing
or added: ``store/files.py``), and every Parquet file's footer reads (``deep``: every
row group too); files it wrote for the user inside the store, and its sources kept in
the store (an RDD context's copies, a checkpoint it read), are there with their sizes.
The index of links between captures holds every dataset each entry wrote or read, so
a trace across captures finds them; workflows' records read. Orphans (what no entry
names: ``store/collect.py``) are listed, not counted as damage: a killed capture
leaves them, and ``sparkprov gc`` removes them.

>>> import tempfile
>>> report = check_store(Store(tempfile.mkdtemp()))
>>> report.ok, report.entries
(True, 0)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreCorrupt
from .catalog import Store
from .collect import Orphan, find_orphans
from .contents import Contents, local, read_contents
from .entry import CaptureEntry
from .files import human_bytes, kept_files
from .links import datasets


@dataclass
class Report:
    """What ``check_store`` found."""

    root: Path
    entries: int = 0  # catalog entries read (committed, not removed)
    files: int = 0  # Parquet files whose footer was read
    row_groups: int = 0  # row groups read (deep)
    errors: list[str] = field(default_factory=list)
    orphans: list[Orphan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict:
        return {
            "store": str(self.root),
            "ok": self.ok,
            "entries": self.entries,
            "parquet_files": self.files,
            "row_groups": self.row_groups,
            "errors": self.errors,
            "orphans": [o.to_json() for o in self.orphans],
            "notes": self.notes,
        }

    def to_text(self) -> str:
        lines = [f"error: {e}" for e in self.errors]
        for o in self.orphans:
            writer = {"alive": ", being written", "gone": "", "unknown": ""}[o.writer]
            lines.append(f"orphan: {o.path} ({human_bytes(o.bytes)}{writer}): {o.why}")
        lines += [f"note: {n}" for n in self.notes]
        read = f"{self.files} Parquet file(s)" + (f", {self.row_groups} row group(s)" if self.row_groups else "")
        verdict = "whole" if self.ok else f"DAMAGED ({len(self.errors)} error(s))"
        lines.append(f"store {self.root}: {verdict}; {self.entries} entries, {read}, {len(self.orphans)} orphan(s)")
        return "\n".join(lines)


def check_store(store: Store, deep: bool = False, progress: Callable[[int, int, str], None] | None = None) -> Report:
    """Check every entry of ``store`` and what it names (see the module's docstring);
    ``progress(done, total, label)`` is called after each entry."""
    report = Report(store.root)
    contents = read_contents(store)
    report.errors += [message for message in contents.damaged.values()]
    report.errors += contents.workflow_damage
    report.notes += [f"not checked: {why}" for _, why in contents.newer.values()]
    report.errors += _gaps(contents)
    made = {v: e for v, e in contents.live.items() if e.id}
    report.entries = len(contents.live)
    for done, (version, entry) in enumerate(sorted(made.items()), 1):
        label = f"{version[0]}@{version[1]}"
        try:
            store.verify(entry)
        except StoreCorrupt as exc:
            report.errors.append(str(exc))
        else:
            _read_parquet(store, entry, label, deep, report)
        _check_written(store, entry, label, report)
        _check_sources(store, entry, label, report)
        _check_links(store, entry, label, report)
        if progress:
            progress(done, len(made), label)
    report.orphans = find_orphans(store, contents)
    return report


def _gaps(contents: Contents) -> list[str]:
    """Versions are numbered without gaps (a removed one keeps its entry): one missing
    below the newest is an entry lost."""
    taken: dict[str, set[int]] = {}
    for name, version in [*contents.live, *contents.removed, *contents.damaged, *contents.newer]:
        taken.setdefault(name, set()).add(version)
    found = []
    for name, versions in sorted(taken.items()):
        missing = sorted(set(range(1, max(versions) + 1)) - versions)
        if missing:
            lost = ", ".join(f"v{v}" for v in missing)
            found.append(f"capture {name!r}: the catalog entries of {lost} are missing (later versions exist)")
    return found


def _read_parquet(store: Store, entry: CaptureEntry, label: str, deep: bool, report: Report) -> None:
    import pyarrow.parquet as pq

    data = store.folders.capture(entry.id).root
    for path in sorted(kept_files(data)):
        if not path.endswith(".parquet") or os.path.relpath(path, data).startswith("work" + os.sep):
            continue
        try:
            with pq.ParquetFile(path) as file:
                report.files += 1
                if deep:
                    for i in range(file.num_row_groups):
                        file.read_row_group(i)
                        report.row_groups += 1
        except Exception as exc:  # pyarrow raises several kinds for a damaged file
            report.errors.append(f"capture {label}: file {path} cannot be read: {type(exc).__name__}: {exc}")


def _check_written(store: Store, entry: CaptureEntry, label: str, report: Report) -> None:
    """The files written for the user: in the store they are the store's to keep; elsewhere the user's."""
    for spelled, size, _ in (entry.written or {}).get("files") or []:
        path = local(spelled)
        if path is None:
            continue
        inside = path.is_relative_to(store.root)
        try:
            actual = path.stat().st_size
        except OSError:
            actual = None
        if actual == size:
            continue
        what = "is missing" if actual is None else f"has {actual:,} bytes, {size:,} when written"
        if inside:
            report.errors.append(f"capture {label}: file {path} it wrote {what}")
        else:
            report.notes.append(f"capture {label}: file {path} it wrote for the user {what} (outside the store)")


def _check_sources(store: Store, entry: CaptureEntry, label: str, report: Report) -> None:
    """Sources kept in the store (an RDD context's copies, checkpoints read again)."""
    own = store.folders.capture(entry.id).root
    for name, source in entry.sources.items():
        for spelled, size, _ in source.files:
            path = local(spelled)
            if path is None or not path.is_relative_to(store.root) or path.is_relative_to(own):
                continue  # the user's files (changes are said when traced), or checked with its own
            try:
                actual = path.stat().st_size if path.is_file() else size
            except OSError:
                actual = None
            if actual != size:
                what = "is missing" if actual is None else f"has {actual:,} bytes, {size:,} when read"
                report.errors.append(f"capture {label}: file {path} of its source {name!r} {what}")


def _check_links(store: Store, entry: CaptureEntry, label: str, report: Report) -> None:
    if not store.links.complete:
        return  # an older store: traces read every entry until the index is built
    for files, _, _ in datasets(entry):
        record = store.links.folder / store.links.key(files) / f"{entry.name}.v{entry.version:06d}.json"
        if not record.is_file():
            report.errors.append(
                f"capture {label}: the index of links lacks {record}, so a trace across captures would not find it"
            )
