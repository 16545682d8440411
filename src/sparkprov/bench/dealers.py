"""WorkflowGen's car dealerships (Lipstick, sections 1 and 5.2) as an ``sp.Workflow``.

A buyer asks for a car model; four dealers, in parallel, each look up the cars of that
model on their lot (state) and the buyer's earlier requests for it (their bid history,
state), and bid through an opaque pricing function (a Python UDF, a black box); an
aggregator takes the lowest bid; the buyer accepts it when it is within the reserve
price and a coin flip says yes. Each execution is one request of the same buyer; each
dealer's bid history grows by one bid per execution.

>>> buyer = Buyer.generate(seed=1)
>>> buyer.model in MODELS
True
>>> len(cars(dealer=1, count=5, seed=1))
5
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..api.session import LineageSession
from ..workflows.workflow import Workflow

MODELS = ["A3", "A4", "A6", "Q5", "Golf", "Passat", "Polo", "Tiguan", "C-Class", "E-Class", "3 Series", "X3"]
DEALERS = 4
_CARS = "car long, model string, list_price long"
_BIDS = "dealer int, buyer string, model string, price long"


@dataclass(frozen=True)
class Buyer:
    """The buyer of a run: the model wanted, the reserve price, how likely a bid is taken."""

    name: str
    model: str
    reserve: int
    acceptance: float

    @classmethod
    def generate(cls, seed: int) -> Buyer:
        rnd = random.Random(seed)
        return cls(f"buyer{seed}", rnd.choice(MODELS), rnd.randrange(24_000, 40_000), rnd.uniform(0.1, 0.5))

    def request(self, spark: SparkSession, execution: int, seed: int = 0) -> DataFrame:
        """The request of one execution, with the buyer's coin flip for it."""
        accepts = random.Random(f"{seed}-{self.name}-{execution}").random() < self.acceptance
        return spark.createDataFrame(
            [(self.name, self.model, self.reserve, accepts)],
            "buyer string, model string, reserve long, accepts boolean",
        )


def cars(dealer: int, count: int, seed: int) -> list[tuple]:
    """A dealer's lot: ``count`` cars, each of a model drawn from the twelve."""
    rnd = random.Random(f"{seed}-{dealer}")
    base = dealer * 1_000_000
    return [(base + i, (m := rnd.choice(MODELS)), 25_000 + 1_000 * MODELS.index(m)) for i in range(count)]


def calc_bid(cars_on_lot, earlier_bids, list_price, dealer):
    """The dealers' pricing: more cars of the model on the lot and more earlier
    requests from the buyer bring the price down. (No type hints: PySpark would read
    them as a pandas UDF's.)"""
    return int(list_price - 150 * min(cars_on_lot, 20) - 400 * earlier_bids - 100 * dealer)


def workflow(
    session: LineageSession, cars_per_dealer: int = 50, seed: int = 0, name: str = "dealers", dealers: int = DEALERS
) -> Workflow:
    """The dealership workflow, its lots filled (``cars_per_dealer`` cars each) and
    its bid histories empty."""
    spark = session.spark
    wf = Workflow(name, session)
    bid_udf = F.udf(calc_bid, "long")
    for d in range(1, dealers + 1):
        wf.state(f"cars{d}", spark.createDataFrame(cars(d, cars_per_dealer, seed), _CARS))
        wf.state(f"bids{d}", spark.createDataFrame([], _BIDS))
        wf.module(inputs=["request"], outputs=[f"bid{d}"], state=[f"cars{d}", f"bids{d}"])(_dealer(d, bid_udf))

    @wf.module(inputs=[f"bid{d}" for d in range(1, dealers + 1)], outputs=["best"])
    def aggregator(**bids: DataFrame) -> DataFrame:
        every = bids["bid1"]
        for d in range(2, dealers + 1):
            every = every.unionByName(bids[f"bid{d}"])
        return every.groupBy("buyer", "model").agg(
            F.min("price").alias("price"), F.min_by("dealer", "price").alias("dealer")
        )

    @wf.module(inputs=["best", "request"], outputs=["sale"])
    def choice(best: DataFrame, request: DataFrame) -> DataFrame:
        taken = best.join(request, ["buyer", "model"]).where((F.col("price") <= F.col("reserve")) & F.col("accepts"))
        return taken.select("dealer", "buyer", "model", "price")

    return wf


def _dealer(d: int, bid_udf):
    def dealer(request: DataFrame, **state: DataFrame) -> dict[str, DataFrame]:
        lot, history = state[f"cars{d}"], state[f"bids{d}"]
        wanted = request.select("buyer", "model")
        on_lot = wanted.join(lot, "model").select("buyer", "model", F.lit(1).alias("car"), F.lit(0).alias("earlier"),
                                                  "list_price")  # fmt: skip
        earlier = wanted.join(history.select("buyer", "model"), ["buyer", "model"]).select(
            "buyer",
            "model",
            F.lit(0).alias("car"),
            F.lit(1).alias("earlier"),
            F.lit(None).cast("long").alias("list_price"),
        )
        counts = (
            on_lot.unionByName(earlier)
            .groupBy("buyer", "model")
            .agg(F.sum("car").alias("cars"), F.sum("earlier").alias("earlier"), F.max("list_price").alias("list_price"))
        )
        # every dealer bids, with no car of the model on its lot too (it can order one)
        bid = counts.select(
            F.lit(d).alias("dealer"),
            "buyer",
            "model",
            bid_udf("cars", "earlier", F.coalesce("list_price", F.lit(30_000)), F.lit(d)).alias("price"),
        )
        return {f"bid{d}": bid, f"bids{d}": history.unionByName(bid)}

    dealer.__name__ = f"dealer{d}"
    return dealer
