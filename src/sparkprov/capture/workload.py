"""What a capture is told about the lineage queries to come (Smoke section 4).

A declared workload lets capture skip what no query will read. Today that is the
sources: lineage is kept only for the sources named, so the other sources' rids are
not read, carried through joins, collected by aggregates or stored.

>>> Workload.of({"sources": ["orders"]})
Workload(sources=('orders',))
>>> Workload.of(None) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    """The lineage queries a capture serves: ``sources`` are the sources traces will
    reach (backward to them, or forward from them); the others keep no lineage.

    >>> Workload(sources=["lineitem"]).sources
    ('lineitem',)
    """

    sources: Sequence[str]

    def __post_init__(self) -> None:
        sources = self.sources
        if isinstance(sources, str) or not isinstance(sources, Sequence | set | frozenset):
            raise ValueError(f"workload sources must be a list of source names, not {sources!r}")
        names = tuple(dict.fromkeys(sources))
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"workload sources must be a non-empty list of source names, not {list(sources)!r}")
        object.__setattr__(self, "sources", names)

    @classmethod
    def of(cls, value: Workload | Mapping | None) -> Workload | None:
        """``value`` as a Workload: one already, a mapping of its fields, or None."""
        if value is None or isinstance(value, Workload):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"sources"}
            if unknown:
                raise ValueError(f"unknown workload field(s) {sorted(unknown)}; a workload declares 'sources'")
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
