"""Removing captures and collecting a store's garbage (``sparkprov rm``, ``sparkprov gc``).

A version is removed in an order that a kill at any moment leaves safe: its marker
first (``Store.mark_removed``: from then on it is neither listed nor loaded, and its
number is never given again), then its index records, then its files. What a kill
leaves behind is garbage the next collection removes.

Garbage (an **orphan**) is what no live entry names: a data directory, a checkpoint's
or a mark's rows or an RDD context's folder whose writer is gone (``store/lease.py``:
its claim's lease is free) or whose version was removed; an unclaimed one, or a
temporary file a writer left (``.tmp-*``, a directory being published, an answer's
``work/``), once older than the grace period (and never younger than a minute: a
live writer's temporary files last milliseconds to seconds). A directory whose writer lives is never
garbage: it is what a capture being made will name. After deciding, the collector
reads the catalog again and keeps whatever an entry committed meanwhile names.

A capture other captures read (its output or written files are their source) or a
workflow's record names is removed only when asked (``force``): their traces would
stop at it.

>>> import tempfile
>>> store = Store(tempfile.mkdtemp())
>>> collect_garbage(store).removed
[]
"""

from __future__ import annotations

import calendar
import contextlib
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CaptureTooNew, InvalidArgument, StoreCorrupt
from .catalog import Store, parse_spec
from .contents import Contents, Version, local, read_contents
from .files import human_bytes
from .layout import StoreFolders
from .lease import CLAIM, lease_held, leases, owner_alive, release

GRACE = 3600.0  # seconds an unclaimed directory or a temporary file is left be
# ... and never less, whatever the grace asked: a live writer's temporary file lives for
# milliseconds to seconds (a commit's entry before its link, a claim before its rename)
MIN_AGE = 60.0
# what writers leave while they write: a commit's or an index record's file (.tmp-*), a
# directory being published (.<name>-<32 hex>), a file written whole (.<name>.<32 hex>)
_TEMPORARY = re.compile(r"^\.(tmp-.+|.+[-.][0-9a-f]{32})$")


@dataclass(frozen=True)
class Orphan:
    """Something in the store that no live entry names."""

    path: Path
    bytes: int
    why: str
    writer: str  # "alive", "gone" (its claim's lease is free) or "unknown" (unclaimed)
    age: float  # seconds since it last changed

    def removable(self, grace: float) -> bool:
        return self.writer == "gone" or (self.writer == "unknown" and self.age >= max(grace, MIN_AGE))

    def to_json(self) -> dict:
        return {"path": str(self.path), "bytes": self.bytes, "why": self.why, "writer": self.writer, "age": self.age}


@dataclass
class Garbage:
    """What a removal or a collection removed (or, with ``dry_run``, would remove) and kept."""

    dry_run: bool = False
    removed: list[dict] = field(default_factory=list)  # {"version": "name@v"} or {"path": ...}, with bytes
    kept: list[dict] = field(default_factory=list)  # {"version" or "path", "why"}

    @property
    def bytes(self) -> int:
        return sum(r.get("bytes", 0) for r in self.removed)

    def to_json(self) -> dict:
        return {"dry_run": self.dry_run, "removed": self.removed, "kept": self.kept, "bytes": self.bytes}

    def to_text(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        lines = [
            f"{verb} {r.get('version') or r['path']} ({human_bytes(r.get('bytes', 0))}): {r['why']}"
            for r in self.removed
        ]
        lines += [f"kept {k.get('version') or k['path']}: {k['why']}" for k in self.kept]
        total = f"{verb} {len(self.removed)} item(s), {human_bytes(self.bytes)}"
        return "\n".join([*lines, total])


def size_of(path: Path) -> int:
    """The bytes removing ``path`` frees: a file linked several times under it counted
    once, and not at all while a link outside it remains (captures share the snapshots
    of unchanged sources: ``capture/snapshots.py``); what a writer removes or renames
    meanwhile counts nothing."""
    try:
        if not path.is_dir():
            st = path.lstat()
            return st.st_size if st.st_nlink == 1 else 0
    except FileNotFoundError:
        return 0
    total, linked = 0, {}
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            with contextlib.suppress(FileNotFoundError):  # removed by its writer meanwhile
                st = os.lstat(os.path.join(dirpath, name))
                if st.st_nlink == 1:
                    total += st.st_size
                else:
                    size, links, seen = linked.get((st.st_dev, st.st_ino), (st.st_size, st.st_nlink, 0))
                    linked[(st.st_dev, st.st_ino)] = (size, links, seen + 1)
    return total + sum(size for size, links, seen in linked.values() if seen >= links)


def _age(path: Path, now: float) -> float:
    """Seconds since anything at ``path`` (its newest file or folder) changed."""
    paths = [str(path)]
    for dirpath, dirnames, filenames in os.walk(path):  # nothing for a file
        paths += [os.path.join(dirpath, name) for name in [*dirnames, *filenames]]
    newest = 0.0
    for each in paths:
        with contextlib.suppress(FileNotFoundError):
            newest = max(newest, os.lstat(each).st_mtime)
    return max(0.0, now - newest)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _units(root: Path) -> list[tuple[Path, str]]:
    """The directories an entry may name as a whole, with what they are."""
    folders = StoreFolders(root)
    found = []
    for parent, what in (
        (folders.data, "a capture's data directory"),
        (root / "checkpoints", "a checkpoint's rows"),
        (root / "marks", "a mark's rows"),
        (root / "rdd", "an RDD context's sources and side files"),
    ):
        if parent.is_dir():
            found += [(p, what) for p in sorted(parent.iterdir()) if not p.name.startswith(".")]
    return found


def _units_of(root: Path, paths: list[Path]) -> set[Path]:
    """The top-level directories (``data/<id>``, ``checkpoints/<name>``...) ``paths`` lie in."""
    return {root.joinpath(*p.relative_to(root).parts[:2]) for p in paths if len(p.relative_to(root).parts) >= 2}


def find_orphans(store: Store, contents: Contents | None = None, now: float | None = None) -> list[Orphan]:
    """Everything in ``store`` that no live entry names (see the module's docstring)."""
    contents = contents or read_contents(store)
    now = time.time() if now is None else now
    root = store.root
    ids, paths = contents.named()
    removed_ids = {e.id for e in contents.removed.values() if e.id}
    found: list[Orphan] = []
    whole = {root / "leases"}  # not looked into: orphans removed whole, and the leases
    named_units = _units_of(root, paths)
    for unit, what in _units(root):
        in_data = unit.parent == store.folders.data
        # a data directory is named by its entry, or read as a source by another capture
        if (in_data and unit.name in ids) or unit in named_units:
            continue
        alive = owner_alive(root, unit)
        if in_data and unit.name in removed_ids:
            why, writer = f"{what} of a removed version", "gone"
        else:
            why = f"{what} no entry names"
            writer = "unknown" if alive is None else "alive" if alive else "gone"
        found.append(Orphan(unit, size_of(unit), why, writer, _age(unit, now)))
        whole.add(unit)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in whole]
        for name in list(dirnames) + filenames:
            path = here / name
            temporary = _TEMPORARY.match(name) and not CLAIM.match(name) and ".owner." not in name
            work = name == "work" and here.parent == store.folders.data and here.name in ids
            if temporary or work:
                if name in dirnames:
                    dirnames.remove(name)
                why = "intermediate results of an answer" if work else "a temporary file a writer left"
                found.append(Orphan(path, size_of(path), why, "unknown", _age(path, now)))
    found += _stale_links(store, contents, now)
    return found


