"""What ``sparkprov captures`` shows of each capture version, read from the store alone.

A damaged entry or file does not stop the listing: that version is shown as damaged,
with the reason, and every other one as usual. An entry a newer sparkprov wrote, in a
form this one does not read, is not damaged: it is shown as newer.

>>> table([{"name": "sums", "version": 1, "damaged": "no entry"}]).splitlines()[-1]
'sums v1 damaged: no entry'
"""

from __future__ import annotations

import os

from ..errors import CaptureFailed, CaptureTooNew, StoreCorrupt
from .catalog import Store
from .contents import local
from .entry import CaptureEntry
from .files import human_bytes, listed, parquet_files, total_bytes
from .layout import StoreFolders

COLUMNS = ("name", "version", "created", "strategy", "seconds", "rows", "size", "sources")
# what a capture keeps, by the folder of its data directory it is in
PARTS = {
    "output": "output",
    "lineage": "lineage",
    "shared": "lineage",
    "sides": "witnesses",
    "snapshots": "snapshots",
    "forward": "indexes",
    "drill": "indexes",
    "partitioned": "indexes",
}
PART_COLUMNS = ("output", "lineage", "witnesses", "snapshots", "indexes", "written")


def parts(store: Store, entry: CaptureEntry) -> dict[str, int]:
    """Bytes of what capture ``entry`` keeps, by part (``PART_COLUMNS``): its data
    directory's folders, and the files it wrote into the store for the user (a
    checkpoint's rows, a mark's)."""
    sizes = dict.fromkeys(PART_COLUMNS, 0)
    data = StoreFolders(store.root).capture(entry.id).root
    for rel, size in listed(data):
        sizes[PARTS.get(rel.replace(os.sep, "/").split("/")[0], "indexes")] += size
    written = local((entry.written or {}).get("path") or "")
    if written is not None and written.is_relative_to(store.root) and written != store.root:
        sizes["written"] = total_bytes(written)
    return sizes


def describe(store: Store, name: str, version: int, sizes: bool = False) -> dict:
    """One listing row: name, version, created, strategy, seconds, output rows, bytes in
    the store and sources (``sizes``: bytes by part too); ``failed`` or ``damaged`` (the
    reason) instead when so, and ``newer`` too when a newer sparkprov wrote the entry
    (the page shows the reason as a damaged version's)."""
    try:
        entry = store.load(name, version, failed_ok=True)
    except CaptureTooNew as exc:
        return {"name": name, "version": version, "damaged": str(exc), "newer": True}
    except (StoreCorrupt, CaptureFailed) as exc:
        return {"name": name, "version": version, "damaged": str(exc)}
    row = {"name": name, "version": version, "created": entry.created, "sources": list(entry.sources)}
    if entry.failed or entry.id is None or entry.lineage is None:
        return {**row, "failed": entry.failed}
    data = StoreFolders(store.root).capture(entry.id).root
    row["strategy"] = entry.strategy or ("rdd" if entry.lineage.rdd else None)
    row["seconds"] = entry.seconds
    row["rows"] = _output_rows(entry)
    row["bytes"] = total_bytes(data)  # load checked the files: their sizes alone here
    if sizes:
        row["parts"] = parts(store, entry)
        row["bytes"] += row["parts"]["written"]
    return row


def totals(store: Store) -> dict:
    """The store's bytes in all, in its captures' data directories, and in its orphans
    (``store/collect.py``)."""
    from .collect import find_orphans, size_of

    orphans = find_orphans(store)
    return {
        "bytes": size_of(store.root),
        "captures": size_of(store.folders.data),
        "orphans": sum(o.bytes for o in orphans),
        "orphan_count": len(orphans),
    }


def _output_rows(entry: CaptureEntry) -> int | None:
    import pyarrow.parquet as pq

    try:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in parquet_files(entry.output.path))
    except OSError:
        return None


def table(rows: list[dict], sizes: bool = False) -> str:
    """The rows as an aligned text table (``sizes``: a column per part before the
    sources); failed and damaged versions say why."""
    columns = [*COLUMNS[:-1], *(PART_COLUMNS if sizes else ()), COLUMNS[-1]]
    lines = [columns]
    notes = []
    for r in rows:
        if "failed" in r or "damaged" in r:
            status = "FAILED" if "failed" in r else "NEWER" if r.get("newer") else "DAMAGED"
            reason = r["failed"]["reason"] if "failed" in r else r["damaged"]
            lines.append([r["name"], f"v{r['version']}", r.get("created") or "", status] + [""] * (len(columns) - 4))
            notes.append(f"{r['name']} v{r['version']} {status.lower()}: {reason}")
            continue
        by_part = [human_bytes(r["parts"][p]) if r["parts"][p] else "" for p in PART_COLUMNS] if sizes else []
        lines.append(
            [
                r["name"],
                f"v{r['version']}",
                r["created"] or "",
                r["strategy"] or "",
                "" if r["seconds"] is None else f"{r['seconds']:.1f}",
                "" if r["rows"] is None else f"{r['rows']:,}",
                human_bytes(r["bytes"]),
                *by_part,
                ", ".join(r["sources"]),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
    return "\n".join(text + ([""] + notes if notes else []))
