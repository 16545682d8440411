"""Snapshots of sources without row positions (CSV, JSON, ORC, text), made once while
their files are unchanged.

A capture reads such a source through a Parquet copy it writes first
(``rules/leaf.py``), which costs a Spark job reading and parsing every file (a 50,000
row CSV: about 0.6 s a capture). A later capture over the same relation (format,
options, schemas, the session's SQL settings) and the same files gets an earlier
copy instead, hard-linked into its own folder (copied where links are not possible):
one made earlier in this process, or the one the newest capture of the same name keeps
(its catalog entry holds the copy's key), as a pipeline run again each day over the
same dimension files finds it. The capture owns its files as before, so removing
either capture leaves the other whole, and its rids are the earlier capture's (file
numbers come from the copy's sorted file names).

Only local files are kept track of: besides the size and modification time Hadoop
lists (to the millisecond), a file's inode and change time (to the nanosecond, which no
write leaves as it was) must be as they were, so a file rewritten in place is read
again. A copy whose files are gone or changed in size (its capture removed) is not used.

>>> import tempfile
>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b, folder = Bridge(spark), tempfile.mkdtemp()
>>> _ = open(f"{folder}/t.csv", "w").write("a\\n1\\n")
>>> leaf = b.analyzed(spark.read.csv(f"{folder}/t.csv"))
>>> files = b.files(b.file_relation(leaf))
>>> def copy(path):
...     return lambda: spark.read.csv(f"{folder}/t.csv").write.parquet(path)
>>> key = snapshot_key(b, leaf, "", files)
>>> [written_once(key, f"{folder}/{n}", copy(f"{folder}/{n}")) for n in ("s1", "s2")]
[False, True]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..plan.catalyst import Bridge, JPlan
from ..store.fs import files_under, link_files
from ..store.layout import local_path

_KEPT = 64  # relations remembered, the latest first to stay
_lock = threading.Lock()
Copy = tuple[str, tuple[tuple[str, int], ...]]  # a folder and its files' names and sizes
_made: OrderedDict[str, Copy] = OrderedDict()


def snapshot_key(bridge: Bridge, leaf: JPlan, schema: str, files: list[tuple[str, int, int]]) -> str | None:
    """What the snapshot of ``leaf`` (read from ``files``, as Hadoop listed them) holds
    depends on, hashed: the relation (format, options, schemas), the session's SQL
    settings (the time zone, the parser's policy, ANSI mode) and every file as it is
    now. None when it cannot be told: no files, files not local, or files changed
    since the relation listed them."""
    if not files or not all(p.startswith("file:") for p, _, _ in files):
        return None
    stats = []
    for uri, size, mtime in files:
        try:
            st = os.stat(local_path(uri))
        except OSError:
            return None
        if st.st_size != size or st.st_mtime_ns // 1_000_000 != mtime:
            return None  # the relation's listing is older than the files
        stats.append(f"{uri}\t{size}\t{st.st_mtime_ns}\t{st.st_ctime_ns}\t{st.st_ino}\t{st.st_dev}")
    fs = bridge.file_relation(leaf)
    if fs is None:
        return None
    settings = str(bridge.jsession.sessionState().conf().getAllConfs().mkString("\x01")).split("\x01")
    relation = [
        str(fs.fileFormat().toString()),
        str(fs.options().toString()),
        str(fs.dataSchema().json()),
        str(fs.partitionSchema().json()),
        schema,
        # not the process's own (its port, its id, its warehouse): a later process finds the same
        *sorted(s for s in settings if s.startswith("(spark.sql.") and not s.startswith("(spark.sql.warehouse.dir,")),
    ]
    return hashlib.sha256("\n".join(relation + sorted(stats)).encode()).hexdigest()


def written_once(key: str | None, path: str, write: Callable[[], None], earlier: Copy | None = None) -> bool:
    """The snapshot of key ``key`` at ``path``: a copy made earlier in this process, or
    ``earlier`` (one an earlier capture keeps), linked there, else ``write()`` called
    and what it wrote remembered. True when an earlier copy was used."""
    folder = _local(path)
    if key is not None and folder is not None:
        for found in (_kept(key), earlier):
            if found is not None and _linked(*found, folder):
                _keep(key, folder, found[1])  # the latest copy: the one least likely removed
                return True
    write()
    if key is not None and folder is not None:
        _keep(key, folder, tuple(sorted(files_under(folder))))  # a snapshot's folder is flat
    return False


def kept_copy(files: list[tuple[str, int, int]]) -> Copy | None:
    """The copy a capture's catalog entry names (its snapshot's files), to link from;
    None unless they are local files in one folder."""
    if not files or not all(isinstance(p, str) and _local(p) is not None for p, _, _ in files):
        return None
    folders = {os.path.dirname(local_path(p)) for p, _, _ in files}
    if len(folders) != 1:
        return None
    return folders.pop(), tuple(sorted((os.path.basename(local_path(p)), size) for p, size, _ in files))


def _local(path: str) -> str | None:
    if path.startswith("file:") or "://" not in path:
        return local_path(path)
    return None


def _kept(key: str) -> Copy | None:
    with _lock:
        found = _made.get(key)
        if found is not None:
            _made.move_to_end(key)
        return found


def _keep(key: str, folder: str, files: tuple[tuple[str, int], ...]) -> None:
    with _lock:
        _made[key] = (folder, files)
        _made.move_to_end(key)
        while len(_made) > _KEPT:
            _made.popitem(last=False)


def _linked(source: str, files: tuple[tuple[str, int], ...], folder: str) -> bool:
    """``files`` of ``source`` linked (or copied) into the new ``folder``; False, and
    nothing left there, when any is no longer there with its size."""
    try:
        if any(os.stat(os.path.join(source, name)).st_size != size for name, size in files):
            return False
        link_files([Path(source, name) for name, _ in files], Path(folder))
        return True
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return False
