"""Where things are: a capture's directory in the store, paths inside the store kept
relative to it in what the store writes (``{store}``, and ``{store-uri}`` for Hadoop's
percent-encoded spelling), and the local paths behind the URIs Spark reports.

>>> local_path("file:/tmp/a%20b/part-0.parquet")
'/tmp/a b/part-0.parquet'
>>> relative_to_store({"path": "/s/data/1/output", "elsewhere": "/t/x"}, Path("/s"))
{'path': '{store}/data/1/output', 'elsewhere': '/t/x'}
>>> inside_store(_, Path("/moved"))["path"]
'/moved/data/1/output'
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

from ..errors import EmbeddedUnsupported

STORE, STORE_URI = "{store}", "{store-uri}"  # the store's root, in paths the store writes
# characters a URI path keeps as they are (Hadoop encodes the others, a space as %20)
_URI_SAFE = "/~!$&'()*+,;=:@-._"


def local_path(uri: str) -> str:
    """A local file path from the ``file:`` URIs Spark reports; other schemes are not local."""
    if uri.startswith("file:"):  # Hadoop spells them percent-encoded (a space is %20)
        return unquote(uri[len("file://") :] if uri.startswith("file://") else uri[len("file:") :])
    if "://" in uri:
        raise EmbeddedUnsupported(f"{uri} is not a local file")
    return uri


def capture_dir(entry: dict) -> Path:
    """The directory of capture ``entry``'s files in the store (its output is always there)."""
    return Path(entry["output"]["path"]).parent


def _relocated(value, rewrite):
    """``value`` (an entry's JSON) with ``rewrite`` applied to every string in it."""
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, dict):  # keys too: a source read without a name is named by its path
        return {rewrite(k): _relocated(v, rewrite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_relocated(v, rewrite) for v in value]
    return value


def _spellings(root: Path) -> list[tuple[str, str]]:
    """(token, how ``root`` is spelled there): the URI spelling first, as it may hold the other."""
    plain, uri = str(root), quote(str(root), safe=_URI_SAFE)
    return ([(STORE_URI, uri)] if uri != plain else []) + [(STORE, plain)]


def relative_to_store(entry: dict, root: Path) -> dict:
    """``entry`` with ``root`` (a path, or a directory's ``file:`` URI) replaced by tokens
    wherever it starts a path: a path inside the store is kept relative to the store."""
    patterns = [(token, re.compile(re.escape(spelled) + r"(?=/|$)")) for token, spelled in _spellings(root)]

    def rewrite(text: str) -> str:
        for token, pattern in patterns:
            text = pattern.sub(token, text)
        return text

    return _relocated(entry, rewrite)


def inside_store(entry: dict, root: Path) -> dict:
    """``entry`` as stored, its paths inside the store made absolute under ``root``. An
    entry written before paths were relative names its store by its output's path
    (``<store>/data/<id>/output``): that store's root is replaced, so a copied store
    reads its own files, not the original's."""
    spelled = dict(_spellings(root))
    spelled.setdefault(STORE_URI, spelled[STORE])
    output = (entry.get("output") or {}).get("path") or ""
    suffix = f"/data/{entry.get('id')}/output"
    if entry.get("id") and output.endswith(suffix) and not output.startswith(STORE):
        old = Path(output[: -len(suffix)])
        if old != root:
            entry = relative_to_store(entry, old)
    return _relocated(entry, lambda text: text.replace(STORE_URI, spelled[STORE_URI]).replace(STORE, spelled[STORE]))
