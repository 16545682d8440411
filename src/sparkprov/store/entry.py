"""A capture's catalog entry, typed: what the store keeps of one capture version.

``CaptureEntry.from_json`` reads the JSON of ``catalog/<name>/v000001.json`` (paths
already made absolute) and checks every field it knows: its presence where it is
required and its type, raising ``StoreCorrupt`` naming the entry and the field, so a
damaged or foreign entry is refused when it is loaded, not with a ``KeyError`` deep in
an answer. ``to_json`` gives the JSON back: ``from_json(e.to_json()) == e``, and keys a
later sparkprov added are kept as they were (``extra``).

>>> raw = {"format_version": 1, "name": "sums", "version": 2, "id": "ab12", "created": "2026-11-26T10:00:00Z",
...        "output": {"path": "/s/data/ab12/output", "columns": ["k"], "stored": ["k"], "schema": "{}"},
...        "sources": {"nums": {"name": "nums", "kind": "parquet", "format": "parquet", "schema": "{}", "roots": ["/d"],
...                             "files": [["/d/n.parquet", 9, 1]], "original": [["/d/n.parquet", 9, 1]]}},
...        "lineage": {"path": "/s/data/ab12/lineage", "sources": {"nums": 0}, "shared": None},
...        "written": None, "witnesses": None, "strategy": "auto", "seconds": 1.5}
>>> entry = CaptureEntry.from_json(raw, "v000002.json")
>>> entry.lineage.sources, entry.output.columns, entry.sources["nums"].kind, entry.failed is None
({'nums': 0}, ['k'], 'parquet', True)
>>> CaptureEntry.from_json(entry.to_json(), "again") == entry
True
>>> CaptureEntry.from_json({**raw, "lineage": {"sources": {}}}, "v000002.json")
Traceback (most recent call last):
sparkprov.errors.StoreCorrupt: catalog entry v000002.json: lineage.path is missing
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import StoreCorrupt
from .source_info import SourceInfo

_MISSING = object()


class _Reader:
    """Fields of one JSON object, checked as they are taken."""

    def __init__(self, data: Any, where: str, prefix: str) -> None:
        self.where, self.prefix = where, prefix
        if not isinstance(data, dict):
            self.fail("", f"is {type(data).__name__}, not an object")
        self.data = data
        self.taken: set[str] = set()

    def fail(self, key: str, what: str):
        name = f"{self.prefix}{key}".rstrip(".") or "the entry"
        raise StoreCorrupt(f"catalog entry {self.where}: {name} {what}")

    def take(self, key: str, kinds: tuple, required: bool = False, default: Any = None) -> Any:
        self.taken.add(key)
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            if required:
                self.fail(key, "is missing")
            return default
        if value is None and not required:
            return None
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            self.fail(key, f"is {type(value).__name__}, not {' or '.join(k.__name__ for k in kinds)}")
        return value

    def rest(self) -> dict:
        return {k: v for k, v in self.data.items() if k not in self.taken}


@dataclass(frozen=True)
class OutputInfo:
    """Where a capture's output rows are and how they are stored."""

    path: str
    columns: list[str]  # the user's column names
    stored: list[str]  # their names in the files (renamed where two collide)
    schema: str  # the files' schema (Spark's JSON), so reading them needs no job
    order: list | None = None  # a top-level ORDER BY kept for when the rows are read
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, where: str) -> OutputInfo:
        r = _Reader(data, where, "output.")
        return cls(
            path=r.take("path", (str,), required=True),
            columns=r.take("columns", (list,), required=True),
            stored=r.take("stored", (list,), required=True),
            schema=r.take("schema", (str,), required=True),
            order=r.take("order", (list,)),
            extra=r.rest(),
        )


# how a capture's pair table is finished after it returned: resolved in the background,
# by running the query again, or from the witnesses (why and how's side relations)
LATER = ("defer", "lazy", "witnesses")


@dataclass(frozen=True)
class LineageInfo:
    """Where a capture's lineage is, and how far it was built at capture."""

    path: str  # the pair table (built later when ``later``, ``in_output`` or ``rdd`` says so)
    sources: dict  # source name: its number in the pair table's src column
    shared: str | None = None  # scalar subqueries' lineage, stored once
    later: str | None = None  # one of LATER: finished after the capture returned
    in_output: dict | None = None  # kept in the output rows' rid columns: {slots, unique}
    rdd: dict | None = None  # an RDD capture's slots and side files: {slots, sides}
    forward: str | None = None  # where a read-only store's forward index is built (a cache)
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, where: str) -> LineageInfo:
        r = _Reader(data, where, "lineage.")
        info = cls(
            path=r.take("path", (str,), required=True),
            sources=r.take("sources", (dict,), required=True),
            shared=r.take("shared", (str,)),
            later=r.take("later", (str,)),
            in_output=r.take("in_output", (dict,)),
            rdd=r.take("rdd", (dict,)),
            forward=r.take("forward", (str,)),
            extra=r.rest(),
        )
        if info.later not in (None, *LATER):
            r.fail("later", f"is {info.later!r}, not one of {', '.join(map(repr, LATER))}")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in info.sources.values()):
            r.fail("sources", "holds a source number that is not a whole number")
        return info


