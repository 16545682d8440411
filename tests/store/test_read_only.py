"""A read-only store is traced: what a first trace builds goes to a cache outside it.

The store is bind-mounted read-only over itself in a mount namespace of the command's
own (``unshare``), so the file system refuses writes whoever the user is, root included.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

from pyspark.sql import functions as F

from ..conftest import ROOT


def _read_only(store, cache, *commands: list[str]) -> subprocess.CompletedProcess:
    """``commands`` (sparkprov's arguments), run one after the other with ``store`` read-only."""
    python = f"{shlex.quote(sys.executable)} -m sparkprov.cli"
    script = f"mount --bind -o ro {shlex.quote(str(store))} {shlex.quote(str(store))} && " + " && ".join(
        f"{python} " + " ".join(shlex.quote(a) for a in args) for args in commands
    )
    env = {**os.environ, "SPARKPROV_CACHE": str(cache)}
    return subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_a_read_only_store_is_traced_by_both_engines(session, spark, tmp_path):
    assert shutil.which("unshare"), "util-linux's unshare is needed to mount the store read-only"
    df = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, v int"), "numbers")
    session.capture(df.groupBy("k").agg(F.sum("v").alias("total")), name="sums")  # lineage kept in the output
    words = session.rdd.parallelize(["a b", "b c", "c"], 2).flatMap(str.split).map(lambda w: (w, 1))
    words.reduceByKey(lambda x, y: x + y).collect(name="words")  # pairs resolved by the first Spark answer
    store = session.store.root
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    cache = tmp_path / "cache"
    trace = ["trace", "backward", "sums", "--where", "total < 5", "--store", str(store), "--json"]
    forward = ["trace", "forward", "sums", "--source", "numbers", "--where", "v = 5", "--store", str(store), "--json"]
    rdd = ["trace", "backward", "words", "--where", "_1 = 'b'", "--store", str(store), "--json", "--engine", "spark"]
    done = _read_only(store, cache, trace, forward, rdd)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(text) for text in done.stdout.replace("}\n{", "}\n\x00{").split("\x00")]
    backward, ahead, on_spark = answers
    assert [(r["k"], r["v"]) for r in backward["relations"]["numbers"]["rows"]] == [("a", 1), ("a", 2)]
    assert [r["k"] for r in ahead["relations"]["sums"]["rows"]] == ["b"]
    assert on_spark["engine"] == "spark" and on_spark["matched"] == 1
    (lines,) = on_spark["relations"].values()  # the side files a Spark answer resolves are the store's
    assert sorted(r["value"] for r in lines["rows"]) == ["a b", "b c"]
    assert done.stderr.count("is read-only; what traces build is kept in") == 3  # once a command
    assert "Traceback" not in done.stderr
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before  # nothing written into the store
    assert list(cache.rglob("lineage")) and list(cache.rglob("forward"))
