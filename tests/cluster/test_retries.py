"""Tasks that fail on their first attempt and are retried leave the stored lineage as
a clean run stores it: every capture strategy, with witnesses, a write and an RDD
program (``retries.py``, in a ``local[2,4]`` session of its own: local mode's default
allows no retry)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

CASES = ("inject", "logical", "defer", "lazy", "witnesses", "write", "rdd", "rdd-sides-written")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("retries")
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("retries.py")), str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("case", CASES)
def test_retried_tasks_store_the_lineage_a_clean_run_stores(runs, case):
    clean, retried = runs[case]["clean"], runs[case]["retried"]
    # before and after the shuffle; after the side files are written (twice: two partitions)
    assert retried["failed_attempts"] >= 2
    assert retried["values"] == clean["values"]
    assert retried["lineage"] == clean["lineage"]
    assert all(clean["lineage"].values())  # every output row has rows behind it
    # no file of a failed attempt is left behind, none is missing
    assert retried["files"] == clean["files"]
    assert not any("/." in f and f.endswith(".parquet") or "_temporary" in f for f in retried["files"])
