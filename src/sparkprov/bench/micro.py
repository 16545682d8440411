"""Smoke's microbenchmarks (section 6.1) as Spark SQL over generated Parquet tables.

Tables follow Smoke's ``zipf(id, z, v)``: ``z`` is drawn from a bounded Zipf law of
skew ``theta`` over ``g`` values, ``v`` uniformly from [0, 100). The workloads are
single operators, each also run without capture as its baseline:

- ``groupby_t<theta>_g<g>``: count and sum per ``z``, for skews 0 and 1 and 100 or
  10,000 groups;
- ``pkfk``: every row of a foreign-key table joined with its primary-key row;
- ``mn``: a many-to-many join on skewed keys (both sides Zipf with skew 1 over 100 keys);
- ``select_<percent>``: a selection keeping 1, 10 or 50 percent of the rows.

>>> sorted(workloads(1000))[:2]
['groupby_t0_g100', 'groupby_t0_g10000']
>>> int(bounded_zipf(10, 0.0, 2, seed=1).max()) < 2
True
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidArgument

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SKEWS = (0.0, 1.0)
GROUPS = (100, 10_000)
SELECTIVITIES = (1, 10, 50)  # percent of rows kept
MN_RIGHT_ROWS = 200  # the m:n join's right side: small, so the output stays near the input's size


def bounded_zipf(n: int, theta: float, g: int, seed: int) -> np.ndarray:
    """``n`` draws from ``0..g-1`` with P(k) proportional to ``1 / (k + 1) ** theta``."""
    p = 1.0 / np.arange(1, g + 1, dtype=np.float64) ** theta
    return np.random.default_rng(seed).choice(g, size=n, p=p / p.sum()).astype(np.int32)


def _zipf_table(n: int, theta: float, g: int, seed: int):
    import pyarrow as pa

    rng = np.random.default_rng(seed + 1)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "z": bounded_zipf(n, theta, g, seed),
            "v": rng.uniform(0, 100, n),
        }
    )


def _tables(rows: int) -> dict:
    import pyarrow as pa

    tables = {
        f"zipf_t{theta:g}_g{g}": _zipf_table(rows, theta, g, seed=i)
        for i, (theta, g) in enumerate((t, g) for t in SKEWS for g in GROUPS)
    }
    keys = max(rows // 10, 1)
    rng = np.random.default_rng(7)
    tables["pk"] = pa.table({"id": np.arange(keys, dtype=np.int64), "payload": rng.uniform(0, 100, keys)})
    tables["fk"] = pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "pk": rng.integers(0, keys, rows, dtype=np.int64),
            "v": rng.uniform(0, 100, rows),
        }
    )
    tables["mn_left"] = _zipf_table(max(rows // 10, 1), 1.0, 100, seed=11)
    tables["mn_right"] = _zipf_table(MN_RIGHT_ROWS, 1.0, 100, seed=12)
    return tables


def table_names() -> list[str]:
    return [f"zipf_t{t:g}_g{g}" for t in SKEWS for g in GROUPS] + ["pk", "fk", "mn_left", "mn_right"]


def generate(rows: int, directory: str | Path) -> Path:
    """The tables for ``rows`` rows in ``directory/rows<rows>/`` (made once; reused)."""
    import pyarrow.parquet as pq

    if rows < 1:
        raise InvalidArgument(f"rows must be positive, got {rows}")
    target = Path(directory) / f"rows{rows}"
    if all((target / f"{t}.parquet").is_file() for t in table_names()):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        for name, table in _tables(rows).items():
            pq.write_table(table, tmp / f"{name}.parquet")
        shutil.rmtree(target, ignore_errors=True)
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def register(spark: SparkSession, path: str | Path) -> None:
    for name in table_names():
        spark.read.parquet(str(Path(path) / f"{name}.parquet")).createOrReplaceTempView(name)


def workloads(rows: int) -> dict[str, str]:
    """Workload name -> Spark SQL text."""
    out = {
        f"groupby_t{t:g}_g{g}": f"SELECT z, count(*) AS c, sum(v) AS s FROM zipf_t{t:g}_g{g} GROUP BY z"
        for t in SKEWS
        for g in GROUPS
    }
    out["pkfk"] = "SELECT f.id, f.v, p.payload FROM fk f JOIN pk p ON f.pk = p.id"
    out["mn"] = "SELECT l.id, r.id AS right_id, l.v FROM mn_left l JOIN mn_right r ON l.z = r.z"
    for pct in SELECTIVITIES:
        out[f"select_{pct}"] = f"SELECT id, z, v FROM zipf_t0_g100 WHERE v < {pct}"
    return out
