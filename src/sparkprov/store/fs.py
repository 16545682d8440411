"""A store's files wherever they live: a local directory (``os``), or an S3-compatible
object store (``s3://bucket/prefix``; Hadoop's ``s3a://`` spelling names the same
objects), read through ``pyarrow.fs`` and written with the one conditional request the
catalog commit needs (``PUT`` with ``If-None-Match: *``, through boto3).

Paths are strings or ``os.PathLike``; an object's path is a URI. ``pathlib`` folds a
URI's ``//`` (``Path("s3://b/k")`` is ``s3:/b/k``), so every function here takes that
spelling too, and ``uri`` gives the one pyarrow and DuckDB read. The object store is
reached as the AWS tools reach it: credentials, region and ``AWS_ENDPOINT_URL`` (an
S3-compatible server such as MinIO) from the environment.

>>> uri(Path("s3a://lineage/prod") / "catalog")
's3://lineage/prod/catalog'
>>> is_remote("/data/store"), is_remote("s3:/b/k")
(False, True)
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path

from ..errors import StoreNotFound, StoreUnsupported

_REMOTE = re.compile(r"^s3a?:/+")  # s3://, Hadoop's s3a:// and pathlib's folded s3:/
_LOCK = threading.Lock()
_FILE_SYSTEMS: dict[tuple[str, str], object] = {}  # (bucket, endpoint): pyarrow's S3 file system


def is_remote(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an object in an object store."""
    return bool(_REMOTE.match(os.fspath(path)))


def uri(path: str | os.PathLike) -> str:
    """``path`` as pyarrow and DuckDB read it: ``s3://bucket/key`` for an object, the
    path itself otherwise."""
    text = os.fspath(path)
    found = _REMOTE.match(text)
    return "s3://" + text[found.end() :].rstrip("/") if found else text


def join(base: str | os.PathLike, *parts: str) -> str:
    """``base`` and ``parts`` joined with ``/``."""
    return "/".join([uri(base).rstrip("/"), *parts]) if is_remote(base) else os.path.join(base, *parts)


def _key(path: str | os.PathLike) -> str:
    return uri(path)[len("s3://") :]


def arrow(path: str | os.PathLike):
    """``(pyarrow file system, path in it)`` for ``path``."""
    import pyarrow.fs as pafs

    if not is_remote(path):
        return pafs.LocalFileSystem(), os.fspath(path)
    key = _key(path)
    bucket = key.split("/", 1)[0]
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    with _LOCK:
        found = _FILE_SYSTEMS.get((bucket, endpoint))
        if found is None:
            try:  # from_uri reads the environment's endpoint and finds the bucket's region
                found = pafs.FileSystem.from_uri(f"s3://{bucket}")[0]
            except OSError as exc:
                raise StoreUnsupported(f"cannot reach s3://{bucket}: {exc}") from None
            _FILE_SYSTEMS[(bucket, endpoint)] = found
    return found, key


def _kind(path: str | os.PathLike) -> str:
    """``"dir"``, ``"file"`` or ``""`` (nothing there)."""
    if not is_remote(path):
        return "dir" if os.path.isdir(path) else "file" if os.path.isfile(path) else ""
    import pyarrow.fs as pafs

    fs, where = arrow(path)
    kind = fs.get_file_info(where).type
    return {pafs.FileType.Directory: "dir", pafs.FileType.File: "file"}.get(kind, "")


