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

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ..errors import EmbeddedUnsupported, InvalidArgument, StoreUnsupported
from . import fs

if TYPE_CHECKING:
    from .entry import CaptureEntry

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
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


def readable_path(path: str) -> str:
    """The path pyarrow and DuckDB read for a path a capture keeps: an object's
    ``s3://`` URI (``store/fs.py``), or the local path of a path or ``file:`` URI.

    >>> readable_path("s3a://lineage/prod/data/1/output/part-0.parquet")
    's3://lineage/prod/data/1/output/part-0.parquet'
    """
    return fs.uri(path) if fs.is_remote(path) else local_path(path)


def store_path(root: str | os.PathLike) -> str:
    """The local path of a store given as a path or a ``file:`` URI. A URI of another
    file system (``s3a://``, ``hdfs://``) raises ``StoreUnsupported``: the catalog
    commit needs an atomic create-if-absent and locks that live with a process, which
    sparkprov reaches only through a mounted file system (``docs/store.md``).

    >>> store_path("file:///tmp/my%20store")
    '/tmp/my store'
    """
    text = os.fspath(root)
    if not isinstance(text, str):
        raise InvalidArgument(f"a store is a directory's path, not {type(text).__name__}")
    if text.startswith("file:"):
        return local_path(text)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return text
    if fs.is_remote(text):
        raise StoreUnsupported(
            f"a store at {text}: captures are written into a local store or one mounted at the same path on "
            "every machine (Spark's executors and sparkprov write a capture's files with renames and locks an "
            f"object store does not have); publish them there with `sparkprov push NAME --to {fs.uri(text)}`, "
            f"and read them there with `sparkprov captures|trace --store {fs.uri(text)}` (docs/store.md)"
        )
    raise StoreUnsupported(
        f"a store at {text}: sparkprov keeps stores on a local disk or a file system mounted at the same path "
        f"on every machine (NFS), since the catalog commit needs an atomic create-if-absent and locks that "
        f"end with their process, which {scheme.group(1)}:// does not give it (docs/store.md)"
    )


def capture_dir(entry: CaptureEntry) -> Path:
    """The directory of capture ``entry``'s files in the store (its output is always there)."""
    if entry.output is None:
        raise InvalidArgument(f"capture {entry.name!r} version {entry.version} was not made: it has no files")
    return Path(entry.output.path).parent


