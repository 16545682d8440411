"""TPC-H data generation and the 22 TPC-H queries in Spark SQL, for benchmarks.

Data comes from ``tpchgen-cli`` (installed with the ``test`` extra). Without ``--parts`` it writes
one Snappy-compressed Parquet file per table, ``<dir>/<table>.parquet``, in row groups of about
7 MiB (one per table at SF 0.01; 53 for lineitem at SF 1). Keys are ``bigint`` (``int`` for
``l_linenumber``, ``o_shippriority``, ``p_size``, ``ps_availqty``), money and quantities
``decimal(15,2)``, dates ``date`` and text ``string``. A directory per table
(``<dir>/<table>/``, as ``--parts`` writes) is accepted as well.

The query texts in ``tpch_queries/qNN.sql`` are DuckDB's ``tpch_queries()`` texts (the
standard validation parameters, dates already folded into literals) with the trailing
semicolons removed and Q15's view written as a CTE named ``revenue0``. Spark's decimal
rules round some results where DuckDB returns doubles: ``avg`` of a ``decimal(15,2)`` is a
``decimal(19,6)`` (Q1) and a decimal quotient keeps 6 places (Q8, Q14, Q17).

>>> query(6).splitlines()[0]
'SELECT'
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
N_QUERIES = 22


def _sf_label(scale_factor: float) -> str:
    # "sf1" rather than "sf1.0", so generate(1, d) and generate(1.0, d) share one directory.
    sf = float(scale_factor)
    return str(int(sf)) if sf.is_integer() else repr(sf)


def _table_location(path: Path, table: str) -> Path | None:
    single = path / f"{table}.parquet"
    if single.is_file():
        return single
    parts = path / table
    if parts.is_dir() and any(parts.glob("*.parquet")):
        return parts
    return None


def _complete(path: Path) -> bool:
    return path.is_dir() and all(_table_location(path, t) is not None for t in TABLES)


def _executable() -> str:
    # The venv's bin is often not on PATH (e.g. when run as .venv/bin/python), so look beside the interpreter first.
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError(
            f"tpchgen-cli not found next to {sys.executable} or on PATH; install it with `pip install tpchgen-cli`"
        )
    return found


def _format_args(exe: str) -> list[str]:
    # Older tpchgen-cli releases took `--format parquet`; 4.x rejects that flag and wants a `parquet` subcommand.
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True)
    return ["--format", "parquet"] if "--format" in proc.stdout else ["parquet"]


def generate(scale_factor: float, directory: str | Path) -> Path:
    """Generate TPC-H Parquet data at ``scale_factor`` into ``directory/sf<scale_factor>/`` and return that path.

    Data already there (one Parquet file or directory per table) is reused. Generation writes to a
    temporary sibling directory that is renamed into place, so an interrupted run leaves nothing
    that looks complete.
    """
    if scale_factor <= 0:
        raise ValueError(f"scale_factor must be positive, got {scale_factor}")
    root = Path(directory)
    target = root / f"sf{_sf_label(scale_factor)}"
    if _complete(target):
        return target

    exe = _executable()
    root.mkdir(parents=True, exist_ok=True)
    # Not tempfile.mkdtemp: its 0700 mode would survive the rename and hide the data from other users.
    tmp = root / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        cmd = [exe, *_format_args(exe), "--scale-factor", _sf_label(scale_factor), "--output-dir", str(tmp)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"tpchgen-cli failed with exit code {proc.returncode}: {' '.join(cmd)}\n{proc.stderr.strip()}"
            )
        missing = [t for t in TABLES if _table_location(tmp, t) is None]
        if missing:
            raise RuntimeError(f"tpchgen-cli did not write tables {missing} into {tmp}\n{proc.stderr.strip()}")
        try:
            os.rename(tmp, target)
        except OSError:
            # Another process may have finished the same scale factor first; its copy is as good as ours.
            if _complete(target):
                return target
            raise RuntimeError(f"{target} exists but lacks some TPC-H tables; remove it and retry") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def register(spark: SparkSession, path: str | Path) -> None:
    """Register every TPC-H table under ``path`` as a temporary view named after the table."""
    path = Path(path)
    for table in TABLES:
        location = _table_location(path, table)
        if location is None:
            raise FileNotFoundError(f"no Parquet data for TPC-H table {table!r} under {path}")
        spark.read.parquet(str(location)).createOrReplaceTempView(table)


def query(n: int) -> str:
    """Return the Spark SQL text of TPC-H query ``n`` (1..22), without a trailing semicolon."""
    if not 1 <= n <= N_QUERIES:
        raise ValueError(f"TPC-H query number must be in 1..{N_QUERIES}, got {n}")
    text = (resources.files("sparkprov.bench") / "tpch_queries" / f"q{n:02d}.sql").read_text(encoding="utf-8")
    return text.rstrip()
