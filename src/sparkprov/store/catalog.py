"""The store on disk: a versioned catalog of captures over Parquet data.

Layout of a store directory::

    FORMAT                          {"format_version": 1}
    catalog/<name>/v000001.json     one entry per committed capture version
    data/<capture id>/output/       output rows (Parquet) with _sp_rid
    data/<capture id>/lineage/src=<i>/  (out_rid, in_rid) pairs for source i (Parquet)
    data/<capture id>/snapshots/    copies of sources without stable row positions

An entry with ``failed`` records a capture that was attempted and not made (by
``sparkprov run``), with the reason; ``load`` refuses it with ``CaptureFailed``.

A capture writes everything under a fresh ``data/<capture id>/`` first and becomes
visible only when its catalog entry is linked into place, which is atomic and never
overwrites: a killed capture leaves an unreferenced data directory and nothing else,
and two writers of the same name get consecutive versions.

>>> import tempfile
>>> store = Store(tempfile.mkdtemp())
>>> store.names()
[]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from ..errors import CaptureFailed, CaptureNotFound, StoreCorrupt, StoreNotFound

FORMAT_VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_ENTRY = re.compile(r"^v(\d{6,})\.json$")


def publish_dir(tmp: Path, path: Path) -> None:
    """Rename ``tmp``, a directory written privately, to ``path``. Two processes may
    build the same directory at once: the first rename wins, and the loser keeps its
    ``tmp`` (the caller removes it)."""
    try:
        os.rename(tmp, path)
    except OSError:
        if not path.is_dir():
            raise


def publish_written(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` fills ``tmp``, a private directory beside ``path`` (absent when
    called: a Spark writer makes it; a pyarrow writer makes it first), which is then
    renamed to ``path`` (``publish_dir``): ``path`` appears whole or not at all. ``tmp``
    is removed afterwards whatever happened, so a failed or losing write leaves nothing."""
    tmp = path.with_name(f".{path.name}-{uuid.uuid4().hex}")
    try:
        write(tmp)
        publish_dir(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ValueError(
            f"invalid capture name {name!r}: use letters, digits, '_', '-' and '.', starting with a letter or digit"
        )
    return name


class Store:
    """A local directory holding captures."""

    def __init__(self, root: str | os.PathLike, create: bool = True) -> None:
        """Open the store at ``root``, creating it unless ``create`` is false (``StoreNotFound``)."""
        self.root = Path(root).expanduser().resolve()
        if not create and not (self.root / "FORMAT").is_file():
            raise StoreNotFound(f"no sparkprov store at {self.root}")
        self.root.mkdir(parents=True, exist_ok=True)
        fmt = self.root / "FORMAT"
        if fmt.exists():
            version = json.loads(fmt.read_text()).get("format_version")
            if version != FORMAT_VERSION:
                raise StoreCorrupt(
                    f"store {self.root} has format version {version}; this sparkprov reads {FORMAT_VERSION}"
                )
        else:
            self._write_atomic(fmt, json.dumps({"format_version": FORMAT_VERSION}))
        (self.root / "catalog").mkdir(exist_ok=True)
        (self.root / "data").mkdir(exist_ok=True)

    def new_data_dir(self) -> tuple[str, Path]:
        capture_id = uuid.uuid4().hex
        path = self.root / "data" / capture_id
        path.mkdir()
        return capture_id, path

    def commit(self, name: str, entry: dict) -> dict:
        """Publish ``entry`` as the next version of ``name``; returns the entry as stored."""
        check_name(name)
        folder = self.root / "catalog" / name
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".tmp-{uuid.uuid4().hex}"
        version = self.latest_version(name) + 1
        try:
            while True:
                entry = {**entry, "format_version": FORMAT_VERSION, "name": name, "version": version}
                tmp.write_text(json.dumps(entry, indent=1))
                try:
                    os.link(tmp, folder / f"v{version:06d}.json")  # fails if another writer won
                    return entry
                except FileExistsError:
                    version += 1
        finally:
            tmp.unlink(missing_ok=True)

    def commit_failed(self, name: str, reason: str, **details: str) -> dict:
        """Record that capture ``name`` was attempted and not made, and why, as its next
        version: listed with the others, refused (``CaptureFailed``) by ``load``."""
        entry = {
            "id": None,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "failed": {"reason": reason, **details},
            "sources": {},
            "written": None,
        }
        return self.commit(name, entry)

    def latest_version(self, name: str) -> int:
        folder = self.root / "catalog" / name
        if not folder.is_dir():
            return 0
        versions = [int(m.group(1)) for p in folder.iterdir() if (m := _ENTRY.match(p.name))]
        return max(versions, default=0)

    def load(self, name: str, version: int | None = None, failed_ok: bool = False) -> dict:
        """The catalog entry of ``name`` (the newest version unless ``version``); a
        failed attempt raises ``CaptureFailed`` unless ``failed_ok``."""
        check_name(name)
        version = version or self.latest_version(name)
        path = self.root / "catalog" / name / f"v{version:06d}.json"
        if not version or not path.exists():
            known = ", ".join(self.names()) or "none"
            raise CaptureNotFound(f"no capture named {name!r} in store {self.root} (captures: {known})")
        entry = json.loads(path.read_text())
        if entry.get("format_version") != FORMAT_VERSION:
            raise StoreCorrupt(f"{path} has format version {entry.get('format_version')}")
        if entry.get("failed") and not failed_ok:
            raise CaptureFailed(
                f"capture {name!r} version {version} was not made: {entry['failed']['reason']}"
                + (f" (version {version - 1} is the one before)" if version > 1 else "")
            )
        return entry

    def names(self) -> list[str]:
        folder = self.root / "catalog"
        return sorted(p.name for p in folder.iterdir() if p.is_dir() and self.latest_version(p.name))

    def data_path(self, capture_id: str, *parts: str) -> str:
        return str(self.root.joinpath("data", capture_id, *parts))

    @staticmethod
    def _write_atomic(path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        tmp.write_text(text)
        os.replace(tmp, path)
