"""Capture on executors that are JVMs of their own (``local-cluster``), whose Python
workers run a Python without sparkprov: its code is shipped with the job, and a Python
that lacks what that code imports is refused before the program runs, saying so."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

from ..conftest import ROOT


def _python(folder: Path, with_packages: bool) -> str:
    """A Python of its own: bare, or seeing this environment's packages (pyarrow, NumPy,
    PySpark) but not sparkprov, whose editable install a path file of ours does not add."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    if with_packages:
        site = Path(sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})["purelib"])
        (site / "packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(folder / "bin" / "python")


def test_executors_without_sparkprov_capture_or_refuse_clearly(tmp_path):
    bare, packages = _python(tmp_path / "bare", False), _python(tmp_path / "packages", True)
    probe = "import pyarrow, numpy, pyspark; import sparkprov"
    lacks = subprocess.run([packages, "-c", probe], capture_output=True, text=True)
    assert "No module named 'sparkprov'" in lacks.stderr  # the executors' Python has no sparkprov
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("wordcount.py")), bare, packages, str(tmp_path / "store")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    refused, captured = (json.loads(line) for line in done.stdout.splitlines())
    assert refused["refused"] == "ExecutorsLackModules"
    message = refused["message"]
    assert f"the executors' Python ({bare} on " in message and "cannot import" in message and "pyarrow" in message
    assert captured == {
        "counts": [["a", 3], ["b", 2], ["c", 1]],
        "behind_a": ["a", "a b a"],
        "numbers_behind_a": [1, 2],
    }
