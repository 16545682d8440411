"""The command line: listing and tracing captures without Spark, and the demo's pipeline."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import pytest
from pyspark.sql import functions as F

import sparkprov as sp
from sparkprov import cli, demo
from sparkprov.cli.text_table import width

from ..conftest import ROOT


def sparkprov_process(*args: str) -> subprocess.CompletedProcess:
    """The command in a process of its own, as a shell runs it."""
    return subprocess.run([sys.executable, "-m", "sparkprov.cli", *args], cwd=ROOT, capture_output=True, text=True)


def sparkprov_cli(*args: str) -> subprocess.CompletedProcess:
    """The command run in this process, its output and exit status as a process's: a
    command that needs Spark gets the suite's session, where a process of its own would
    start a JVM (10 to 20 s on a 2-core machine) for each command."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as exit:  # argparse's usage errors
            code = exit.code
    return subprocess.CompletedProcess(["sparkprov", *args], code, out.getvalue(), err.getvalue())


def test_captures_lists_the_store_without_spark(session, spark, tmp_path):
    missing = sparkprov_process("captures", "--store", str(tmp_path / "missing"))
    assert missing.returncode == 1 and missing.stderr.startswith("sparkprov: error: no sparkprov store at")
    assert not (tmp_path / "missing").exists()  # listing does not create a store
    empty = sparkprov_process("captures", "--store", str(session.store.root))
    assert empty.returncode == 0 and "no captures" in empty.stdout
    session.capture(spark.range(3), name="three")
    listed = sparkprov_process("captures", "--store", str(session.store.root), "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert entry["name"] == "three" and entry["version"] == 1 and entry["sources"] == ["range_0"]
    assert "SparkSession" not in listed.stderr


def test_trace_commands_answer_from_the_store(session, spark):
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5), ("c", 7)], "k string, v int")
    session.source(df, "numbers")
    session.capture(df.groupBy("k").agg(F.sum("v").alias("total")), name="sums")
    store = str(session.store.root)
    back = sparkprov_cli("trace", "backward", "sums", "--where", "total < 5", "--store", store, "--json")
    assert back.returncode == 0, back.stderr
    answer = json.loads(back.stdout)
    assert answer["engine"] == "embedded" and answer["matched"] == 1
    rows = answer["relations"]["numbers"]["rows"]
    assert [(r["k"], r["v"]) for r in rows] == [("a", 1), ("a", 2)]
    fwd = sparkprov_cli("trace", "forward", "sums", "--source", "numbers", "--where", "v > 4", "--store", store)
    assert fwd.returncode == 0, fwd.stderr
    assert "2 source rows matched" in fwd.stdout and "sums: 2 rows" in fwd.stdout
    limited = sparkprov_cli("trace", "backward", "sums", "--where", "total > 0", "--limit", "1", "--store", store)
    assert "numbers: 4 rows, showing 1" in limited.stdout
    for args, message in [
        (["backward", "nope", "--where", "total > 1"], "no capture named 'nope'"),
        (["backward", "sums", "--where", "missing > 1"], "cannot evaluate predicate 'missing > 1'"),
        (["backward", "sums", "--where", "total >"], "cannot parse predicate"),
        (["forward", "sums", "--source", "other", "--where", "v > 1"], "has no source 'other'"),
    ]:
        bad = sparkprov_cli("trace", *args, "--store", store)
        assert bad.returncode == 1 and message in bad.stderr, (args, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1
    gone = sparkprov_cli("trace", "backward", "sums", "--where", "total > 1", "--store", store + "-gone")
    assert gone.returncode == 1 and "no sparkprov store" in gone.stderr


def test_trace_says_when_a_workload_restricted_the_lineage(session, spark):
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, v int")
    session.source(df, "numbers")
    workload = {"sources": ["numbers"], "where": {"numbers": "v > 1"}}
    session.capture(df.groupBy("k").agg(F.sum("v").alias("total")), name="sums", workload=workload)
    store = str(session.store.root)
    back = sparkprov_cli("trace", "backward", "sums", "--where", "k = 'a'", "--store", store)
    assert back.returncode == 0, back.stderr
    assert "numbers: 1 row" in back.stdout  # (a, 1) fails v > 1: the workload kept no lineage for it
    assert "note: source 'numbers': only rows where v > 1 (capture 'sums' workload where)" in back.stdout
    fwd = sparkprov_cli("trace", "forward", "sums", "--source", "numbers", "--where", "v = 1", "--store", store)
    assert fwd.returncode == 1 and "kept lineage of source 'numbers' only for rows where v > 1" in fwd.stderr


def test_source_predicates_and_drill_downs_from_the_command_line(session, spark):
    rows = [(i, "ab"[i % 2], ["air", "rail", "ship"][i % 3], i * 10) for i in range(12)]
    orders = session.source(spark.createDataFrame(rows, "oid int, k string, mode string, price int"), "orders")
    workload = {
        "sources": ["orders"],
        "group_by": {"orders": {"by": ["mode"], "aggregates": ["count(*)", "sum(price)"]}},
        "partition_by": {"orders": "mode"},
    }
    session.capture(orders.groupBy("k").count(), name="by_k", workload=workload)
    store = str(session.store.root)
    # k = 'a' is oids 0, 2, ..., 10: modes air (0, 6), ship (2, 8), rail (4, 10)
    for engine in ("embedded", "spark"):
        back = sparkprov_cli(
            "trace", "backward", "by_k", "--where", "k = 'a'", "--source", "orders", "--source-where",
            "mode IN ('air', 'rail')", "--engine", engine, "--store", store, "--json",
        )  # fmt: skip
        assert back.returncode == 0, back.stderr
        answer = json.loads(back.stdout)
        assert answer["engine"] == engine and answer["matched"] == 1
        assert [r["oid"] for r in answer["relations"]["orders"]["rows"]] == [0, 4, 6, 10]
    drill = sparkprov_cli("trace", "drill-down", "by_k", "--where", "k = 'a'", "--source", "orders", "--store", store)
    assert drill.returncode == 0, drill.stderr
    assert "1 output rows matched; orders: 3 groups" in drill.stdout
    as_json = sparkprov_cli(
        "trace", "drill-down", "by_k", "--where", "k IS NOT NULL", "--source", "orders", "--store", store, "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    groups = json.loads(as_json.stdout)
    assert groups["matched"] == 2 and groups["source"] == "orders"
    assert groups["groups"] == [
        {"mode": "air", "count(*)": 4, "sum(price)": 0 + 30 + 60 + 90},
        {"mode": "rail", "count(*)": 4, "sum(price)": 10 + 40 + 70 + 100},
        {"mode": "ship", "count(*)": 4, "sum(price)": 20 + 50 + 80 + 110},
    ]
    for args, message in [
        (["backward", "by_k", "--where", "k = 'a'", "--source-where", "mode = 'air'"], "give the source"),
        (["drill-down", "by_k", "--where", "k = 'a'", "--source", "nope"], "has no source 'nope'"),
    ]:
        bad = sparkprov_cli("trace", *args, "--store", store)
        assert bad.returncode == 1 and message in bad.stderr, (args, bad.stderr)
    session.capture(orders.groupBy("k").count(), name="plain")
    bad = sparkprov_cli("trace", "drill-down", "plain", "--where", "k = 'a'", "--source", "orders", "--store", store)
    assert bad.returncode == 1 and "capture 'plain' has no drill-down for source 'orders'" in bad.stderr


def test_trace_end_to_end_through_a_pipeline(session, spark, tmp_path):
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, v int")
    session.source(df, "numbers")
    session.capture(df.where("v > 1"), name="clean", path=tmp_path / "clean")
    session.capture(spark.read.parquet(str(tmp_path / "clean")).groupBy("k").count(), name="counts")
    store = str(session.store.root)
    # a process of its own: the command starts the Spark session it traces with
    back = sparkprov_process(
        "trace", "backward", "counts", "--where", "k = 'a'", "--end-to-end", "--store", store, "--json"
    )
    assert back.returncode == 0, back.stderr
    # Spark's start-up warnings (hostname, native Hadoop library, log4j profile) are not the user's
    assert " WARN " not in back.stderr and "log4j profile" not in back.stderr, back.stderr
    answer = json.loads(back.stdout)
    assert answer["engine"] == "spark" and set(answer["relations"]) == {"clean/numbers"}
    assert [(r["k"], r["v"]) for r in answer["relations"]["clean/numbers"]["rows"]] == [("a", 2)]
    bad = sparkprov_cli(
        "trace", "backward", "counts", "--where", "k = 'a'", "--end-to-end", "--engine", "embedded", "--store", store
    )
    assert bad.returncode == 1 and "end-to-end traces run on Spark" in bad.stderr


def test_why_and_how_commands(session, spark):
    orders = spark.createDataFrame([(1, "ann"), (2, "bob")], "oid int, cust string")
    items = spark.createDataFrame([(1, 3.0), (1, 4.0), (2, 5.0)], "oid int, price double")
    session.source(orders, "orders")
    session.source(items, "items")
    joined = orders.join(items, "oid").groupBy("cust").agg(F.sum("price").alias("total"))
    session.capture(joined, name="totals", witnesses=True)
    session.capture(joined, name="plain")
    store = str(session.store.root)
    how = sparkprov_cli("trace", "how", "totals", "--where", "cust = 'ann'", "--store", store)
    assert how.returncode == 0, how.stderr
    assert "1 output rows matched" in how.stdout and "cust=ann, total=7.0" in how.stdout
    (poly,) = [line.strip() for line in how.stdout.splitlines() if line.startswith("  ")]
    assert poly.startswith("δ(") and poly.count("orders#") == 2 and poly.count("items#") == 2
    why = sparkprov_cli("trace", "why", "totals", "--where", "total > 0", "--store", store, "--json")
    assert why.returncode == 0, why.stderr
    answer = json.loads(why.stdout)
    assert answer["matched"] == 2
    sizes = {r["row"]["cust"]: [len(w) for w in r["why"]] for r in answer["rows"]}
    assert sizes == {"ann": [3], "bob": [2]}  # a sum needs its whole group: one witness each
    bad = sparkprov_cli("trace", "why", "plain", "--where", "total > 0", "--store", store)
    assert bad.returncode == 1 and "witnesses=True" in bad.stderr


def test_bad_arguments_exit_nonzero(tmp_path):
    bad = sparkprov_process("bench", "capture", "--repeat", "0", "--data", str(tmp_path))
    assert bad.returncode == 1 and "--repeat" in bad.stderr
    bad = sparkprov_process("bench", "aggregates", "--repeat", "0", "--data", str(tmp_path))
    assert bad.returncode == 1 and "--repeat" in bad.stderr
    assert sparkprov_process("nonsense").returncode == 2


def test_demo_pipeline_traces_the_top_error(spark, session, tmp_path):
    log = demo.write_log(tmp_path / "app.log", lines=300)
    lines, descriptions, report = demo.error_report(spark, log)
    session.source(lines, "log")
    session.source(descriptions, "descriptions")
    cap = session.capture(report, name="errors")
    assert set(cap.sources) == {"log", "descriptions"}
    top = cap.output.orderBy("count", ascending=False).first()
    traced = cap.backward([top["_sp_rid"]])
    log_lines = [r["value"] for r in traced["log"].collect()]
    assert len(log_lines) == top["count"]
    assert all(f" ERROR {top['code']} " in line for line in log_lines)
    assert [r["description"] for r in traced["descriptions"].collect()] == [top["description"]]
    expected = sum(1 for line in log.read_text().splitlines() if f" ERROR {top['code']} " in line)
    assert expected == top["count"]


def test_versions_that_do_not_exist_are_named(session, spark, tmp_path):
    df = session.source(spark.createDataFrame([("a", 1)], "k string, v int"), "numbers")
    for _ in range(2):
        session.capture(df, name="a")
    store = str(session.store.root)
    for version, said in (("7", "capture 'a' has no version 7 (versions: 1-2)"), ("0", "not 0"), ("-1", "not -1")):
        done = sparkprov_cli("trace", "backward", "a", "--where", "k = 'a'", "--version", version, "--store", store)
        assert done.returncode == 1 and said in done.stderr and "no capture named" not in done.stderr
    first = sparkprov_cli("trace", "backward", "a", "--where", "k = 'a'", "--version", "1", "--store", store)
    assert first.returncode == 0, first.stderr
    listed = sparkprov_cli("captures", "--store", store, "--all-versions", "--json")
    assert [(r["name"], r["version"], r["rows"], r["strategy"]) for r in json.loads(listed.stdout)] == [
        ("a", 1, 1, "auto"),
        ("a", 2, 1, "auto"),
    ]
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(sp.StoreNotFound, match="is a file, not a sparkprov store"):
        sp.LineageSession(spark, store=tmp_path / "file.txt")
    done = sparkprov_cli("captures", "--store", str(tmp_path / "file.txt"))
    assert done.returncode == 1 and "is a file, not a sparkprov store" in done.stderr


def test_text_answers_show_nulls_whole_numbers_and_the_matched_rows(session, spark, tmp_path):
    path = tmp_path / "in" / "orders.csv"
    rows = [("東京", 6, "a"), ("x", None, None), ("None", 7, "b")]
    spark.createDataFrame(rows, "city string, n int, tag string").write.option("header", True).csv(str(path))
    orders = spark.read.option("header", True).schema("city string, n int, tag string").csv(str(path))
    session.capture(orders.where("city != 'zz'"), name="cities")  # unnamed: the source is named by its path
    store = str(session.store.root)
    args = ["--where", "city != 'y'", "--source", "orders.csv", "--store", store]
    done = sparkprov_cli("trace", "backward", "cities", *args)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "capture 'cities' v1: 3 output rows matched (embedded engine)"
    header = lines[1].split()
    assert header == ["city", "n", "tag", "_sp_rid"]  # the matched output rows come first
    by_city = {line.split()[0]: line for line in lines[2:5]}  # in the order of their rids
    assert by_city["x"].split()[:3] == ["x", "NULL", "NULL"] and by_city["None"].split()[:3] == ["None", "7", "b"]
    assert "6.0" not in done.stdout and "NaN" not in done.stdout
    # a wide character takes two columns: the next column starts where it does on the other lines
    wide, other = by_city["東京"], by_city["x"]
    assert width(wide[: wide.index("6") + 1]) == width(other[: other.index("NULL") + 4])
    dashed = sparkprov_cli("trace", "backward", "cities", "--where", "n IS NULL", "--null", "-", "--store", store)
    assert dashed.stdout.splitlines()[2].split()[:3] == ["x", "-", "-"]
    missing = sparkprov_cli("trace", "backward", "cities", "--where", "true", "--source", "nope", "--store", store)
    assert missing.returncode == 1 and "has no source 'nope'; sources: " in missing.stderr


def test_a_trace_without_spark_imports_no_pyspark(session, spark):
    df = session.source(spark.createDataFrame([("a", 1), ("b", 5)], "k string, v int"), "numbers")
    session.capture(df.groupBy("k").sum("v"), name="sums")
    store = str(session.store.root)
    code = (
        "import sys\nfrom sparkprov.cli import main\n"
        f"assert main(['trace', 'backward', 'sums', '--where', \"k = 'a'\", '--store', {store!r}]) == 0\n"
        f"assert main(['captures', '--store', {store!r}]) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('pyspark')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"  # PySpark (its SQL modules alone take 0.3 s) is not imported


def test_ui_serves_the_store_at_the_address_it_prints_until_interrupted(tmp_path):
    import signal
    import subprocess
    import sys
    import urllib.request
    from http.cookiejar import CookieJar

    from sparkprov.store.catalog import Store

    Store(tmp_path / "store")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkprov.cli", "ui", "--store", str(tmp_path / "store"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().startswith("sparkprov ui: serving store")
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
        with opener.open(url, timeout=10) as page:  # the token becomes a cookie, then the page
            assert page.status == 200 and b"/static/app.js" in page.read()
        with opener.open(url.split("?")[0] + "api/captures", timeout=10) as answer:
            assert answer.read() == b'{"total":0,"offset":0,"captures":[]}'
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_ui_says_why_it_cannot_start(tmp_path, capsys):
    import socket

    from sparkprov.cli import main
    from sparkprov.store.catalog import Store

    assert main(["ui", "--store", str(tmp_path / "none")]) == 1
    assert "error:" in capsys.readouterr().err
    Store(tmp_path / "store")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["ui", "--store", str(tmp_path / "store"), "--port", str(busy.getsockname()[1])]) == 1
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err
