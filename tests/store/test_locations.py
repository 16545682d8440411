"""Where a store may live: a path or a ``file:`` URI; another file system's URI, or a
file system without the hard links and locks the catalog commit needs, is refused
with a message saying what is missing, before anything is written (``docs/store.md``)."""

from __future__ import annotations

import errno
import os

import pytest

import sparkprov as sp
from sparkprov.cli import main
from sparkprov.store import catalog, lease
from sparkprov.store.catalog import Store


def _attempt() -> dict:
    return {"id": None, "created": "2026-12-01T00:00:00Z", "failed": {"reason": "a test"}, "sources": {}}


def test_a_file_uri_is_the_directory_it_names(tmp_path):
    folder = tmp_path / "my store"
    store = Store(f"file://{str(folder).replace(' ', '%20')}")
    assert store.root == folder and (folder / "FORMAT").is_file()
    store.commit("a", _attempt())
    assert Store(f"file:{folder}").names() == ["a"]  # Hadoop's spelling, one slash


@pytest.mark.parametrize("uri", ["hdfs://namenode:8020/lineage", "gs://b/x"])
def test_another_file_system_is_refused_before_anything_is_written(spark, tmp_path, monkeypatch, capsys, uri):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sp.StoreUnsupported, match=f"{uri.split(':')[0]}:// does not give it"):
        Store(uri)
    with pytest.raises(sp.StoreUnsupported):
        sp.LineageSession(spark, store=uri)
    assert main(["captures", "--store", uri]) == 1
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith(f"sparkprov: error: a store at {uri}: ")
    assert list(tmp_path.iterdir()) == []  # no local folder named after the URI


@pytest.mark.parametrize("uri", ["s3a://bucket/lineage", "s3://bucket/lineage"])
def test_captures_are_not_written_into_an_object_store(spark, tmp_path, monkeypatch, uri):
    monkeypatch.chdir(tmp_path)
    for opening in (lambda: Store(uri), lambda: sp.LineageSession(spark, store=uri)):
        with pytest.raises(sp.StoreUnsupported, match="sparkprov push NAME --to s3://bucket/lineage"):
            opening()
    assert list(tmp_path.iterdir()) == []  # no local folder named after the URI


def _refuse(what: int):
    def refused(*args, **kwargs):
        raise OSError(what, os.strerror(what))

    return refused


def test_a_file_system_without_hard_links_is_refused_when_opened(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog.os, "link", _refuse(errno.EPERM))
    with pytest.raises(sp.StoreUnsupported, match=r"link\(2\).*Operation not permitted"):
        Store(tmp_path / "s")


def test_a_commit_refused_a_link_commits_nothing(tmp_path, monkeypatch):
    store = Store(tmp_path / "s")
    store.commit("a", _attempt())
    monkeypatch.setattr(catalog.os, "link", _refuse(errno.ENOTSUP))
    with pytest.raises(sp.StoreUnsupported, match="two writers could give one version twice"):
        store.commit("a", _attempt())
    monkeypatch.undo()
    assert store.versions("a") == [1]
    assert sorted(p.name for p in (tmp_path / "s" / "catalog" / "a").iterdir()) == ["v000001.json"]


def test_a_file_system_without_locks_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(lease.fcntl, "flock", _refuse(errno.ENOLCK))
    with pytest.raises(sp.StoreUnsupported, match=r"flock\(2\).*No locks available"):
        lease.lease_token(tmp_path)
    assert not lease._HELD.get((tmp_path, os.getpid()))
