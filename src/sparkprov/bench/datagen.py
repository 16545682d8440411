"""Benchmark data on disk: run a generator CLI once per scale factor, register views.

A data set lives in ``<directory>/sf<scale factor>/`` with one Parquet file
(``<table>.parquet``) or directory (``<table>/``) per table. Generation writes to a
temporary sibling directory that is renamed into place, so an interrupted run leaves
nothing that looks complete, and data already there is reused.

>>> sf_label(1.0), sf_label(0.1)
('1', '0.1')
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgument, SparkprovError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def sf_label(scale_factor: float) -> str:
    """``"1"`` rather than ``"1.0"``, so 1 and 1.0 share one directory."""
    sf = float(scale_factor)
    return str(int(sf)) if sf.is_integer() else repr(sf)


def table_location(path: Path, table: str) -> Path | None:
    """The Parquet file or directory holding ``table`` under ``path``, if any."""
    single = path / f"{table}.parquet"
    if single.is_file():
        return single
    parts = path / table
    if parts.is_dir() and any(parts.glob("*.parquet")):
        return parts
    return None


def complete(path: Path, tables: Sequence[str]) -> bool:
    return path.is_dir() and all(table_location(path, t) is not None for t in tables)


def executable(name: str, package: str) -> str:
    """The generator's path: beside the interpreter (a venv's bin is often not on PATH), else PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise SparkprovError(
            f"{name} not found next to {sys.executable} or on PATH; install it with `pip install {package}`"
        )
    return found


def generate(
    scale_factor: float,
    directory: str | Path,
    tables: Sequence[str],
    command: Callable[[str, str], list[str]],
    label: str,
) -> Path:
    """Data for ``tables`` at ``scale_factor`` in ``directory/sf<scale factor>/``; returns that path.

    ``command(scale factor label, output directory)`` is the generator's command line.
    """
    if scale_factor <= 0:
        raise InvalidArgument(f"scale_factor must be positive, got {scale_factor}")
    root = Path(directory)
    target = root / f"sf{sf_label(scale_factor)}"
    if complete(target, tables):
        return target
    root.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkdtemp: its 0700 mode would survive the rename and hide the data from other users.
    tmp = root / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        cmd = command(sf_label(scale_factor), str(tmp))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SparkprovError(
                f"{label} data generation failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()}"
            )
        missing = [t for t in tables if table_location(tmp, t) is None]
        if missing:
            raise SparkprovError(f"{' '.join(cmd)} did not write tables {missing}\n{proc.stderr.strip()}")
        try:
            os.rename(tmp, target)
        except OSError:
            # Another process may have finished the same scale factor first; its copy is as good as ours.
            if complete(target, tables):
                return target
            raise SparkprovError(f"{target} exists but lacks some {label} tables; remove it and retry") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def read_table(spark: SparkSession, path: str | Path, table: str, label: str) -> DataFrame:
    """``table`` read from under ``path`` (one file or a directory of parts); a clear
    error naming the ``label`` benchmark's table when it is missing."""
    location = table_location(Path(path), table)
    if location is None:
        raise FileNotFoundError(f"no Parquet data for {label} table {table!r} under {path}")
    return spark.read.parquet(str(location))


def register(spark: SparkSession, path: str | Path, tables: Sequence[str], label: str) -> None:
    """Register every table under ``path`` as a temporary view named after the table."""
    for table in tables:
        read_table(spark, path, table, label).createOrReplaceTempView(table)
