"""What ``sparkprov captures`` shows of each capture version, read from the store alone.

A damaged entry or file does not stop the listing: that version is shown as damaged,
with the reason, and every other one as usual.

>>> human_bytes(1536)
'1.5 KiB'
"""

from __future__ import annotations

from ..errors import CaptureFailed, StoreCorrupt
from .catalog import Store
from .entry import CaptureEntry
from .files import parquet_files, total_bytes
from .layout import StoreFolders

COLUMNS = ("name", "version", "created", "strategy", "seconds", "rows", "size", "sources")


def describe(store: Store, name: str, version: int) -> dict:
    """One listing row: name, version, created, strategy, seconds, output rows, bytes in
    the store and sources; ``failed`` or ``damaged`` (the reason) instead when so."""
    try:
        entry = store.load(name, version, failed_ok=True)
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
    return row


def _output_rows(entry: CaptureEntry) -> int | None:
    import pyarrow.parquet as pq

    try:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in parquet_files(entry.output.path))
    except OSError:
        return None


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def table(rows: list[dict]) -> str:
    """The rows as an aligned text table; failed and damaged versions say why."""
    lines = [list(COLUMNS)]
    notes = []
    for r in rows:
        if "failed" in r or "damaged" in r:
            status = "FAILED" if "failed" in r else "DAMAGED"
            reason = r["failed"]["reason"] if "failed" in r else r["damaged"]
            lines.append([r["name"], f"v{r['version']}", r.get("created") or "", status, "", "", "", ""])
            notes.append(f"{r['name']} v{r['version']} {status.lower()}: {reason}")
            continue
        lines.append(
            [
                r["name"],
                f"v{r['version']}",
                r["created"] or "",
                r["strategy"] or "",
                "" if r["seconds"] is None else f"{r['seconds']:.1f}",
                "" if r["rows"] is None else f"{r['rows']:,}",
                human_bytes(r["bytes"]),
                ", ".join(r["sources"]),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(COLUMNS))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
    return "\n".join(text + ([""] + notes if notes else []))
