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

import subprocess
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgument
from . import datagen

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
N_QUERIES = 22


def _format_args(exe: str) -> list[str]:
    # Older tpchgen-cli releases took `--format parquet`; 4.x rejects that flag and wants a `parquet` subcommand.
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True)
    return ["--format", "parquet"] if "--format" in proc.stdout else ["parquet"]


def _command(sf: str, out: str) -> list[str]:
    exe = datagen.executable("tpchgen-cli", "tpchgen-cli")
    return [exe, *_format_args(exe), "--scale-factor", sf, "--output-dir", out]


def generate(scale_factor: float, directory: str | Path) -> Path:
    """Generate TPC-H Parquet data at ``scale_factor`` into ``directory/sf<scale_factor>/`` and return that path.

    Data already there (one Parquet file or directory per table) is reused.
    """
    return datagen.generate(scale_factor, directory, TABLES, _command, "TPC-H")


def register(spark: SparkSession, path: str | Path) -> None:
    """Register every TPC-H table under ``path`` as a temporary view named after the table."""
    datagen.register(spark, path, TABLES, "TPC-H")


def query(n: int) -> str:
    """Return the Spark SQL text of TPC-H query ``n`` (1..22), without a trailing semicolon."""
    if not 1 <= n <= N_QUERIES:
        raise InvalidArgument(f"TPC-H query number must be in 1..{N_QUERIES}, got {n}")
    text = (resources.files("sparkprov.bench") / "tpch_queries" / f"q{n:02d}.sql").read_text(encoding="utf-8")
    return text.rstrip()
