"""The store on disk: a versioned catalog of captures over Parquet data.

Layout of a store directory::

    FORMAT                          {"format_version": 1}
    catalog/<name>/v000001.json     one entry per committed capture version
    data/<capture id>/output/       output rows (Parquet) with _sp_rid
    data/<capture id>/lineage/src=<i>/  (out_rid, in_rid) pairs for source i (Parquet)
    data/<capture id>/snapshots/    copies of sources without stable row positions
    links/<dataset key>/<name>.v000001.json  which capture versions wrote or read a
                                    dataset (``store/links.py``); links/COMPLETE

Paths inside the store are kept relative to it (``{store}`` in the entry stands for
its root, ``{store-uri}`` for the root as Hadoop spells it in ``file:`` URIs), so a
store can be moved, copied or archived and opened elsewhere. The entry also lists the
capture's files with their sizes (``files``, ``store/files.py``): ``load`` checks them
and raises ``StoreCorrupt`` naming a missing, resized or stray file, as it does for an
entry that does not parse or is not the one its file name says.

A store may be read-only (a mounted archive, a colleague's store): reading it writes
nothing there. What a first answer builds (a pair table kept in the output's rid
columns, a forward index) then goes to a cache outside the store
(``$SPARKPROV_CACHE``, default ``~/.cache/sparkprov``, one folder per store path),
which ``load`` points the entry at (``lineage.path``, ``lineage.forward``).

An entry whose lineage keeps a form that a sparkprov written before it would misread
names those forms (``features``, ``store/format.py``) and has format version 2, which
readers from before features refuse; this one reads versions 1 and 2 and refuses an
entry naming a form it does not know (``CaptureTooNew``). Entries without such forms
keep version 1, so older readers still read them.

Each entry carries the SHA-256 of the rest of its JSON (``digest``), checked when it is
read: a byte changed anywhere in it (a path, a source's number) would otherwise read
as an entry that loads and answers wrongly. Entries of an earlier sparkprov have none.

A version removed (``sparkprov rm``, ``sparkprov gc``; ``store/collect.py``) keeps its
entry, so its number is never given again, beside a marker ``v000001.removed``: it is
no longer listed, and loading it says it was removed.

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

import hashlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import (
    CaptureFailed,
    CaptureNotFound,
    CaptureTooNew,
    EmbeddedUnsupported,
    InvalidArgument,
    StoreCorrupt,
    StoreNotFound,
    StoreUnsupported,
)
from . import fs
from .entry import CaptureEntry
from .files import listing, verify, write_atomic, write_manifest
from .format import FEATURES
from .layout import StoreFolders, inside_store, local_path, relative_to_store, store_path
from .lease import claim, release
from .links import Links

log = logging.getLogger("sparkprov")
_SAID_READ_ONLY: set[Path] = set()  # stores this process said it reads through a cache

FORMAT_VERSION = 1  # the store's, and an entry's without features
FEATURES_VERSION = 2  # an entry's that names features
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_ENTRY = re.compile(r"^v(\d{6,})\.json$")
_REMOVED = re.compile(r"^v(\d{6,})\.removed$")


def _digest(entry: dict) -> str:
    """The SHA-256 of ``entry``'s JSON without its ``digest``, keys sorted."""
    body = {k: v for k, v in entry.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


_PROBED: set[Path] = set()  # stores whose file system this process found to link files


def _without_links(root: Path, exc: OSError) -> StoreUnsupported:
    return StoreUnsupported(
        f"{root}: the catalog commit links each entry into place (link(2), which never overwrites), and "
        f"this file system refuses it ({exc.strerror}); without it two writers could give one version "
        "twice. Keep the store on a file system with hard links: a local disk, NFS (docs/store.md)"
    )


def _probe_links(root: Path) -> None:
    """Refuse a writable store on a file system without hard links when it is opened,
    not when a capture that ran for an hour commits."""
    if root in _PROBED:
        return
    probe = root / f".link-probe-{uuid.uuid4().hex}"
    try:
        os.link(root / "FORMAT", probe)
    except OSError as exc:
        raise _without_links(root, exc) from exc
    probe.unlink()
    _PROBED.add(root)


def _check_format(entry: dict, path: Path) -> None:
    """Refuse an entry of a format this sparkprov does not read, or one whose lineage
    keeps forms it does not know (``CaptureTooNew``)."""
    version = entry.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreCorrupt(f"{path} has format version {version!r}")
    features = entry.get("features") or []
    if version > FEATURES_VERSION or not isinstance(features, list):
        raise CaptureTooNew(
            f"{path} has format version {version}: it was written by a newer sparkprov (this one reads "
            f"{FORMAT_VERSION} and {FEATURES_VERSION}); read it with that one"
        )
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise CaptureTooNew(
            f"{path} keeps its lineage in forms this sparkprov does not read ({', '.join(map(str, unknown))}): "
            "it was written by a newer sparkprov, whose answers this one would give wrongly; read it with that one"
        )


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
    renamed to ``path`` (``publish_dir``): ``path`` appears whole or not at all, with the
    list of its files (``store/files.py``). ``tmp`` is removed afterwards whatever
    happened, so a failed or losing write leaves nothing."""
    tmp = path.with_name(f".{path.name}-{uuid.uuid4().hex}")
    try:
        write(tmp)
        if tmp.is_dir():
            write_manifest(tmp)
        publish_dir(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise InvalidArgument(
            f"invalid capture name {name!r}: use letters, digits, '_', '-' and '.', starting with a letter or digit"
        )
    return name


def parse_spec(spec: str) -> tuple[str, int | None]:
    """``name`` or ``name@version``.

    >>> parse_spec("sums@3")
    ('sums', 3)
    """
    name, _, version = spec.partition("@")
    check_name(name)
    if not version:
        return name, None
    if not version.isdigit() or int(version) < 1:
        raise InvalidArgument(f"a capture version is a whole number from 1, not {version!r} (in {spec!r})")
    return name, int(version)


class Store:
    """A local directory holding captures."""

    def __init__(self, root: str | os.PathLike, create: bool = True) -> None:
        """Open the store at ``root`` (a path or a ``file:`` URI), creating it unless
        ``create`` is false (``StoreNotFound``); a URI of another file system raises
        ``StoreUnsupported``."""
        if not isinstance(root, (str, os.PathLike)):
            raise InvalidArgument(f"a store is a directory's path, not {type(root).__name__}")
        self.root = Path(store_path(root)).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise StoreNotFound(f"{self.root} is a file, not a sparkprov store (a store is a directory)")
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
            write_atomic(fmt, json.dumps({"format_version": FORMAT_VERSION}))
        self.folders = StoreFolders(self.root)
        self.folders.catalog.mkdir(exist_ok=True)
        self.folders.data.mkdir(exist_ok=True)
        self.links = Links(self.root)
        if self.writable:
            _probe_links(self.root)
        if not self.names() and self.writable and not self.links.complete:
            self.links.mark_complete()  # a new store: its index holds every entry from the first

    @property
    def location(self) -> str:
        """The store's path or URI, as messages name it."""
        return str(self.root)

    @property
    def remote(self) -> bool:
        """Whether the store is in an object store (``store/object_store.py``)."""
        return False

    @property
    def writable(self) -> bool:
        """Whether this process may write into the store (its ``data`` folder)."""
        return os.access(self.folders.data, os.W_OK)

    @property
    def cache(self) -> Path:
        """Where answers build what a read-only store cannot hold, for this store's path."""
        base = Path(os.environ.get("SPARKPROV_CACHE") or Path.home() / ".cache" / "sparkprov").expanduser()
        return base / hashlib.sha1(str(self.root).encode()).hexdigest()[:16]

    def _built_elsewhere(self, entry: CaptureEntry) -> CaptureEntry:
        """``entry`` with what its answers build pointed into the cache, when this
        process cannot write the store (said once per store and process)."""
        if self.writable or entry.lineage is None or entry.id is None:
            return entry
        cache = self.cache / entry.id
        path = entry.lineage.path if fs.is_dir(entry.lineage.path) else str(cache / "lineage")
        lineage = replace(entry.lineage, path=path, forward=str(cache / "forward"))
        if self.root not in _SAID_READ_ONLY:
            _SAID_READ_ONLY.add(self.root)
            log.warning("sparkprov: store %s is read-only; what traces build is kept in %s", self.location, self.cache)
        return replace(entry, lineage=lineage)

    def holds(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` (a local path or a ``file:`` URI) lies inside the store,
        whose files sparkprov lays out itself."""
        try:
            return Path(local_path(str(path))).expanduser().resolve().is_relative_to(self.root)
        except EmbeddedUnsupported:
            return False

    def new_data_dir(self) -> tuple[str, Path]:
        """A fresh data directory for a capture, claimed by this process until its entry
        is committed (``commit``) or it is given up (``discard``)."""
        capture_id = uuid.uuid4().hex
        path = self.folders.capture(capture_id).root
        claim(self.root, path)  # first: a collector never sees it unclaimed
        path.mkdir()
        return capture_id, path

    def discard(self, capture_id: str) -> None:
        """Remove the data directory of a capture that will not be committed."""
        path = self.folders.capture(capture_id).root
        shutil.rmtree(path, ignore_errors=True)
        release(path)

    def commit(self, name: str, entry: dict) -> CaptureEntry:
        """Publish ``entry`` (the JSON a capture made) as the next version of ``name``,
        with the list of the files its data directory holds now; returns the entry as
        stored, typed (its paths absolute)."""
        check_name(name)
        folder = self.folders.versions(name)
        self._make_folder(folder)
        tmp = folder / f".tmp-{uuid.uuid4().hex}"
        version = max(self._taken(name), default=0) + 1  # removed versions' numbers too
        if entry.get("id"):
            entry = {**entry, "files": listing(self.folders.capture(entry["id"]).root)}
        features = entry.get("features") or []
        if not set(features) <= set(FEATURES):
            raise InvalidArgument(f"an entry names features {features}; this sparkprov knows {list(FEATURES)}")
        entry = {k: v for k, v in entry.items() if k != "features"}
        entry |= {"features": sorted(set(features))} if features else {}
        fv = FEATURES_VERSION if features else FORMAT_VERSION
        entry = {**entry, "format_version": fv, "name": name, "version": version}
        typed = CaptureEntry.from_json(entry, f"{name} v{version} (being committed)")  # one that loads
        try:
            while True:
                typed = replace(typed, version=version)
                stored = relative_to_store(typed.to_json(), self.location)
                stored["digest"] = _digest(stored)
                self.links.record(typed)  # first: an index file whose entry did not commit is ignored
                if not self._place_entry(name, version, json.dumps(stored, indent=1), tmp):
                    version += 1  # another writer took this version
                    continue
                if typed.id:  # named by the entry now
                    release(self.folders.capture(typed.id).root)
                return typed
        finally:
            tmp.unlink(missing_ok=True)

    def _place_entry(self, name: str, version: int, text: str, tmp: Path) -> bool:
        """Create ``name``'s entry ``version`` holding ``text`` unless it exists; whether
        this call created it (atomic: two writers never both do)."""
        tmp.write_text(text)
        try:
            os.link(tmp, self.folders.entry(name, version))  # fails if another writer won
        except FileExistsError:
            return False
        except OSError as exc:  # a file system without hard links: no create-if-absent
            raise _without_links(self.root, exc) from exc
        return True

    def _make_folder(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)

    def commit_failed(self, name: str, reason: str, **details: str) -> CaptureEntry:
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
        return max(self.versions(name), default=0)

    def versions(self, name: str) -> list[int]:
        """The versions of ``name`` in the catalog, oldest first (removed ones left out)."""
        removed = set(self.removed(name))
        return [v for v in self._taken(name) if v not in removed]

    def _taken(self, name: str) -> list[int]:
        """Every version number of ``name`` committed, removed ones too."""
        return self._numbered(name, _ENTRY)

    def removed(self, name: str) -> list[int]:
        """The versions of ``name`` that were removed, oldest first."""
        return self._numbered(name, _REMOVED)

    def _numbered(self, name: str, pattern: re.Pattern) -> list[int]:
        return sorted(int(m.group(1)) for n in fs.names(self.folders.versions(name)) if (m := pattern.match(n)))

    def mark_removed(self, name: str, version: int, reason: str) -> None:
        """Say that version ``version`` of ``name`` is removed: no longer listed or
        loaded (its files are removed after this, by the caller)."""
        marker = self.folders.entry(name, version).with_suffix(".removed")
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_atomic(marker, json.dumps({"removed": when, "reason": reason}))

    def load(
        self, name: str, version: int | None = None, failed_ok: bool = False, verify_files: bool = True
    ) -> CaptureEntry:
        """The catalog entry of ``name`` (the newest version unless ``version``); a
        failed attempt raises ``CaptureFailed`` unless ``failed_ok``. The files it names
        are checked (``StoreCorrupt``) unless ``verify_files`` is false."""
        check_name(name)
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            raise InvalidArgument(f"a capture version is a whole number from 1, not {version!r}")
        versions = self.versions(name)
        if not versions:
            known = ", ".join(self.names()) or "none"
            gone = " (every version was removed)" if self.removed(name) else ""
            raise CaptureNotFound(f"no capture named {name!r} in store {self.location}{gone} (captures: {known})")
        version = version or versions[-1]
        if version not in versions:
            if version in self.removed(name):
                raise CaptureNotFound(f"capture {name!r} version {version} was removed (versions: {_spans(versions)})")
            raise CaptureNotFound(f"capture {name!r} has no version {version} (versions: {_spans(versions)})")
        typed = self.read_entry(name, version)
        if typed.failed and not failed_ok:
            raise CaptureFailed(
                f"capture {name!r} version {version} was not made: {typed.failed.get('reason')}"
                + (f" (version {version - 1} is the one before)" if version > 1 else "")
            )
        if typed.id:
            if verify_files:
                self.verify(typed)
            typed = self._built_elsewhere(typed)
        return typed

    def read_entry(self, name: str, version: int) -> CaptureEntry:
        """The entry of ``name`` version ``version`` as its file holds it, removed or not,
        its files unchecked (``StoreCorrupt`` if it cannot be read or is not that version)."""
        path = self.folders.entry(name, version)
        try:
            entry = json.loads(self._read_text(path))
        except (OSError, ValueError) as exc:
            raise StoreCorrupt(f"catalog entry {path} cannot be read: {exc}") from None
        if not isinstance(entry, dict):
            raise StoreCorrupt(f"catalog entry {path} is not a capture's entry")
        digest = entry.pop("digest", None)
        if digest is not None and digest != _digest(entry):
            raise StoreCorrupt(f"catalog entry {path} is not as written: its digest does not match its contents")
        _check_format(entry, path)
        if entry.get("name") != name or entry.get("version") != version:
            raise StoreCorrupt(
                f"catalog entry {path} holds capture {entry.get('name')!r} version {entry.get('version')}, "
                f"not {name!r} version {version}"
            )
        # every field it knows present and of its type
        return CaptureEntry.from_json(inside_store(entry, self.location), str(path))

    def _read_text(self, path: Path) -> str:
        return path.read_text()

    def verify(self, entry: CaptureEntry) -> None:
        """Raise ``StoreCorrupt`` unless the files of capture ``entry`` are as written."""
        if entry.id:
            what = f"capture {entry.name!r} version {entry.version}"
            verify(self.folders.capture(entry.id).root, entry.files, what)

    def links_of(self, files: list) -> list[dict] | None:
        """What the index of links holds for the dataset made of ``files`` (``Links.of``);
        None when it may not hold every committed entry (a store written before the
        index, with an entry that cannot be read, or that this process cannot write):
        then callers read every entry. A store without the index builds it here."""
        if not self.links.complete and not (self.writable and self._index_links()):
            return None
        return self.links.of(files)

    def _index_links(self) -> bool:
        """Index every committed entry; whether every one could be read."""
        for name in self.names():
            for version in self.versions(name):
                try:
                    entry = self.load(name, version, failed_ok=True, verify_files=False)
                except StoreCorrupt:
                    return False
                self.links.record(entry)
        self.links.mark_complete()
        return True

    def names(self) -> list[str]:
        return sorted(n for n in fs.names(self.folders.catalog) if _NAME.match(n) and self.latest_version(n))


def _spans(versions: list[int]) -> str:
    """``[1, 2, 3, 5]`` as ``'1-3, 5'``."""
    spans: list[list[int]] = []
    for v in versions:
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