def _stale_links(store: Store, contents: Contents, now: float) -> list[Orphan]:
    """Index records of versions removed or never committed."""
    folder = store.links.folder
    found = []
    pattern = re.compile(r"^(?P<name>.+)\.v(?P<version>\d{6,})\.json$")
    for record in sorted(folder.glob("*/*.json")) if folder.is_dir() else []:
        m = pattern.match(record.name)
        if not m:
            continue
        version = (m["name"], int(m["version"]))
        if version in contents.live or version in contents.damaged or version in contents.newer:
            continue
        removed = version in contents.removed
        why = "index record of a removed version" if removed else "index record of a version never committed"
        found.append(Orphan(record, size_of(record), why, "gone" if removed else "unknown", _age(record, now)))
    return found


def _housekeeping(root: Path) -> None:
    """Claims and leases of processes that are gone, on what is no longer there."""
    for token in leases(root):
        lease_held(root, token)  # a free lease's file is removed
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            m = CLAIM.match(name)
            if m and owner_alive(root, Path(dirpath) / m["name"]) is False:
                (Path(dirpath) / name).unlink(missing_ok=True)


def _writable(store: Store, dry_run: bool) -> None:
    if not dry_run and not store.writable:
        raise InvalidArgument(f"store {store.root} cannot be written by this process: nothing can be removed")


def _drop(
    store: Store, contents: Contents, version: Version, why: str, garbage: Garbage, force: bool, together: set
) -> None:
    """Remove one version unless a capture not removed ``together`` with it reads it, or
    a workflow names it (``force``: anyway), recording what was done."""
    label = f"{version[0]}@{version[1]}"
    entry = contents.live[version]
    users = [f"capture {n}@{v} reads it" for n, v in contents.readers(version) if (n, v) not in together]
    users += contents.in_workflows.get(version, [])
    if users and not force:
        garbage.kept.append({"version": label, "why": "; ".join(users) + " (force removes it anyway)"})
        return
    files: list[Path] = []
    if entry.id:
        files.append(store.folders.capture(entry.id).root)
    written = local((entry.written or {}).get("path") or "")
    if written is not None and written != Path("") and written.is_relative_to(store.root):
        files.append(written)
    garbage.removed.append({"version": label, "bytes": sum(size_of(p) for p in files if p.exists()), "why": why})
    if garbage.dry_run:
        return
    store.mark_removed(*version, reason=why)
    del contents.live[version]
    contents.removed[version] = entry
    for record in store.links.folder.glob(f"*/{version[0]}.v{version[1]:06d}.json"):
        record.unlink(missing_ok=True)
    for path in files:
        _remove(path)
        release(path)


