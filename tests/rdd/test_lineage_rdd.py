"""RDD programs traced with LineageContext, checked as lineage-semantics.md says:

1. reference semantics: each output record's lineage equals the lines a plain-Python
   reading of the program says it came from;
2. re-execution: the program over only those lines gives the record again;
3. consistency: forward from each of those lines reaches the record, and the program
   returns the same answer with capture as without.
"""

from __future__ import annotations

from collections import Counter

import pytest

import sparkprov as sp

LINES = [
    "ERROR 7 disk full guest",
    "INFO 1 started bob",
    "ERROR 7 disk full bob",
    "ERROR 3 timeout guest",
    "WARN 2 slow ann",
    "ERROR 3 timeout ann",
    "INFO 1 started bob",
]
CODES = [("7", "disk"), ("3", "network"), ("9", "unused")]


def word_count(lines, codes):
    return lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)


def errors_by_code(lines, codes):  # Titian's running example, with a join to descriptions
    errors = lines.filter(lambda s: s.startswith("ERROR")).map(lambda s: (s.split()[1], 1))
    return errors.reduceByKey(lambda a, b: a + b).join(codes).map(lambda kv: (kv[0], kv[1][0], kv[1][1]))


def users_by_level(lines, codes):
    return lines.map(lambda s: (s.split()[0], s.split()[-1])).groupByKey().mapValues(lambda us: sorted(set(us)))


def distinct_lines(lines, codes):
    return lines.distinct()


def outer_codes(lines, codes):
    return lines.map(lambda s: (s.split()[1], s.split()[0])).fullOuterJoin(codes)


def cogrouped(lines, codes):
    return lines.map(lambda s: (s.split()[1], 1)).cogroup(codes).mapValues(lambda p: (sum(p[0]), sorted(p[1])))


def sorted_union(lines, codes):
    return lines.filter(lambda s: "guest" in s).union(lines.filter(lambda s: "ann" in s)).sortBy(lambda s: s)


def per_user_totals(lines, codes):
    pairs = lines.map(lambda s: (s.split()[-1], int(s.split()[1])))
    return pairs.aggregateByKey(0, lambda a, v: a + v, lambda a, b: a + b).sortByKey()


def code_pairs(lines, codes):
    return lines.filter(lambda s: s.startswith("WARN")).cartesian(codes.keys())


def reference(program, lines: list[str], codes: list[tuple]) -> dict:
    """{output record: (line positions, code positions)} from the program's meaning."""
    if program is word_count:
        words = Counter(w for line in lines for w in line.split())
        return {(w, n): ({i for i, line in enumerate(lines) if w in line.split()}, set()) for w, n in words.items()}
    if program is errors_by_code:
        found = {}
        for j, (code, text) in enumerate(codes):
            rows = {i for i, line in enumerate(lines) if line.startswith("ERROR") and line.split()[1] == code}
            if rows:
                found[(code, len(rows), text)] = (rows, {j})
        return found
    if program is distinct_lines:
        return {line: ({i for i, other in enumerate(lines) if other == line}, set()) for line in lines}
    if program is sorted_union:
        return {line: ({i}, set()) for i, line in enumerate(lines) if "guest" in line or "ann" in line}
    if program is per_user_totals:
        users = {line.split()[-1] for line in lines}
        out = {}
        for u in users:
            rows = {i for i, line in enumerate(lines) if line.split()[-1] == u}
            out[(u, sum(int(lines[i].split()[1]) for i in rows))] = (rows, set())
        return out
    raise AssertionError(program)


PROGRAMS = [word_count, errors_by_code, distinct_lines, sorted_union, per_user_totals]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "app.log"
    path.write_text("\n".join(LINES) + "\n")
    return path


def run(ctx, log, program):
    lines = ctx.textFile(str(log))
    codes = ctx.parallelize(CODES, 2)
    return program(lines, codes)


def hashable(record):
    if isinstance(record, tuple):
        return tuple(hashable(x) for x in record)
    if isinstance(record, list):
        return tuple(hashable(x) for x in record)
    return record


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_lineage_matches_the_reference(spark, session, log, program):
    traced = run(session.rdd, log, program)
    values = traced.collect(name="prog")
    assert sorted(map(hashable, values)) == sorted(map(hashable, run(spark.sparkContext, log, program).collect()))
    cap = traced.capture
    expected = reference(program, LINES, CODES)
    line_rids = {r["_sp_rid"]: i for i, r in enumerate(cap.sources["app.log"].rows().orderBy("_sp_rid").collect())}
    assert [r["value"] for r in cap.sources["app.log"].rows().orderBy("_sp_rid").collect()] == LINES
    out = cap.output.collect()
    assert len(out) == len(values) == len(expected)
    names = [c for c in cap.output.columns if c != "_sp_rid"]
    # Spark answers from pairs resolved on first use; traces of a few rows walk the stored sides
    by_spark: dict[int, set[int]] = {}
    for pair in cap.pairs("app.log").collect():
        by_spark.setdefault(pair["out_rid"], set()).add(pair["in_rid"])
    for row in out:
        record = row["value"] if names == ["value"] else tuple(row[c] for c in names)
        want_lines, want_codes = expected[record]
        traced_rows = cap.backward([row["_sp_rid"]], engine="embedded")
        got_lines = {line_rids[r["_sp_rid"]] for r in traced_rows["app.log"].collect()}
        assert got_lines == want_lines, record
        assert {line_rids[r] for r in by_spark.get(row["_sp_rid"], ())} == want_lines, record
        if "parallelize_1" in traced_rows:
            assert {r["_sp_rid"] for r in traced_rows["parallelize_1"].collect()} == want_codes, record
        else:
            assert not want_codes
        # consistency: forward from every traced line reaches this record
        for rid in (r for r, i in line_rids.items() if i in want_lines):
            assert row["_sp_rid"] in {r["_sp_rid"] for r in cap.forward("app.log", [rid], engine="embedded").collect()}


