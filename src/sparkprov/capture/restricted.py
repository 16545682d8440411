"""What answers say or refuse about a capture's workload, read from its catalog entry
alone (no Spark): a source it left out, a source whose lineage it kept for the rows a
predicate selects (``workload={"where": ...}``).

>>> from sparkprov.store.entry import CaptureEntry
>>> entry = CaptureEntry("c", 1, 1, "", None, None, None, {}, workload={"where": {"orders": "total > 0"}})
>>> restricted_note(entry, "orders")
"source 'orders': only rows where total > 0 (capture 'c' workload where)"
"""

from __future__ import annotations

import warnings

from ..errors import InvalidArgument, LineageRestricted, RestrictedLineageWarning
from ..store.entry import CaptureEntry


def no_such_source(entry: CaptureEntry, source: object) -> InvalidArgument:
    """The error for a trace naming ``source``, which capture ``entry`` has no lineage
    for: not a source of its query, or one its workload left out."""
    name, kept = entry.name, ", ".join(entry.sources)
    if source in (entry.workload or {}).get("pruned", []):
        return InvalidArgument(
            f"capture {name!r} kept no lineage for source {source!r}: its workload named only {kept}; "
            "capture again with that source in workload sources"
        )
    return InvalidArgument(f"capture {name!r} has no source {source!r}; sources: {kept}")


def restriction(entry: CaptureEntry, source: str) -> str | None:
    """The predicate capture ``entry`` kept ``source``'s lineage under (workload
    ``where``), or None when every row of it kept its lineage."""
    return (entry.workload or {}).get("where", {}).get(source)


def restricted_note(entry: CaptureEntry, source: str) -> str | None:
    """What a backward answer to ``source`` says when its lineage is restricted."""
    predicate = restriction(entry, source)
    if predicate is None:
        return None
    return f"source {source!r}: only rows where {predicate} (capture {entry.name!r} workload where)"


def warn_restricted(entry: CaptureEntry, sources) -> None:
    """Warn that a backward answer to ``sources`` holds only the rows its workload kept."""
    for source in sources:
        note = restricted_note(entry, source)
        if note is not None:
            warnings.warn(f"backward trace restricted: {note}", RestrictedLineageWarning, stacklevel=3)


def refuse_forward(entry: CaptureEntry, source: str) -> None:
    """Raise ``LineageRestricted`` when ``source``'s lineage in ``entry`` is kept only
    for the rows a predicate selects: the other rows' output rows are not recorded."""
    predicate = restriction(entry, source)
    if predicate is not None:
        raise LineageRestricted(
            f"capture {entry.name!r} kept lineage of source {source!r} only for rows where {predicate} "
            "(its workload's where): a forward trace from that source cannot be answered; "
            "capture again without a where for it"
        )