@dataclass(frozen=True)
class CaptureEntry:
    """One capture version as the catalog keeps it. A failed attempt (``failed``, from
    ``sparkprov run``) has no data: no ``id``, ``output`` or ``lineage``."""

    name: str
    version: int
    format_version: int
    created: str
    id: str | None
    output: OutputInfo | None
    lineage: LineageInfo | None
    sources: dict[str, SourceInfo]  # every source the capture read, by name
    failed: dict | None = None  # {reason, ...}: the attempt was not made
    written: dict | None = None  # the files written for the user (path=, table=, a checkpoint)
    witnesses: dict | None = None  # the side relations why and how read
    workload: dict | None = None
    strategy: str | None = None
    seconds: float | None = None
    timings: dict | None = None
    files: dict | None = None  # the data directory's files when committed (store/files.py)
    operators: list | None = None
    explain: list | None = None
    plan: str | None = None
    spark_version: str | None = None
    # Python functions declared blackbox: their lineage is stored per group or
    # partition, and exact answers run them again (capture/blackbox.py)
    blackbox: list | None = None
    # forms of lineage an older sparkprov would misread (store/format.py's FEATURES)
    features: list | None = None
    extra: dict = field(default_factory=dict)  # keys this sparkprov does not know: kept

    @classmethod
    def from_json(cls, data: Any, where: str) -> CaptureEntry:
        """The entry ``data`` (JSON read from ``where``), checked field by field."""
        r = _Reader(data, where, "")
        failed = r.take("failed", (dict,))
        made = failed is None
        version = r.take("version", (int,), required=True)
        if version < 1:
            r.fail("version", f"is {version}, not a whole number from 1")
        output, lineage = r.take("output", (dict,), required=made), r.take("lineage", (dict,), required=made)
        return cls(
            name=r.take("name", (str,), required=True),
            version=version,
            format_version=r.take("format_version", (int,), required=True),
            created=r.take("created", (str,), required=True),
            id=r.take("id", (str,), required=made),
            output=OutputInfo.from_json(output, where) if output is not None else None,
            lineage=LineageInfo.from_json(lineage, where) if lineage is not None else None,
            sources=_sources(r.take("sources", (dict,), required=True), where),
            failed=failed,
            written=r.take("written", (dict,)),
            witnesses=r.take("witnesses", (dict,)),
            workload=r.take("workload", (dict,)),
            strategy=r.take("strategy", (str,)),
            seconds=r.take("seconds", (int, float)),
            timings=r.take("timings", (dict,)),
            files=r.take("files", (dict,)),
            operators=r.take("operators", (list,)),
            explain=r.take("explain", (list,)),
            plan=r.take("plan", (str,)),
            spark_version=r.take("spark_version", (str,)),
            blackbox=r.take("blackbox", (list,)),
            features=r.take("features", (list,)),
            extra=r.rest(),
        )

    def to_json(self) -> dict:
        """The entry as the catalog's JSON holds it (fields without a value left out)."""
        return _plain(self)


def _sources(data: dict, where: str) -> dict[str, SourceInfo]:
    found = {}
    for name, info in data.items():
        if not isinstance(info, dict):
            raise StoreCorrupt(f"catalog entry {where}: sources.{name} is {type(info).__name__}, not an object")
        try:
            found[name] = SourceInfo.from_json(info)
        except KeyError as exc:
            raise StoreCorrupt(f"catalog entry {where}: sources.{name}.{exc.args[0]} is missing") from None
        except (TypeError, ValueError) as exc:
            raise StoreCorrupt(f"catalog entry {where}: sources.{name} cannot be read: {exc}") from None
    return found


def _plain(value: Any) -> dict:
    out = {}
    for f in fields(value):
        v = getattr(value, f.name)
        if f.name == "extra":
            out.update(v)
        elif f.name == "sources" and isinstance(value, CaptureEntry):
            out[f.name] = {n: s.to_json() for n, s in v.items()}
        elif dataclasses.is_dataclass(v):
            out[f.name] = _plain(v)
        elif v is not None:
            out[f.name] = v
    return out