def is_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a directory (for an object store: a prefix objects are under)."""
    return _kind(path) == "dir"


def is_file(path: str | os.PathLike) -> bool:
    return _kind(path) == "file"


def names(path: str | os.PathLike) -> list[str]:
    """The names directly under directory ``path`` (files and directories); none when
    it is not one."""
    if not is_remote(path):
        return os.listdir(path) if os.path.isdir(path) else []
    import pyarrow.fs as pafs

    fs, where = arrow(path)
    found = fs.get_file_info(pafs.FileSelector(where, allow_not_found=True))
    return [info.base_name for info in found]


def files_under(path: str | os.PathLike, skip_dir=lambda name: False) -> list[tuple[str, int]]:
    """``(path relative to path, size)`` of every file under directory ``path``, in
    directories ``skip_dir`` does not refuse (by name, at any depth)."""
    if not is_remote(path):
        found = []
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not skip_dir(d)]
            for name in files:
                full = os.path.join(folder, name)
                found.append((os.path.relpath(full, path), os.stat(full).st_size))
        return found
    import pyarrow.fs as pafs

    fs, where = arrow(path)
    base = where.rstrip("/") + "/"
    found = []
    for info in fs.get_file_info(pafs.FileSelector(where, recursive=True, allow_not_found=True)):
        rel = info.path[len(base) :]
        if info.type == pafs.FileType.File and not any(skip_dir(d) for d in rel.split("/")[:-1]):
            found.append((rel, info.size))
    return found


def read_bytes(path: str | os.PathLike) -> bytes:
    if not is_remote(path):
        return Path(path).read_bytes()
    fs, where = arrow(path)
    with fs.open_input_stream(where) as f:  # FileNotFoundError when there is no such object
        return f.read()


def tail(path: str | os.PathLike, length: int) -> tuple[int, bytes]:
    """``(size, the last length bytes)`` of a file."""
    if not is_remote(path):
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - length))
            return size, f.read(length)
    fs, where = arrow(path)
    if _kind(path) != "file":
        raise FileNotFoundError(uri(path))
    with fs.open_input_file(where) as f:
        size = f.size()
        f.seek(max(0, size - length))
        return size, f.read(length)


def put(path: str | os.PathLike, data: bytes) -> None:
    """Write object ``path`` whole (an object store's write is atomic)."""
    fs, where = arrow(path)
    with fs.open_output_stream(where) as f:
        f.write(data)


def put_if_absent(path: str | os.PathLike, data: bytes) -> bool:
    """Create object ``path`` holding ``data`` unless it exists, in one request the store
    decides atomically (``If-None-Match: *``); whether this call created it."""
    try:
        import boto3
        from botocore.exceptions import ClientError
    except ImportError:
        raise StoreUnsupported(
            "committing to an object store needs boto3 (pip install 'sparkprov[s3]'): pyarrow cannot make "
            "the conditional write that keeps two writers from giving one version twice"
        ) from None
    bucket, key = _key(path).split("/", 1)
    client = boto3.client("s3")
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        if code in ("NotImplemented", "InvalidArgument"):
            raise StoreUnsupported(
                f"{uri(path)}: this object store does not take conditional writes (If-None-Match), which the "
                "catalog commit needs to never lose an update; sparkprov refuses to commit there (docs/store.md)"
            ) from None
        if code == "NoSuchBucket":
            raise StoreNotFound(f"{uri(path)}: bucket {bucket!r} does not exist (create it first)") from None
        raise StoreUnsupported(f"cannot write {uri(path)}: {exc}") from None
    return True


def remove_file(path: str | os.PathLike) -> None:
    """Remove file ``path`` (no error when absent)."""
    if not is_remote(path):
        Path(path).unlink(missing_ok=True)
        return
    fs, where = arrow(path)
    with contextlib.suppress(FileNotFoundError):
        fs.delete_file(where)


def remove_tree(path: str | os.PathLike) -> None:
    """Remove directory ``path`` and everything under it (no error when absent)."""
    if not is_remote(path):
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        return
    fs, where = arrow(path)
    if _kind(path) == "dir":
        fs.delete_dir(where)


def link_files(files: list[Path], folder: Path) -> None:
    """Local ``files`` hard-linked into the new ``folder`` (no bytes copied), each
    copied with its times where it cannot be linked (another file system)."""
    import shutil

    folder.mkdir(parents=True)
    for f in files:
        try:
            os.link(f, folder / f.name)
        except OSError:
            shutil.copy2(f, folder / f.name)


def copy_tree(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Copy file or directory ``source`` to ``target`` (either may be remote), file by
    file; a local copy of a local file keeps its modification time."""
    import shutil

    if not is_remote(source) and not is_remote(target):
        if os.path.isdir(source):
            shutil.copytree(source, target)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target)
        return
    import pyarrow.fs as pafs

    src_fs, src = arrow(source)
    dst_fs, dst = arrow(target)
    rels = [rel for rel, _ in files_under(source)] if _kind(source) == "dir" else [""]
    for rel in rels:
        to = f"{dst}/{rel}" if rel else dst
        if not is_remote(target):
            os.makedirs(os.path.dirname(to), exist_ok=True)
        pafs.copy_files(f"{src}/{rel}" if rel else src, to, source_filesystem=src_fs, destination_filesystem=dst_fs)
