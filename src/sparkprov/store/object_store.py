"""A store in an S3-compatible object store (``s3://bucket/prefix``), read where it is.

Its layout is a local store's (``store/catalog.py``): a store captured on a cluster and
copied there (``sparkprov push``, or any copy of the directory: paths inside a store
are relative to it) is listed, checked and traced in place, its Parquet files read
through ``pyarrow.fs`` (DuckDB's through the same), row groups as the answers need
them. What a first answer builds (a forward index, a pair table kept in the output)
goes to the local cache, as for a read-only store.

The catalog commit needs an atomic create-if-absent: each entry is created with a
conditional ``PUT`` (``If-None-Match: *``), which the object store decides atomically,
so two writers of one name get consecutive versions and never overwrite each other
(``docs/store.md``). A store there takes no captures: Spark's executors and this
process write a capture's files with renames, links and locks, which an object store
does not have; captures are made in a local or mounted store and pushed.

>>> import tempfile
>>> open_store(tempfile.mkdtemp()).names()
[]
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from ..errors import InvalidArgument, StoreCorrupt, StoreNotFound, StoreUnsupported
from . import fs
from .catalog import FORMAT_VERSION, Store
from .layout import StoreFolders


def open_store(root: str | os.PathLike, create: bool = True) -> Store:
    """The store at ``root``: a local path, a ``file:`` URI, or an object store's
    ``s3://bucket/prefix`` (``s3a://`` too). ``create`` false: ``StoreNotFound`` when
    there is none."""
    if isinstance(root, (str, os.PathLike)) and fs.is_remote(root):
        return ObjectStore(root, create=create)
    return Store(root, create=create)


_PROBED: set[str] = set()  # stores whose server this process found to refuse a second create


def _probe_conditional(root: str) -> None:
    """Refuse to commit where the server ignores ``If-None-Match`` (it would let a second
    writer overwrite an entry) before the first commit: create one object twice."""
    probe = fs.join(root, f".conditional-probe-{uuid.uuid4().hex}")
    try:
        first, second = fs.put_if_absent(probe, b"1"), fs.put_if_absent(probe, b"2")
    finally:
        fs.remove_file(probe)
    if not first or second:
        raise StoreUnsupported(
            f"{root}: the server does not refuse to create an object that exists (it ignores If-None-Match), "
            "so two writers could give one version twice; sparkprov does not commit there (docs/store.md)"
        )
    _PROBED.add(root)


class _NoIndex:
    """An object store keeps no index of links: readers read every entry instead."""

    complete = False

    def record(self, entry) -> None:
        pass


class ObjectStore(Store):
    """A store whose files are objects in an S3-compatible object store."""

    def __init__(self, root: str | os.PathLike, create: bool = True) -> None:
        self._uri = fs.uri(root)
        if not self._uri[len("s3://") :].split("/")[0]:
            raise InvalidArgument(f"{root}: name a bucket, as s3://bucket/prefix")
        self.root = Path(self._uri)  # pathlib folds its '//': the fs functions read either spelling
        self.folders = StoreFolders(self.root)
        self.links = _NoIndex()
        fmt = fs.join(self._uri, "FORMAT")
        try:
            version = json.loads(fs.read_bytes(fmt)).get("format_version")
        except FileNotFoundError:
            if not create:
                raise StoreNotFound(f"no sparkprov store at {self._uri}") from None
            fs.put_if_absent(fmt, json.dumps({"format_version": FORMAT_VERSION}).encode())
            version = FORMAT_VERSION
        except ValueError:
            raise StoreCorrupt(f"{fmt} cannot be read as a store's FORMAT") from None
        if version != FORMAT_VERSION:
            raise StoreCorrupt(f"store {self._uri} has format version {version}; this sparkprov reads {FORMAT_VERSION}")

    @property
    def location(self) -> str:
        return self._uri

    @property
    def remote(self) -> bool:
        return True

    @property
    def writable(self) -> bool:
        """False: answers build what they keep in the local cache (``Store.cache``)."""
        return False

    def holds(self, path: str | os.PathLike) -> bool:
        return fs.is_remote(path) and fs.uri(path).startswith(self._uri + "/")

    def new_data_dir(self):
        raise StoreUnsupported(
            f"{self._uri}: captures are not written into an object store (Spark and sparkprov write a capture's "
            "files with renames and locks it does not have); capture into a local or mounted store and "
            f"publish with `sparkprov push NAME --to {self._uri}`"
        )

    def discard(self, capture_id: str) -> None:
        fs.remove_tree(self.folders.capture(capture_id).root)

    def links_of(self, files: list) -> None:
        return None

    def _make_folder(self, folder: Path) -> None:
        pass  # an object store has no folders to make: keys hold the whole path

    def _place_entry(self, name: str, version: int, text: str, tmp: Path) -> bool:
        if self._uri not in _PROBED:
            _probe_conditional(self._uri)
        return fs.put_if_absent(self.folders.entry(name, version), text.encode())

    def _read_text(self, path: Path) -> str:
        return fs.read_bytes(path).decode()

    def mark_removed(self, name: str, version: int, reason: str) -> None:
        raise StoreUnsupported(
            f"{self._uri}: captures are removed from a store in an object store by its own tools (a lifecycle "
            "rule, `aws s3 rm`); sparkprov does not collect there, where no lock tells it what a writer holds"
        )