def remove(store: Store, spec: str, force: bool = False, dry_run: bool = False) -> Garbage:
    """Remove capture ``spec`` (``name``: every version; ``name@version``: that one),
    unless another capture reads it or a workflow names it (``force``: anyway)."""
    name, version = parse_spec(spec)
    _writable(store, dry_run)
    contents = read_contents(store)
    versions = [version] if version is not None else store.versions(name)
    if version is not None and version not in store.versions(name):
        store.load(name, version, failed_ok=True, verify_files=False)  # raises, saying why
    if not versions:
        store.load(name)  # raises CaptureNotFound naming the captures there are
    garbage = Garbage(dry_run=dry_run)
    for v in versions:
        if (name, v) in contents.damaged:
            raise StoreCorrupt(f"{name}@{v} cannot be read, so what it names is unknown: {contents.damaged[(name, v)]}")
        if (name, v) in contents.newer:
            why = contents.newer[(name, v)][1]
            raise CaptureTooNew(f"{name}@{v}: remove it with the sparkprov that wrote it; {why}")
    together = {(name, v) for v in versions}  # readers removed with it do not hold it back
    for v in versions:
        _drop(store, contents, (name, v), "removed by request", garbage, force, together)
    return garbage


def collect_garbage(
    store: Store,
    keep_versions: int | None = None,
    older_than: float | None = None,
    dry_run: bool = False,
    force: bool = False,
    grace: float = GRACE,
) -> Garbage:
    """Remove ``store``'s orphans and, by policy, old versions: of each name all but the
    newest ``keep_versions``, and versions created more than ``older_than`` seconds ago
    (both given: a version goes when both say so). A name's newest version is never
    removed by policy (``remove`` does that). Orphans unclaimed, and temporary files,
    go once older than ``grace`` seconds."""
    for value, what in ((keep_versions, "keep_versions"), (older_than, "older_than"), (grace, "grace")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise InvalidArgument(f"{what} is a number from 0, not {value!r}")
    if keep_versions is not None and (keep_versions < 1 or not float(keep_versions).is_integer()):
        raise InvalidArgument(
            f"keep_versions is a whole number from 1 (the newest is always kept), not {keep_versions!r}"
        )
    _writable(store, dry_run)
    contents = read_contents(store)
    if contents.newer:
        raise CaptureTooNew(
            "some captures were written by a newer sparkprov, so what they name is not all known here and "
            "nothing is collected; collect with that sparkprov: " + "; ".join(why for _, why in contents.newer.values())
        )
    if contents.damaged:
        raise StoreCorrupt(
            "some catalog entries cannot be read, so what they name is unknown and nothing is collected; "
            "`sparkprov check` lists them: " + "; ".join(contents.damaged.values())
        )
    garbage = Garbage(dry_run=dry_run)
    now = time.time()
    chosen = set(_by_policy(contents, keep_versions, older_than, now))
    for version in sorted(chosen):
        _drop(store, contents, version, _policy_why(keep_versions, older_than), garbage, force, chosen)
    orphans = [o for o in find_orphans(store, contents, now) if o.removable(grace)]
    if not dry_run:
        _housekeeping(store.root)
    # what an entry committed since names is no longer an orphan (a writer may commit
    # between the listing and the check of its lease, never after it is found gone)
    ids, paths = read_contents(store).named()
    units = _units_of(store.root, paths)
    for orphan in orphans:
        path = orphan.path
        top = len(path.relative_to(store.root).parts) == 2  # a unit: compared by the units paths lie in
        if path.name in ids or (path in units if top else any(p.is_relative_to(path) for p in paths)):
            garbage.kept.append({"path": str(path), "why": "an entry committed meanwhile names it"})
            continue
        garbage.removed.append({"path": str(path), "bytes": orphan.bytes, "why": orphan.why})
        if not dry_run:
            _remove(path)
            release(path)
    return garbage


def _by_policy(contents: Contents, keep_versions: int | None, older_than: float | None, now: float) -> list[Version]:
    if keep_versions is None and older_than is None:
        return []
    by_name: dict[str, list[int]] = {}
    for name, version in contents.live:
        by_name.setdefault(name, []).append(version)
    chosen = []
    for name, versions in by_name.items():
        versions.sort()
        for i, version in enumerate(versions[:-1]):  # never the newest
            old = keep_versions is None or i < len(versions) - keep_versions
            if older_than is not None:
                created = _created(contents.live[(name, version)].created)
                old = old and created is not None and now - created > older_than
            if old:
                chosen.append((name, version))
    return chosen


def _created(text: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _policy_why(keep_versions: int | None, older_than: float | None) -> str:
    said = []
    if keep_versions is not None:
        said.append(f"older than its name's newest {keep_versions}")
    if older_than is not None:
        said.append(f"made more than {older_than / 86400:g} days ago")
    return " and ".join(said)


def parse_age(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``15m`` or ``90s`` (a number alone: seconds).

    >>> parse_age("30d"), parse_age("2h"), parse_age("90")
    (2592000.0, 7200.0, 90.0)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not m:
        raise InvalidArgument(f"an age is a number with s, m, h, d or w (30d, 12h), not {text!r}")
    return float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m[2]]
