"""Capture on executors that are JVMs of their own (``local-cluster``), whose Python
workers run a Python without sparkprov: its code is shipped with the job, and a Python
that lacks what that code imports is refused before the program runs, saying so. An
executor killed during a capture leaves the stored lineage as a clean run stores it:
its tasks and the map outputs it held run again on the other executor. All in one
session of its own (``on_executors.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ..conftest import ROOT


def _python(folder: Path, with_packages: bool) -> str:
    """A Python of its own: bare, or seeing this environment's packages (pyarrow, NumPy,
    PySpark) but not sparkprov, whose editable install a path file of ours does not add."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    if with_packages:
        site = Path(sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})["purelib"])
        (site / "packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(folder / "bin" / "python")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> tuple[dict, dict, dict, str]:
    """The script's three outcomes (refused, captured, executors lost) and the bare Python."""
    folder = tmp_path_factory.mktemp("executors")
    bare, packages = _python(folder / "bare", False), _python(folder / "packages", True)
    probe = "import pyarrow, numpy, pyspark; import sparkprov"
    lacks = subprocess.run([packages, "-c", probe], capture_output=True, text=True)
    assert "No module named 'sparkprov'" in lacks.stderr  # the executors' Python has no sparkprov
    script = str(Path(__file__).with_name("on_executors.py"))
    (folder / "faults").mkdir()
    done = subprocess.run(
        [sys.executable, script, bare, packages, str(folder / "store"), str(folder / "faults")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    refused, captured, lost = (json.loads(line) for line in done.stdout.splitlines()[-3:])
    return refused, captured, lost, bare


def test_executors_without_sparkprov_capture_or_refuse_clearly(outcomes):
    refused, captured, _, bare = outcomes
    assert refused["refused"] == "ExecutorsLackModules"
    message = refused["message"]
    assert f"the executors' Python ({bare} on " in message and "cannot import" in message and "pyarrow" in message
    assert captured == {
        "counts": [["a", 3], ["b", 2], ["c", 1]],
        "behind_a": ["a", "a b a"],
        "numbers_behind_a": [1, 2],
    }


@pytest.mark.parametrize("case", ["dataframe", "rdd"])
def test_a_capture_that_loses_an_executor_stores_what_a_clean_run_stores(outcomes, case):
    clean, killed = outcomes[2][case]["clean"], outcomes[2][case]["killed"]
    assert killed["killed"] == 1
    assert killed["values"] == clean["values"]
    assert killed["lineage"] == clean["lineage"]
    assert all(clean["lineage"].values())
    assert killed["files"] == clean["files"]
