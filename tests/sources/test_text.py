"""A traced ``textFile`` reads text in place: each line is identified by its input split
and its number in the split, and traces show it again exactly as ``sc.textFile`` read
it, whatever the splits (lines crossing them, ``\\r\\n`` and ``\\r`` line ends, a byte
order mark, no final line end)."""

from __future__ import annotations

import gzip
import random

import pytest

import sparkprov as sp
from sparkprov.sources.text import picked_lines, split_lines

ENDS = ["\n", "\r\n", "\r", "\n\n"]
TRICKY = (
    "\ufeffalpha beta\r\ngamma\rdelta\n\n"
    + "".join(f"line {i} {'x' * (i * 7 % 50)}{ENDS[i % 4]}" for i in range(60))
    + "no line end at the end"
)


@pytest.fixture
def tricky(tmp_path):
    path = tmp_path / "tricky.txt"
    path.write_bytes(TRICKY.encode())
    return path


@pytest.mark.parametrize("parts", [1, 3, 29])
def test_lines_read_back_as_spark_read_them(spark, session, tricky, parts):
    plain = spark.sparkContext.textFile(str(tricky), parts)
    traced = session.rdd.textFile(str(tricky), parts)
    assert traced.getNumPartitions() == plain.getNumPartitions()
    values = traced.collect(name="lines")
    assert values == plain.collect()
    cap = traced.capture
    (source,) = cap.sources
    assert cap.sources[source].kind == "text"
    # all lines, read again by Spark, in rid order: the lines as Spark read them
    assert [r["value"] for r in cap.sources[source].rows().orderBy("_sp_rid").collect()] == values
    out = {r["_sp_rid"]: r["value"] for r in cap.output.collect()}
    picked = sorted(out)[:: max(1, len(out) // 12)] + [max(out)]
    # each record traces to its own line, in both engines (Spark's for the first, a
    # middle and the last: a Spark trace runs a task per partition)
    for engine, rids in (("embedded", picked), ("spark", picked[:: max(1, len(picked) // 2)] + [max(out)])):
        for rid in rids:
            (line,) = cap.backward([rid], source=source, engine=engine).collect()
            assert line["value"] == out[rid], (engine, rid)


def test_a_changed_file_is_refused(spark, session, tricky):
    traced = session.rdd.textFile(str(tricky), 3).filter(lambda s: s.startswith("line 1"))
    traced.collect(name="ones")
    cap = traced.capture
    rid = cap.output.first()["_sp_rid"]
    assert cap.backward([rid], engine="embedded")["tricky.txt"].count() == 1
    tricky.write_bytes(b"changed\n" + TRICKY.encode())
    with pytest.raises(sp.SourceChanged, match="tricky.txt"):
        cap.backward([rid], engine="embedded")
    with pytest.raises(sp.SourceChanged):
        cap.sources["tricky.txt"].rows().count()


def test_compressed_text_is_copied(spark, session, tmp_path):
    path = tmp_path / "log.gz"
    path.write_bytes(gzip.compress(b"ERROR a\nINFO b\nERROR c\n"))
    errors = session.rdd.textFile(str(path)).filter(lambda s: s.startswith("ERROR"))
    assert errors.count(name="errors") == 2
    cap = errors.capture
    assert [s.kind for s in cap.sources.values()] == ["snapshot"]
    rids = [r["_sp_rid"] for r in cap.output.collect()]
    assert sorted(r["value"] for r in cap.backward(rids, source="log.gz").collect()) == ["ERROR a", "ERROR c"]


def test_picked_lines_are_the_splits_lines(tmp_path):
    # the embedded engine picks lines by their ends (NumPy); Spark's reader splits them all
    rng = random.Random(7)
    for trial in range(120):
        text = "".join(rng.choice(["a", "bb c", "\n", "\r", "\r\n", "é"]) for _ in range(rng.randint(0, 40)))
        path = tmp_path / f"t{trial}.txt"
        path.write_bytes(("\ufeff" if trial % 5 == 0 else "").encode() + text.encode())
        size = path.stat().st_size
        for parts in (1, 2, 5):
            step = max(1, size // parts)
            for start in range(0, max(size, 1), step):
                lines = split_lines(str(path), start, min(step, size - start))
                rows = list(range(len(lines) + 1))
                assert picked_lines(str(path), start, min(step, size - start), rows) == [*lines, None], (text, start)
