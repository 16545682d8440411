"""A CSV source's Parquet copy made once while its file is unchanged (capture/snapshots.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from pyspark.sql import functions as F

from sparkprov.capture import snapshots
from sparkprov.store.collect import size_of
from sparkprov.store.layout import local_path
from sparkprov.store.listing import totals

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCHEMA = "id int, name string, country string, amount int"
ROWS = "id,name,country,amount\n1,ann,NL,30\n2,bob,NL,20\n3,cid,BE,50\n4,dan,FR,10\n"


def _csv(tmp_path, text=ROWS):
    path = tmp_path / "people.csv"
    path.write_text(text)
    return str(path)


def _totals(spark, path, header=True):
    people = spark.read.option("header", header).schema(SCHEMA).csv(path)
    return people.groupBy("country").agg(F.sum("amount").alias("total"))


def _files(cap):
    (info,) = cap._infos.values()  # what the catalog keeps of the source
    assert info.kind == "snapshot"
    return [local_path(uri) for uri, _, _ in info.files]


def _all_bytes(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, names in os.walk(folder) for f in names)


def _inodes(cap):
    return {os.stat(f).st_ino for f in _files(cap)}


def _nl(cap):
    (name,) = cap.sources
    return sorted((r["name"], r["_sp_rid"]) for r in cap.backward("country = 'NL'", source=name).collect())


def test_a_second_capture_links_the_first_copy_and_traces_alike(spark, session, tmp_path):
    path = _csv(tmp_path)
    first = session.capture(_totals(spark, path), "totals")
    before = totals(session.store)["captures"]
    second = session.capture(_totals(spark, path), "totals")  # read again, as a user's next run would
    assert _inodes(second) == _inodes(first)  # the same files, linked
    # the store's bytes count the linked copy once
    folder = os.path.dirname(_files(second)[0])  # its part files and their checksums, all linked
    linked = sum(e.stat().st_size for e in os.scandir(folder) if e.stat().st_nlink > 1)
    own = size_of(session.store.folders.capture(second._entry.id).root)  # what removing it frees
    assert own == _all_bytes(session.store.folders.capture(second._entry.id).root) - linked
    assert totals(session.store)["captures"] - before == own
    assert [n for n, _ in _nl(second)] == ["ann", "bob"]
    assert _nl(second) == _nl(first)  # the same rids
    # each capture owns its links: removing the first leaves the second whole, and
    # frees all but the copy
    first_dir = session.store.folders.capture(first._entry.id).root
    assert session.remove("totals", first.version, dry_run=True).bytes == _all_bytes(first_dir) - linked
    session.remove("totals", first.version)
    assert [n for n, _ in _nl(second)] == ["ann", "bob"]
    third = session.capture(_totals(spark, path), "totals")
    assert _inodes(third) == _inodes(second)


def test_a_file_rewritten_in_place_is_read_again(spark, session, tmp_path):
    path = _csv(tmp_path)
    first = session.capture(_totals(spark, path), "totals")
    # the same size and, as a copy that keeps times leaves it, the same modification
    # time: what Hadoop lists of the file is as it was
    before = os.stat(path)
    with open(path, "r+") as f:
        f.write(ROWS.replace("ann,NL,30", "amy,NL,40"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = session.capture(_totals(spark, path), "totals")
    assert not _inodes(second) & _inodes(first)
    assert [n for n, _ in _nl(second)] == ["amy", "bob"]
    assert {r["country"]: r["total"] for r in second.output.collect()}["NL"] == 60


def test_other_options_over_the_same_file_make_their_own_copy(spark, session, tmp_path):
    path = _csv(tmp_path)
    with_header = session.capture(_totals(spark, path), "totals")
    # without the header option, the header line is a row (its amount not a number: null)
    without = session.capture(_totals(spark, path, header=False), "raw")
    assert not _inodes(without) & _inodes(with_header)
    assert without.output.count() == with_header.output.count() + 1


def test_a_copy_whose_capture_was_removed_is_written_again(spark, session, tmp_path):
    path = _csv(tmp_path)
    first = session.capture(_totals(spark, path), "totals")
    session.remove("totals")
    again = session.capture(_totals(spark, path), "totals")
    assert _files(again) and all(os.path.exists(f) for f in _files(again))
    assert [n for n, _ in _nl(again)] == ["ann", "bob"]
    assert again.version == first.version + 1


def test_the_next_capture_of_a_name_links_the_copy_its_entry_names(spark, session, tmp_path):
    path = _csv(tmp_path)
    first = session.capture(_totals(spark, path), "totals")
    snapshots._made.clear()  # what this process remembers: a new process has none
    other = session.capture(_totals(spark, path), "other")  # another name: its entry names nothing
    assert not _inodes(other) & _inodes(first)
    snapshots._made.clear()
    again = session.capture(_totals(spark, path), "totals")
    assert _inodes(again) == _inodes(first)
    assert _nl(again) == _nl(first)


def test_a_pipeline_run_again_in_a_new_process_links_the_last_run_s_copy(tmp_path):
    path, store = _csv(tmp_path), str(tmp_path / "store")

    def run() -> set[str]:
        done = subprocess.run(
            [sys.executable, "-m", "tests.capture.snapshot_worker", store, path, "daily"],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return set(done.stdout.split())

    assert run() == run()  # the second process's snapshot is the first's files


def test_a_damaged_entry_before_is_not_linked_from(spark, session, tmp_path):
    path = _csv(tmp_path)
    first = session.capture(_totals(spark, path), "totals")
    snapshots._made.clear()
    entry = session.store.folders.entry("totals", first.version)
    entry.write_text(entry.read_text()[:100])  # cut short, as a full disk leaves it
    again = session.capture(_totals(spark, path), "totals")
    assert not _inodes(again) & _inodes(first)
    assert [n for n, _ in _nl(again)] == ["ann", "bob"]
