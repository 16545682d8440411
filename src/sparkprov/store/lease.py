"""Which process is writing what into a store, so that nothing a live writer is about
to name is taken for garbage.

Every process that writes into a store holds a lease there: ``leases/<token>.lock``,
locked with ``flock(2)`` for as long as the process lives (the kernel releases it when
the process ends, however it ends: a SIGKILL too). Before it makes a directory that a
catalog entry will name (a capture's data directory, a checkpoint's rows, a mark's rows,
an RDD context's folder), it claims the path: ``.<name>.owner`` beside it holds the
token, written before the directory exists. A directory no entry names is garbage only
once its claim's lease is free; an unclaimed one (an older sparkprov's, or a writer
killed between its claim and its directory) only once older than a grace period.

``flock`` locks conflict between two opens of one file within a process too, so a
collector running in the writing process sees its own lease held. Locks are what the
local file system gives; on a network file system whose locks are not shared between
machines, the grace period is the only guard (docs/architecture.md says so).

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> claim(root, root / "data" / "ab12")
>>> owner_alive(root, root / "data" / "ab12")
True
>>> owner_alive(root, root / "data" / "cd34") is None
True
"""

from __future__ import annotations

import fcntl
import os
import re
import uuid
from pathlib import Path

from ..errors import StoreUnsupported
from .files import write_atomic

_HELD: dict[tuple[Path, int], tuple[str, int]] = {}  # (store, pid): (token, locked fd)
CLAIM = re.compile(r"^\.(?P<name>.+)\.owner$")


def _lease_file(root: Path, token: str) -> Path:
    return root / "leases" / f"{token}.lock"


def lease_token(root: Path) -> str:
    """This process's lease on the store at ``root``, taken on first use and held until
    the process ends (a child process made by fork takes its own)."""
    key = (root, os.getpid())
    if key not in _HELD:
        token = f"{os.getpid()}-{uuid.uuid4().hex}"
        path = _lease_file(root, token)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:  # NFS without its lock service, some FUSE file systems
            os.close(fd)
            raise StoreUnsupported(
                f"{root}: a writer holds a lock on the store for as long as it lives (flock(2)), so that "
                f"gc never takes what it is writing, and this file system refuses it ({exc.strerror}). "
                "Keep the store on a file system with locks (docs/store.md)"
            ) from exc
        _HELD[key] = (token, fd)
    return _HELD[key][0]


def claim_file(path: Path) -> Path:
    """Where the claim on ``path`` is kept: beside it, hidden."""
    return path.with_name(f".{path.name}.owner")


def claim(root: Path, path: Path) -> None:
    """Say that this process is writing ``path`` (inside the store at ``root``), before
    it exists: a collector leaves it be while this process lives."""
    token = lease_token(root)
    target = claim_file(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, token)


def release(path: Path) -> None:
    """Drop the claim on ``path`` (a committed entry names it now, or it is gone)."""
    claim_file(path).unlink(missing_ok=True)


def lease_held(root: Path, token: str) -> bool:
    """Whether the process holding lease ``token`` still lives. A free lease's file is
    removed (its process is gone for good: tokens are never reused)."""
    path = _lease_file(root, token)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return True
    path.unlink(missing_ok=True)
    os.close(fd)  # releases the lock taken just now
    return False


def owner_alive(root: Path, path: Path) -> bool | None:
    """Whether the process that claimed ``path`` lives; None when nothing claims it."""
    try:
        token = claim_file(path).read_text().strip()
    except OSError:
        return None
    return lease_held(root, token) if token else None


def leases(root: Path) -> list[str]:
    """The tokens of the leases whose files the store holds."""
    folder = root / "leases"
    return sorted(p.name[: -len(".lock")] for p in folder.glob("*.lock")) if folder.is_dir() else []