def test_reexecution_on_the_traced_lines_gives_the_record(spark, session, log, tmp_path):
    traced = run(session.rdd, log, errors_by_code)
    traced.collect(name="errors")
    cap = traced.capture
    for row in cap.output.collect():
        lines = [r["value"] for r in cap.backward([row["_sp_rid"]], source="app.log").collect()]
        again = errors_by_code(spark.sparkContext.parallelize(lines), spark.sparkContext.parallelize(CODES))
        assert (row["_1"], row["_2"], row["_3"]) in again.collect()


def test_groups_outer_joins_cogroup_and_cartesian(spark, session, log):
    plain = spark.sparkContext
    for program in (users_by_level, outer_codes, cogrouped, code_pairs):
        traced = run(session.rdd, log, program)
        got = traced.collect(name=program.__name__)
        assert sorted(map(hashable, got), key=repr) == sorted(
            map(hashable, run(plain, log, program).collect()), key=repr
        )
    cap = session.load("outer_codes")
    # a code no line has: its record comes from the code alone
    (row,) = cap.output.where("_1 = '9'").collect()
    back = cap.backward([row["_sp_rid"]])
    (codes,) = [n for n in back if n != "app.log"]
    assert back["app.log"].count() == 0 and [r["_1"] for r in back[codes].collect()] == ["9"]
    cap = session.load("cogrouped")
    (row,) = cap.output.where("_1 = '7'").collect()
    back = cap.backward([row["_sp_rid"]])
    assert sorted(r["value"] for r in back["app.log"].collect()) == sorted(x for x in LINES if x.split()[1] == "7")
    (codes,) = [n for n in back if n != "app.log"]
    assert [r["_2"] for r in back[codes].collect()] == ["disk"]
    cap = session.load("users_by_level")
    (row,) = cap.output.where("_1 = 'INFO'").collect()
    assert cap.backward([row["_sp_rid"]], source="app.log").count() == 2


def test_actions_and_navigation(spark, session, log, tmp_path):
    lines = session.rdd.textFile(str(log))
    errors = lines.filter(lambda s: s.startswith("ERROR"))
    assert errors.count(name="n_errors") == 4
    assert errors.capture.output.count() == 4  # the counted records are the capture's output
    assert errors.take(1, name="first") == [LINES[0]]
    counts = errors.map(lambda s: (s.split()[1], 1)).reduceByKey(lambda a, b: a + b)
    counts.collect(name="counts")
    cursor = counts.get_lineage("_1 = '3'")
    assert sorted(r["value"] for r in cursor.go_back_all().to_df().collect()) == sorted([LINES[3], LINES[5]])
    assert cursor.go_back_all().count() == 2
    out = tmp_path / "codes"
    counts.saveAsTextFile(str(out), name="saved")
    written = sorted(line for f in out.glob("part-*") for line in f.read_text().splitlines())
    assert written == sorted(["('7', 2)", "('3', 2)"])
    assert sorted(r["_1"] for r in counts.capture.output.collect()) == ["3", "7"]


def test_whole_text_files(spark, session, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.log").write_text("ERROR 1\nINFO 2\n")
    (folder / "b.log").write_text("ERROR 3\n")
    files = session.rdd.wholeTextFiles(str(folder))
    errors = files.flatMap(lambda pf: [(pf[0].rsplit("/", 1)[-1], line) for line in pf[1].splitlines()])
    counts = errors.filter(lambda fl: fl[1].startswith("ERROR")).mapValues(lambda _: 1).reduceByKey(lambda a, b: a + b)
    assert sorted(counts.collect(name="per_file")) == [("a.log", 1), ("b.log", 1)]
    assert sorted(files.map(lambda pf: pf[1]).collect()) == sorted(
        spark.sparkContext.wholeTextFiles(str(folder)).values().collect()
    )
    (row,) = counts.capture.output.where("_1 = 'b.log'").collect()
    (traced,) = counts.capture.backward([row["_sp_rid"]], source="logs").collect()
    assert traced["path"].endswith("/b.log") and traced["value"] == "ERROR 3\n"


def test_unsupported_and_bad_arguments(spark, session, log, tmp_path):
    lines = session.rdd.textFile(str(log))
    with pytest.raises(sp.UnsupportedOperation, match="RDD.zipWithIndex"):
        lines.zipWithIndex()
    with pytest.raises(FileNotFoundError, match="no such file"):
        session.rdd.textFile(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="LineageRDD"):
        lines.union(spark.sparkContext.parallelize([1]))
    with pytest.raises(ValueError, match="follows an action"):
        lines.map(len).get_lineage()
    with pytest.raises(ValueError, match="invalid capture name"):
        lines.count(name="bad name!")