def _relocated(value, rewrite):
    """``value`` (an entry's JSON) with ``rewrite`` applied to every string in it."""
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, dict):  # keys too: a source read without a name is named by its path
        return {rewrite(k): _relocated(v, rewrite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_relocated(v, rewrite) for v in value]
    return value


def _spellings(root: str | Path) -> list[tuple[str, str]]:
    """(token, how ``root`` is spelled there): the URI spelling first, as it may hold the other."""
    plain, uri = str(root), quote(str(root), safe=_URI_SAFE)
    return ([(STORE_URI, uri)] if uri != plain else []) + [(STORE, plain)]


def relative_to_store(entry: dict, root: str | Path) -> dict:
    """``entry`` with ``root`` (a path, or a directory's ``file:`` URI) replaced by tokens
    wherever it starts a path: a path inside the store is kept relative to the store."""
    patterns = [(token, re.compile(re.escape(spelled) + r"(?=/|$)")) for token, spelled in _spellings(root)]

    def rewrite(text: str) -> str:
        for token, pattern in patterns:
            text = pattern.sub(token, text)
        return text

    return _relocated(entry, rewrite)


def inside_store(entry: dict, root: str | Path) -> dict:
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
        if str(old) != str(root):
            entry = relative_to_store(entry, old)
    if fs.is_remote(str(root)):  # Hadoop's file: URIs of the store's files name objects there now
        local_uris = [(f"file:{token}", token) for token in (STORE_URI, STORE)]
        entry = _relocated(entry, lambda text: _replaced(text, local_uris))
    return _relocated(entry, lambda text: text.replace(STORE_URI, spelled[STORE_URI]).replace(STORE, spelled[STORE]))


def _replaced(text: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


@dataclass(frozen=True)
class CaptureFolders:
    """The folders of one capture's data directory (``data/<capture id>/``).

    >>> CaptureFolders(Path("/s/data/ab")).drill(2)
    PosixPath('/s/data/ab/drill/2')
    """

    root: Path

    @classmethod
    def of(cls, entry: CaptureEntry) -> CaptureFolders:
        """The folders of capture ``entry``."""
        return cls(capture_dir(entry))

    @property
    def output(self) -> Path:
        """Its output rows (Parquet, with _sp_rid)."""
        return self.root / "output"

    @property
    def lineage(self) -> Path:
        """Its pair table, ``src=<i>/`` per source."""
        return self.root / "lineage"

    @property
    def shared(self) -> Path:
        """Its scalar subqueries' lineage, stored once."""
        return self.root / "shared"

    @property
    def snapshots(self) -> Path:
        """Copies of its sources that have no stable row positions."""
        return self.root / "snapshots"

    @property
    def work(self) -> Path:
        """Intermediate results while its lineage is resolved (removed after)."""
        return self.root / "work"

    def side(self, k: int) -> Path:
        """Side relation ``k`` (kept for why/how; an RDD capture's side files)."""
        return self.root / "sides" / str(k)

    def forward(self, src: int) -> Path:
        """The forward index of source number ``src``."""
        return self.root / "forward" / f"src={src}"

    def drill(self, source: int) -> Path:
        """The drill-down table of source number ``source``."""
        return self.root / "drill" / str(source)

    def partitioned(self, source: int) -> Path:
        """The partitioned pairs of source number ``source``."""
        return self.root / "partitioned" / str(source)


@dataclass(frozen=True)
class StoreFolders:
    """The folders of a store outside its captures' data directories.

    >>> StoreFolders(Path("/s")).entry("sums", 3)
    PosixPath('/s/catalog/sums/v000003.json')
    """

    root: Path

    @property
    def catalog(self) -> Path:
        return self.root / "catalog"

    def versions(self, name: str) -> Path:
        """The folder of capture ``name``'s entries."""
        return self.catalog / name

    def entry(self, name: str, version: int) -> Path:
        """The catalog entry of ``name`` version ``version``."""
        return self.versions(name) / f"v{version:06d}.json"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def capture(self, capture_id: str) -> CaptureFolders:
        """The data directory of the capture with id ``capture_id``."""
        return CaptureFolders(self.data / capture_id)

    def checkpoint(self, name: str, unique: str) -> Path:
        """The files of a checkpoint ``name`` (``unique``: this one's own suffix)."""
        return self.root / "checkpoints" / f"{name}-{unique}"

    def mark(self, capture: str, mark: str, unique: str) -> Path:
        """The rows of mark ``mark`` of capture ``capture``."""
        return self.root / "marks" / f"{capture}.{mark}-{unique}"

    def rdd_context(self, context_id: str) -> RddFolders:
        """The folders of one LineageContext."""
        return RddFolders(self.root / "rdd" / context_id)

    def workflow(self, name: str) -> WorkflowFolders:
        """The folders of workflow ``name`` (sp.Workflow)."""
        return WorkflowFolders(self.root / "workflows" / name)

    @property
    def graph(self) -> GraphFolders:
        """The folders of the store's lineage graph (sparkprov.graphs)."""
        return GraphFolders(self.root / "graph")


@dataclass(frozen=True)
class RddFolders:
    """The folders of one LineageContext (``rdd/<context id>/``).

    >>> RddFolders(Path("/s/rdd/c1")).source(0, "words")
    PosixPath('/s/rdd/c1/sources/0-words')
    """

    root: Path

    def side(self, k: int) -> Path:
        """The files grouping operator ``k`` wrote, one per input partition."""
        return self.root / "sides" / str(k)

    def source(self, number: int, name: str) -> Path:
        """The copy of source ``number`` (parallelize, wholeTextFiles, compressed text)."""
        return self.root / "sources" / f"{number}-{name}"

    def frame(self, name: str) -> Path:
        """Parquet written for a crossing between an RDD and a DataFrame."""
        return self.root / "frames" / name


@dataclass(frozen=True)
class WorkflowFolders:
    """The folders of one workflow (``workflows/<name>/``): its executions' records, the
    datasets each execution wrote, its state tables' versions and its provenance graph.

    >>> WorkflowFolders(Path("/s/workflows/dealers")).dataset(2, "bid1")
    PosixPath('/s/workflows/dealers/executions/e000002/bid1')
    """

    root: Path

    @property
    def records(self) -> Path:
        return self.root / "records"

    def record(self, execution: int) -> Path:
        """The committed record of execution ``execution`` (written last: no record, no execution)."""
        return self.records / f"e{execution:06d}.json"

    @property
    def initial(self) -> Path:
        """The record of the state tables' initial versions."""
        return self.records / "initial.json"

    def execution(self, execution: int) -> Path:
        return self.root / "executions" / f"e{execution:06d}"

    def dataset(self, execution: int, name: str) -> Path:
        """The rows of input or output ``name`` in execution ``execution``."""
        return self.execution(execution) / name

    def state(self, name: str, version: int) -> Path:
        """Version ``version`` of state table ``name`` (0: its initial rows; n: written by execution n)."""
        return self.root / "state" / name / f"v{version:06d}"

    def graph(self, execution: int) -> Path:
        """The provenance graph's nodes, edges and tuples added by execution ``execution``."""
        return self.execution(execution) / "graph"

    def given(self, execution: int, name: str) -> Path:
        """Input ``name`` as given to execution ``execution`` run with ``track="later"``:
        kept, the source its tracking reads (not an identifier: no dataset's name)."""
        return self.execution(execution) / "given-inputs" / name

    def untracked(self, execution: int) -> Path:
        """What execution ``execution`` wrote untracked (its datasets and state versions),
        kept here while it runs again with tracking, until the two are found equal."""
        return self.root / "untracked" / f"e{execution:06d}"


@dataclass(frozen=True)
class GraphFolders:
    """The folders of the store's lineage graph (``graph/``): the triples imported from
    elsewhere, and the builds, each whole in its own folder, the newest named by
    ``CURRENT`` (written last and atomically: a build not named there does not exist).

    >>> GraphFolders(Path("/s/graph")).build(3)
    PosixPath('/s/graph/builds/b000003')
    """

    root: Path

    @property
    def current(self) -> Path:
        return self.root / "CURRENT"

    def build(self, number: int) -> Path:
        return self.root / "builds" / f"b{number:06d}"

    @property
    def imported(self) -> Path:
        """Triples imported from outside, one Parquet folder per import."""
        return self.root / "imported"

    def work(self, unique: str) -> Path:
        """Scratch files of one build (the rounds of its components)."""
        return self.root / "work" / unique
