"""DuckDB in this process: one in-memory database, opened when first used, and a
connection of its own for each use (a cursor: the tables registered on it are its
alone, so threads answering at once do not see each other's).

Opening a database costs about 16 ms on this machine, a cursor on an open one 0.4 ms;
a workflow's graph is built with a few such queries per dataset.

>>> with connection() as con:
...     con.execute("SELECT 42").fetchone()[0]
42
"""

from __future__ import annotations

import threading

import duckdb

from ..errors import StoreUnsupported
from .fs import arrow

_LOCK = threading.Lock()
_DATABASE: list[duckdb.DuckDBPyConnection] = []


def quote(name: str) -> str:
    """``name`` as a DuckDB identifier.

    >>> print(quote('a"b'))
    "a""b"
    """
    return '"' + name.replace('"', '""') + '"'


def connection() -> duckdb.DuckDBPyConnection:
    """A new connection to this process's DuckDB database; close it when done (``with``)."""
    with _LOCK:
        if not _DATABASE:
            _DATABASE.append(duckdb.connect())
        return _DATABASE[0].cursor()


_REACHED: list[object] = []  # the file system DuckDB reads s3:// paths through, once registered


def reach_object_store(path: str) -> None:
    """Let this process's DuckDB read ``s3://`` paths, as ``path``'s store is reached
    (``store/fs.py``): through pyarrow's file system, since DuckDB's own S3 reader is an
    extension it would download."""
    try:
        from fsspec.implementations.arrow import ArrowFSWrapper
    except ImportError:
        raise StoreUnsupported(
            "reading a store in an object store needs fsspec (pip install 'sparkprov[s3]')"
        ) from None

    class _S3(ArrowFSWrapper):
        protocol = "s3"

        @classmethod
        def _strip_protocol(cls, path):  # DuckDB asks for s3://bucket/key; pyarrow wants bucket/key
            path = path[0] if isinstance(path, list) else path
            return path[len("s3://") :] if path.startswith("s3://") else path

    reached = arrow(path)[0]
    with _LOCK:
        if _REACHED and _REACHED[0].fs is reached:
            return
        if not _DATABASE:
            _DATABASE.append(duckdb.connect())
        if _REACHED:  # another endpoint than before (the environment changed)
            _DATABASE[0].unregister_filesystem(_S3.protocol)
            _REACHED.clear()
        wrapper = _S3(reached)
        _DATABASE[0].register_filesystem(wrapper)
        _REACHED.append(wrapper)
