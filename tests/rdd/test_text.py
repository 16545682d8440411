"""A traced ``textFile`` reads text in place: each line is identified by its input split
and its number in the split, and traces show it again exactly as ``sc.textFile`` read
it, whatever the splits (lines crossing them, ``\\r\\n`` and ``\\r`` line ends, a byte
order mark, no final line end)."""

from __future__ import annotations

import gzip

import pytest

import sparkprov as sp

TRICKY = (
    "\ufeffalpha beta\r\ngamma\rdelta\n\n"
    + "".join(f"line {i} {'x' * (i * 7 % 50)}\n" for i in range(60))
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
    for rid in picked:  # each record traces to its own line, in both engines
        for engine in ("embedded", "spark"):
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
