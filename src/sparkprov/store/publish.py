"""A capture pushed from one store to another, for example from the local store a
cluster captures into to a shared one in an object store (``s3://bucket/prefix``),
where others list and trace it (``store/object_store.py``).

Its files are copied first: its data directory, and the files of the store it names
outside it (a checkpoint's or a mark's rows it read). Its entry is committed last,
as the next version of its name there (a conditional write on an object store), so
readers see the whole capture or nothing of it; a push that dies part way leaves
files no entry names, as a killed capture does.

>>> import tempfile
>>> push(Store(tempfile.mkdtemp()), "sums", Store(tempfile.mkdtemp()))
Traceback (most recent call last):
...
sparkprov.errors.CaptureNotFound: ...
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

from ..errors import InvalidArgument, StoreCorrupt
from . import fs
from .catalog import Store, check_name, parse_spec
from .entry import CaptureEntry
from .layout import STORE_URI, inside_store, readable_path, relative_to_store

_PATH = re.compile(r"^(?:file:)?(\{store-uri\}|\{store\})/(\S+)$")


def push(source: Store, spec: str, target: Store, as_name: str | None = None) -> CaptureEntry:
    """Copy capture ``spec`` (``name``, its newest version, or ``name@version``) of
    ``source`` into ``target`` and commit it there as the next version of ``as_name``
    (default: its own name); returns the entry as ``target`` holds it."""
    name, version = parse_spec(spec)
    name_there = check_name(as_name) if as_name is not None else name
    loaded = source.load(name, version)  # its files checked before they are copied
    if loaded.id is None:
        raise InvalidArgument(f"capture {name!r} version {loaded.version} has no files to push")
    if fs.uri(target.location) == fs.uri(source.location):
        raise InvalidArgument("a capture is pushed to another store, not to the one it is in")
    stored = relative_to_store(source.read_entry(name, loaded.version).to_json(), source.location)
    data = f"data/{loaded.id}"
    there = fs.join(target.location, data)
    if fs.is_dir(there):
        found = _entry_naming(target, loaded.id)
        if found is not None:
            raise InvalidArgument(
                f"{target.location} holds capture {name!r} version {loaded.version} already, as {found}: "
                "a capture is pushed once"
            )
        raise InvalidArgument(
            f"{fs.uri(there)} is left from a push that did not end (no entry names it): remove it and push again"
        )
    for rel in _named_outside(stored, data):
        origin, copy = fs.join(source.location, rel), fs.join(target.location, rel)
        if not (fs.is_dir(origin) or fs.is_file(origin)):
            raise StoreCorrupt(f"capture {name!r} version {loaded.version} names {origin}, which is missing")
        if not (fs.is_dir(copy) or fs.is_file(copy)):  # rows other captures read too, copied once
            fs.copy_tree(origin, copy)
    fs.copy_tree(fs.join(source.location, data), there)
    if not target.remote:  # the times sources were read at, which a trace compares with theirs
        _restore_times(loaded, source.location, target.location)
    body = {k: v for k, v in stored.items() if k not in ("name", "version", "files", "digest", "format_version")}
    return target.commit(name_there, inside_store(body, target.location))


def _entry_naming(store: Store, capture_id: str) -> str | None:
    """``name@version`` of the entry of ``store`` whose data is ``capture_id``'s, if any."""
    for name in store.names():
        for version in store.versions(name):
            if store.read_entry(name, version).id == capture_id:
                return f"{name}@{version}"
    return None


def _restore_times(entry: CaptureEntry, old: str, new: str) -> None:
    """Give the files of ``entry``'s sources inside the store (now copied from ``old``
    to the local ``new``) the times recorded when they were read, where a copy from an
    object store left its own."""
    for info in entry.sources.values():
        for spelled, _, mtime in info.original:
            path = readable_path(spelled)
            if fs.is_remote(path) == fs.is_remote(old) and path.startswith(fs.uri(old) + "/"):
                copy = os.path.join(new, path[len(fs.uri(old)) + 1 :])
                if os.path.isfile(copy):
                    os.utime(copy, ns=(mtime * 1_000_000, mtime * 1_000_000))


def _named_outside(stored: dict, data: str) -> list[str]:
    """The paths (relative to the store) that an entry names inside its store but
    outside its data directory ``data``, none under another."""
    found: set[str] = set()

    def walk(value) -> None:
        found_path = _PATH.match(value) if isinstance(value, str) else None
        if found_path:  # a whole path or file: URI (not a message that names one)
            token, rel = found_path.groups()
            found.add(unquote(rel) if token == STORE_URI else rel)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(stored)
    kept = sorted(r for r in found if r != data and not r.startswith(data + "/"))
    return [r for r in kept if not any(r.startswith(o + "/") for o in kept)]
