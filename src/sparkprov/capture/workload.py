"""What a capture is told about the lineage queries to come (Smoke section 4).

A declared workload lets capture skip what no query will read:

- ``sources``: lineage is kept only for the sources named, so the other sources' rids
  are not read, carried through joins, collected by aggregates or stored;
- ``where``: per source, a predicate (Spark SQL over the source's columns) that the
  consuming queries apply to the rows they trace back to (Smoke's selection push-down).
  A row of that source that fails it gets no rid at capture, so aggregates collect and
  the store keeps only the rows those queries can return. A backward trace to that
  source then answers the declared query (the rows behind, restricted to the
  predicate) and says so; a forward trace from it is refused, since rows that fail the
  predicate have no lineage left to follow.

Both directions share one pair table (the forward index is built from it on the first
forward trace), so there is no direction to prune at capture.

>>> Workload.of({"sources": ["orders"]})
Workload(sources=('orders',), where={})
>>> Workload.of({"sources": ["lineitem"], "where": {"lineitem": "l_shipmode = 'AIR'"}}).where
{'lineitem': "l_shipmode = 'AIR'"}
>>> Workload.of(None) is None
True
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import LineageRestricted, RestrictedLineageWarning

FIELDS = ("sources", "where")


@dataclass(frozen=True)
class Workload:
    """The lineage queries a capture serves: ``sources`` are the sources traces will
    reach (backward to them, or forward from them); the others keep no lineage.
    ``where`` maps some of those sources to the predicate their traced rows will be
    filtered by: only rows that satisfy it keep lineage (backward traces only).

    >>> Workload(sources=["lineitem"]).sources
    ('lineitem',)
    >>> Workload(sources=["lineitem"], where={"orders": "o_orderstatus = 'F'"})
    Traceback (most recent call last):
    ...
    ValueError: workload where names source(s) ['orders'] not among its sources ['lineitem']
    """

    sources: Sequence[str]
    where: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sources = self.sources
        if isinstance(sources, str) or not isinstance(sources, Sequence | set | frozenset):
            raise ValueError(f"workload sources must be a list of source names, not {sources!r}")
        names = tuple(dict.fromkeys(sources))
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"workload sources must be a non-empty list of source names, not {list(sources)!r}")
        object.__setattr__(self, "sources", names)
        where = self.where
        if not isinstance(where, Mapping):
            raise ValueError(f"workload where must map source names to predicates, not {where!r}")
        outside = sorted(k for k in where if k not in names)
        if outside:
            raise ValueError(f"workload where names source(s) {outside} not among its sources {list(names)}")
        for name, predicate in where.items():
            if not isinstance(predicate, str) or not predicate.strip():
                raise ValueError(f"workload where for source {name!r} must be a Spark SQL predicate, not {predicate!r}")
        object.__setattr__(self, "where", dict(where))

    @classmethod
    def of(cls, value: Workload | Mapping | None) -> Workload | None:
        """``value`` as a Workload: one already, a mapping of its fields, or None."""
        if value is None or isinstance(value, Workload):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - set(FIELDS)
            if unknown:
                raise ValueError(
                    f"unknown workload field(s) {sorted(unknown)}; a workload declares 'sources' and may "
                    "declare 'where'"
                )
            if "sources" not in value:
                raise ValueError("a workload declares 'sources': the sources traces will reach")
            return cls(**value)
        raise ValueError(f"workload must be a Workload or a dict, not {type(value).__name__}")


def no_such_source(entry: dict, source: object) -> ValueError:
    """The error for a trace naming ``source``, which capture ``entry`` has no lineage
    for: not a source of its query, or one its workload left out."""
    name, kept = entry["name"], ", ".join(entry["sources"])
    if source in entry.get("workload", {}).get("pruned", []):
        return ValueError(
            f"capture {name!r} kept no lineage for source {source!r}: its workload named only {kept}; "
            "capture again with that source in workload sources"
        )
    return ValueError(f"capture {name!r} has no source {source!r}; sources: {kept}")


def restriction(entry: dict, source: str) -> str | None:
    """The predicate capture ``entry`` kept ``source``'s lineage under (workload
    ``where``), or None when every row of it kept its lineage."""
    return entry.get("workload", {}).get("where", {}).get(source)


def restricted_note(entry: dict, source: str) -> str | None:
    """What a backward answer to ``source`` says when its lineage is restricted."""
    predicate = restriction(entry, source)
    if predicate is None:
        return None
    return f"source {source!r}: only rows where {predicate} (capture {entry['name']!r} workload where)"


def warn_restricted(entry: dict, sources) -> None:
    """Warn that a backward answer to ``sources`` holds only the rows its workload kept."""
    for source in sources:
        note = restricted_note(entry, source)
        if note is not None:
            warnings.warn(f"backward trace restricted: {note}", RestrictedLineageWarning, stacklevel=3)


def refuse_forward(entry: dict, source: str) -> None:
    """Raise ``LineageRestricted`` when ``source``'s lineage in ``entry`` is kept only
    for the rows a predicate selects: the other rows' output rows are not recorded."""
    predicate = restriction(entry, source)
    if predicate is not None:
        raise LineageRestricted(
            f"capture {entry['name']!r} kept lineage of source {source!r} only for rows where {predicate} "
            "(its workload's where): a forward trace from that source cannot be answered; "
            "capture again without a where for it"
        )
