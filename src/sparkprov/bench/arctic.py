"""WorkflowGen's Arctic stations (Lipstick, section 5.2) as an ``sp.Workflow``.

An input module passes the request (year, month, selectivity) to the station modules;
each station records a measurement of six variables in its state (its history of
monthly observations, 1961-2000, generated with seasonal cycles), computes the lowest
air temperature it has seen for the selectivity (all, season, month, year) and the
minimum of that and the minimum temperatures it receives from the stations before it;
an output module takes the overall minimum. Topologies: serial (a chain), parallel
(every station reads the input alone) and dense (layers of ``fanout`` stations, each
reading every station of the layer before).

>>> [[s for s in layer] for layer in layers(5, "dense", fanout=2)]
[[1, 2], [3, 4], [5]]
>>> len(history(station=1))
480
"""

from __future__ import annotations

import math
import random

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..api.session import LineageSession
from ..workflows.workflow import Workflow

TOPOLOGIES = ("serial", "parallel", "dense")
SELECTIVITIES = ("all", "season", "month", "year")
VARIABLES = ("air_temp", "pressure", "humidity", "wind", "precipitation", "cloud")
_SCHEMA = "year int, month int, " + ", ".join(f"{v} double" for v in VARIABLES)


def layers(stations: int, topology: str, fanout: int = 3) -> list[list[int]]:
    """The stations (1..n) in the order they run: one per layer (serial), all in one
    (parallel), ``fanout`` per layer (dense)."""
    numbers = list(range(1, stations + 1))
    if topology == "serial":
        return [[n] for n in numbers]
    if topology == "parallel":
        return [numbers]
    if topology == "dense":
        return [numbers[i : i + fanout] for i in range(0, stations, fanout)]
    raise ValueError(f"unknown topology {topology!r}; topologies: {', '.join(TOPOLOGIES)}")


def _measure(station: int, year: int, month: int, rnd: random.Random) -> tuple:
    # a seasonal cycle (coldest in January), colder further north, and noise
    season = math.cos(2 * math.pi * (month - 1) / 12)
    temp = -12 - 2 * (station % 7) - 14 * season + rnd.gauss(0, 3)
    return (
        year,
        month,
        round(temp, 1),
        round(1012 + 6 * season + rnd.gauss(0, 4), 1),
        round(min(100.0, 80 + 8 * season + rnd.gauss(0, 5)), 1),
        round(abs(5 + 2 * season + rnd.gauss(0, 2)), 1),
        round(abs(20 - 10 * season + rnd.gauss(0, 8)), 1),
        round(min(10.0, abs(6 + rnd.gauss(0, 2))), 1),
    )


def history(station: int, seed: int = 0) -> list[tuple]:
    """A station's monthly observations, 1961-2000."""
    rnd = random.Random(f"{seed}-{station}")
    return [_measure(station, y, m, rnd) for y in range(1961, 2001) for m in range(1, 13)]


def request(spark: SparkSession, execution: int, selectivity: str) -> DataFrame:
    """Execution ``execution``'s request: the months after 2000, one per execution."""
    year, month = 2001 + (execution - 1) // 12, (execution - 1) % 12 + 1
    return spark.createDataFrame([(year, month, selectivity)], "year int, month int, selectivity string")


def _season(month):
    return F.floor((month % 12) / 3)  # Dec-Feb, Mar-May, Jun-Aug, Sep-Nov


def workflow(
    session: LineageSession, stations: int, topology: str, fanout: int = 3, seed: int = 0, name: str = "arctic"
) -> Workflow:
    """The stations workflow, each station's history in its state."""
    spark = session.spark
    wf = Workflow(name, session)

    @wf.module(inputs=["request"], outputs=["params"], name="input")
    def input_module(request: DataFrame) -> DataFrame:
        return request

    before: list[int] = []
    for layer in layers(stations, topology, fanout):
        for s in layer:
            wf.state(f"obs{s}", spark.createDataFrame(history(s, seed), _SCHEMA))
            ins = ["params", *(f"min{b}" for b in before)]
            wf.module(inputs=ins, outputs=[f"min{s}"], state=[f"obs{s}"], name=f"station{s}")(_station(s, before))
        before = layer  # the next layer reads this one's minimums
    last = before

    @wf.module(inputs=[f"min{s}" for s in last], outputs=["lowest"], name="output")
    def output_module(**mins: DataFrame) -> DataFrame:
        every = None
        for df in mins.values():
            every = df if every is None else every.unionByName(df)
        return every.agg(F.min("air_temp").alias("air_temp"))

    return wf


def _station(s: int, before: list[int]):
    before = list(before)

    def station(params: DataFrame, **frames: DataFrame) -> dict[str, DataFrame]:
        obs = frames[f"obs{s}"]
        p = params.select(F.col("year").alias("p_year"), F.col("month").alias("p_month"), "selectivity")
        # today's measurement: a deterministic function of the station and the month
        noise = lambda k: (F.hash(F.lit(s), F.col("p_year"), F.col("p_month"), F.lit(k)) % 1000) / 250.0  # noqa: E731
        season = F.cos(2 * math.pi * (F.col("p_month") - 1) / 12)
        measured = p.select(
            F.col("p_year").alias("year"),
            F.col("p_month").alias("month"),
            (-12 - 2 * (s % 7) - 14 * season + noise(0)).alias("air_temp"),
            (1012 + 6 * season + noise(1)).alias("pressure"),
            (80 + 8 * season + noise(2)).alias("humidity"),
            (5 + 2 * season + noise(3)).alias("wind"),
            (20 - 10 * season + noise(4)).alias("precipitation"),
            (6 + noise(5)).alias("cloud"),
        )
        kept = obs.unionByName(measured)
        chosen = kept.crossJoin(p).where(
            (F.col("selectivity") == "all")
            | ((F.col("selectivity") == "month") & (F.col("month") == F.col("p_month")))
            | ((F.col("selectivity") == "season") & (_season(F.col("month")) == _season(F.col("p_month"))))
            | ((F.col("selectivity") == "year") & (F.col("year") == F.col("p_year")))
        )
        lowest = chosen.agg(F.min("air_temp").alias("air_temp"))
        for b in before:
            lowest = lowest.unionByName(frames[f"min{b}"])
        return {f"min{s}": lowest.agg(F.min("air_temp").alias("air_temp")), f"obs{s}": kept}

    station.__name__ = f"station{s}"
    return station
