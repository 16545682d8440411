"""Where things are: the local paths behind the URIs Spark reports.

>>> local_path("file:/tmp/a%20b/part-0.parquet")
'/tmp/a b/part-0.parquet'
"""

from __future__ import annotations

from urllib.parse import unquote

from ..errors import EmbeddedUnsupported


def local_path(uri: str) -> str:
    """A local file path from the ``file:`` URIs Spark reports; other schemes are not local."""
    if uri.startswith("file:"):  # Hadoop spells them percent-encoded (a space is %20)
        return unquote(uri[len("file://") :] if uri.startswith("file://") else uri[len("file:") :])
    if "://" in uri:
        raise EmbeddedUnsupported(f"{uri} is not a local file")
    return uri
