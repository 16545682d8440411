"""What a capture's files were when written, and the check that they still are.

A capture's data directory (``data/<capture id>/``) is listed when its catalog entry is
committed: every file's path (relative to the directory), size and the CRC-32 of its
last 4 KiB (a Parquet file's footer: row counts, offsets and statistics, so two files
of one kind and size but other rows differ there) go into the entry's ``files``. A
directory published later beside them (a pair table built by the first answer, a
forward index, a drill-down table) carries its own list, ``_sp_files.json``, written
before the directory is renamed into place. ``verify`` compares the files on
disk with both before an answer trusts them: a missing file would otherwise read as no
lineage (a partition of the pair table that Spark did not write because it had no
rows looks the same), a truncated one fails deep in a reader, and a stray one would be
read as lineage. Any of these raises ``StoreCorrupt`` naming the capture and the file.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "part-0.parquet").write_bytes(b"1234")
>>> listing(d)
{'part-0.parquet': [4, 2615402659]}
"""

from __future__ import annotations

import json
import os
import uuid
import zlib
from pathlib import Path

from ..errors import StoreCorrupt
from . import fs

MANIFEST = "_sp_files.json"
_TAIL = 4096  # bytes of a file's end its fingerprint reads
# written while an answer runs and removed after it (capture/lineage.py's intermediate results)
_TRANSIENT = {"work"}


def _kept(name: str) -> bool:
    # Spark's checksums and markers and private directories being written start with "." ;
    # "_SUCCESS" is a marker with no data
    return not name.startswith(".") and name != "_SUCCESS" and name != MANIFEST


def parquet_files(directory: str | os.PathLike) -> list[str]:
    """The data files of a Parquet directory written by Spark (no markers, no checksums);
    an object store's as URIs (``store/fs.py``)."""
    if not fs.is_remote(directory):
        d = Path(directory)
        if not d.is_dir():
            return []
        return sorted(str(p) for p in d.glob("*.parquet") if not p.name.startswith((".", "_")))
    return sorted(
        fs.join(directory, n) for n in fs.names(directory) if n.endswith(".parquet") and not n.startswith((".", "_"))
    )


def fingerprint(path: str | os.PathLike) -> list[int]:
    """``[size, CRC-32 of the last 4 KiB]`` of a file."""
    size, end = fs.tail(path, _TAIL)
    return [size, zlib.crc32(end)]


def listed(directory: str | os.PathLike) -> list[tuple[str, int]]:
    """``(relative path, size)`` of the files a listing holds under ``directory``
    (outside hidden directories)."""
    found = fs.files_under(directory, skip_dir=lambda d: d.startswith("."))
    return [(rel, size) for rel, size in found if _kept(os.path.basename(rel))]


def kept_files(directory: str | os.PathLike) -> list[str]:
    """The paths of the files a listing holds, under ``directory``."""
    return [fs.join(directory, rel) for rel, _ in listed(directory)]


def listing(directory: str | os.PathLike) -> dict[str, list[int]]:
    """``{path relative to directory: fingerprint}`` of the files under ``directory``."""
    return {rel: fingerprint(fs.join(directory, rel)) for rel, _ in listed(directory)}


def total_bytes(directory: str | os.PathLike) -> int:
    """The bytes of the files a listing of ``directory`` holds (their sizes alone)."""
    return sum(size for _, size in listed(directory))


def write_manifest(directory: Path) -> None:
    """List ``directory``'s files in its own ``_sp_files.json`` (before it is published)."""
    (directory / MANIFEST).write_text(json.dumps(listing(directory)))


def verify(data: str | os.PathLike, recorded: dict[str, list[int]] | None, what: str) -> None:
    """Raise ``StoreCorrupt`` unless the files under ``data`` (the directory of capture
    ``what``, as messages name it) are those ``recorded`` at commit plus those the
    manifests of later directories list, each with its recorded fingerprint.
    ``recorded`` None (an entry of an older sparkprov) checks only the directories that
    carry a manifest."""
    if not fs.is_dir(data):
        raise StoreCorrupt(f"{what}: its data directory {fs.uri(data)} is missing")
    expected = dict(recorded or {})
    managed: list[str] = []  # directories whose files a manifest lists
    present: list[str] = []  # the files there, outside transient directories
    for rel, _ in fs.files_under(data, skip_dir=lambda d: d.startswith(".")):
        rel = rel.replace(os.sep, "/")
        if rel.split("/")[0] in _TRANSIENT and "/" in rel:
            continue
        name = rel.rsplit("/", 1)[-1]
        if _kept(name):
            present.append(rel)
        if name == MANIFEST:
            base = rel.rsplit("/", 1)[0] if "/" in rel else "."
            managed.append(base)
            path = fs.join(data, rel)
            try:
                manifest = json.loads(fs.read_bytes(path))
            except (OSError, ValueError):
                raise StoreCorrupt(f"{what}: file list {fs.uri(path)} cannot be read") from None
            expected.update({os.path.normpath(os.path.join(base, r)): print_ for r, print_ in manifest.items()})
    for rel, recorded_print in expected.items():
        path = fs.uri(fs.join(data, rel))
        try:
            size, crc = recorded_print
        except (TypeError, ValueError):
            raise StoreCorrupt(f"{what}: the list of its files is damaged at {rel}") from None
        try:
            actual, actual_crc = fingerprint(path)
        except FileNotFoundError:
            raise StoreCorrupt(f"{what}: file {path} is missing") from None
        if actual != size:
            raise StoreCorrupt(f"{what}: file {path} has {actual:,} bytes, {size:,} when written")
        if actual_crc != crc:
            raise StoreCorrupt(f"{what}: file {path} is not the one written (its footer differs)")
    if recorded is None and not managed:
        return
    for rel in present:
        if rel in expected:
            continue
        if recorded is None and not any(rel.startswith(m + "/") for m in managed):
            continue  # an older entry lists nothing outside the managed directories
        raise StoreCorrupt(f"{what}: file {fs.uri(fs.join(data, rel))} is not one the capture wrote")


def write_atomic(path: Path, text: str) -> None:
    """``text`` written to ``path`` whole or not at all (a file beside it, renamed into place)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(text)
    os.replace(tmp, path)


def human_bytes(n: int) -> str:
    """``1536`` as ``'1.5 KiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
