"""A capture's pair table made from its witnesses in this process, by joins in DuckDB:
each output row's slots resolved through the side relations they name, parents
before children, down to source rids. For witnesses whose slots each name one source
row or one group (``store.format.resolvable_by_joins``); a window's ranges, and slots that hold several
values, are read as polynomials (``query/provenance.write_pairs``).

The joins are those of the capture's own resolution with Spark (``capture/lineage``):
a group slot meets its side's rows on the handle, NULL-safe, from the distinct
(output row, handle) pairs that reach the side, so an output row that reaches one
group along many paths reads it once.

>>> import tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> out = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"_sp_rid": [0, 1], "s": [7, None]}), f"{out}/part-0.parquet")
>>> found = pairs_by_source(out, {"output": [{"name": "s", "kind": "source", "ref": 0}], "sides": {}})
>>> found[0][0].to_pylist()
[{'out_rid': 0, 'in_rid': 7}]
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from ..store.duck import connection, quote
from ..store.files import parquet_files
from ..store.format import HANDLE, IN, OUT, RID, parents_first
from ..store.parquet import files_sql


def pairs_by_source(output_path: str, structure: dict) -> dict[int, list[pa.Table]]:
    """Per source number, tables of ``(out_rid, in_rid)`` (repeats possible) of the
    output rows in ``output_path``, through the witnesses of ``structure``."""
    sides = structure["sides"]
    found: dict[int, list[pa.Table]] = defaultdict(list)
    with connection() as con:
        files = parquet_files(output_path)
        if not files:
            return found
        columns = ", ".join(quote(c) for c in [RID, *(s["name"] for s in structure["output"])])
        con.execute(f"CREATE TEMP TABLE rows_0 AS SELECT {columns} FROM read_parquet({files_sql(files)})")
        probes: dict[int, list[str]] = defaultdict(list)  # side -> queries of (out, h)
        _reach(con, "rows_0", RID, structure["output"], found, probes)

        def below(k: int) -> list[int]:
            return [int(s["ref"]) for s in sides[str(k)]["slots"] if s["kind"] != "source"]

        for n, k in enumerate(parents_first(list(probes), below), 1):
            parts, side_files = probes.pop(k, []), parquet_files(sides[str(k)]["path"])
            if not parts or not side_files:
                continue
            frontier = " UNION ".join(parts)  # distinct (out, h): paths that repeat a group meet it once
            con.execute(
                f"CREATE TEMP TABLE rows_{n} AS SELECT f.{OUT}, s.* FROM ({frontier}) f "
                f"JOIN read_parquet({files_sql(side_files)}) s ON f.h IS NOT DISTINCT FROM s.{HANDLE}"
            )
            _reach(con, f"rows_{n}", OUT, sides[str(k)]["slots"], found, probes)
    return found


def _reach(con, table: str, out: str, slots: list[dict], found: dict, probes: dict) -> None:
    # a source slot gives pairs; a group slot, the handles its side is then probed with
    for s in slots:
        column = quote(s["name"])
        if s["kind"] == "source":
            got = con.execute(
                f"SELECT {out} AS {OUT}, {column} AS {IN} FROM {table} WHERE {column} IS NOT NULL"
            ).fetch_arrow_table()
            found[int(s["ref"])].append(got.cast(pa.schema([(OUT, pa.int64()), (IN, pa.int64())])))
        else:
            reach = f"SELECT {out} AS {OUT}, {column} AS h FROM {table} WHERE {column} IS NOT NULL"
            probes[int(s["ref"])].append(reach)


def publish(path: Path, output_path: str, structure: dict) -> None:
    """The pair table of the output in ``output_path`` through ``structure``'s witnesses,
    written to ``path`` whole (``capture/row_lineage.publish_local_pairs``)."""
    from ..capture.row_lineage import publish_local_pairs

    publish_local_pairs(path, pairs_by_source(output_path, structure), distinct=True)
