"""Which capture version wrote, and which read, each dataset: an index in the store, so
a trace across jobs finds the capture behind a source without reading every entry.

A dataset is named by its files' fingerprint (path, size, modification time of each),
spelled with the store's own paths relative to it, so a moved store keeps its links.
``links/<key>/`` holds one small JSON file per capture version that wrote the dataset
or read it as a source. It is written before the entry is committed: a file whose
entry was never committed, or whose version another writer took, is ignored by the
lookups, which check each candidate's entry. ``links/COMPLETE`` says every committed
entry is indexed; a store written before the index builds it on its first lookup.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> links = Links(root)
>>> written = {"files": [["/x/p.parquet", 5, 9]]}
>>> links.record(CaptureEntry("a", 1, 1, "2026-11-26T10:00:00Z", "ab12", None, None, {}, written=written))
>>> [(r["name"], r["version"], r["wrote"]) for r in links.of([["/x/p.parquet", 5, 9]])]
[('a', 1, True)]
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import StoreCorrupt
from .entry import CaptureEntry
from .layout import STORE, STORE_URI, relative_to_store

_COMPLETE = "COMPLETE"


def dataset_files(files: Iterable) -> list[tuple]:
    """A dataset's file fingerprints (path, size, mtime) in one comparable form: the catalog's JSON
    has lists, a fresh entry or a SourceInfo has tuples."""
    return [tuple(f) for f in files]


def datasets(entry: CaptureEntry) -> list[tuple[list[tuple], bool, list[str]]]:
    """``(files, wrote, read as)`` for every dataset capture ``entry`` wrote or read in
    place (a Parquet source): the files, whether it wrote them, the source names it
    read them under."""
    found: dict[str, tuple[list[tuple], bool, list[str]]] = {}
    written = entry.written
    if written and written.get("files"):
        files = dataset_files(written["files"])
        found[json.dumps(files)] = (files, True, [])
    for name, source in entry.sources.items():
        if source.kind == "parquet" and source.original:
            files = dataset_files(source.original)
            found.setdefault(json.dumps(files), (files, False, []))[2].append(name)
    return list(found.values())


class Links:
    """The index under ``root / "links"`` of the store at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "links"

    @property
    def complete(self) -> bool:
        """Whether every committed entry is indexed (lookups may trust the index)."""
        return (self.folder / _COMPLETE).is_file()

    def mark_complete(self) -> None:
        """Say that every committed entry is indexed."""
        self.folder.mkdir(exist_ok=True)
        (self.folder / _COMPLETE).touch()

    def key(self, files: Iterable) -> str:
        """The folder name of the dataset made of ``files``."""
        spelled = relative_to_store({"files": [list(f) for f in dataset_files(files)]}, self.root)
        # one token for the root however it was spelled: a store moved to a path without
        # characters Hadoop encodes spells it plainly where it had the URI spelling
        text = json.dumps(spelled["files"]).replace(STORE_URI, STORE)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def record(self, entry: CaptureEntry) -> None:
        """Index capture ``entry`` (its name and version set) under every dataset it
        wrote or read; each file is written whole or not at all."""
        for files, wrote, read_as in datasets(entry):
            folder = self.folder / self.key(files)
            folder.mkdir(parents=True, exist_ok=True)
            record = {"name": entry.name, "version": entry.version, "wrote": wrote, "read_as": read_as}
            tmp = folder / f".tmp-{uuid.uuid4().hex}"
            tmp.write_text(json.dumps(record))
            os.replace(tmp, folder / f"{entry.name}.v{entry.version:06d}.json")

    def of(self, files: Iterable) -> list[dict[str, Any]]:
        """What the index holds for the dataset made of ``files``: ``{name, version,
        wrote, read_as}`` per capture version, by name, newest version first."""
        folder = self.folder / self.key(files)
        if not folder.is_dir():
            return []
        found = []
        for path in folder.iterdir():
            if path.name.startswith(".tmp-"):  # being written (or left by a writer that died)
                continue
            try:
                record = json.loads(path.read_text())
                found.append({k: record[k] for k in ("name", "version", "wrote", "read_as")})
            except (OSError, ValueError, KeyError, TypeError) as exc:
                # a link lost could hide the capture behind a source: refuse, do not guess
                raise StoreCorrupt(f"link index file {path} cannot be read: {exc}") from None
        return sorted(found, key=lambda r: (r["name"], -r["version"]))
