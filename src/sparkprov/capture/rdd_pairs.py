"""An RDD capture's end-to-end pairs, resolved from its stored sides when first needed.

An action stores its records' slots and links the side files of the grouping
operators behind them (``rdd/commit.py``): nothing is joined while the program runs, as in
Titian. The embedded engine traces a few records straight from those files
(``query/sides.py``). Answers computed by Spark (``Capture.pairs``, cursors, SQL views)
use end-to-end ``(out_rid, in_rid)`` pairs: the first one resolves them, with the
code DataFrame captures use (``capture/lineage.py``), and stores them in the capture's
``lineage/`` folder for every later one.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ..plan.written import read_written
from ..store.entry import CaptureEntry
from ..store.format import HANDLE, OUT, RID, Slot, slot_type, slots_from_json
from ..store.layout import CaptureFolders
from .lineage import SideGraph, source_pairs
from .writing import materializer, publish_pairs


class _Side:
    """A stored side as ``SideGraph`` reads it."""

    shared = False
    ranged = False

    def __init__(self, slots: list[Slot]) -> None:
        self.slots = slots


def ensure_pairs(spark: SparkSession, entry: CaptureEntry) -> None:
    """Resolve the pairs of RDD capture ``entry`` into its ``lineage/`` folder, unless
    they are there already. Written beside it and renamed into place, so two
    processes resolving at once both end with one complete table."""
    lineage = entry.lineage
    path = Path(lineage.path)
    if path.is_dir():
        return
    stored = lineage.rdd
    slots = slots_from_json(stored["slots"])
    sides = {int(k): _Side(slots_from_json(d["slots"])) for k, d in stored["sides"].items()}

    def relation(k: int):
        folder = CaptureFolders.of(entry).side(k)  # in the store, even when the pairs go to a cache
        if not any(folder.glob("part-*.parquet")):  # the operator saw no partition
            columns = [(HANDLE, pa.int64()), *((s.name, slot_type(s.kind)) for s in sides[k].slots)]
            return spark.createDataFrame([], from_arrow_schema(pa.schema(columns)))
        return read_written(spark, folder)

    rows = read_written(spark, entry.output.path).select(F.col(RID).alias(OUT), *[s.name for s in slots])
    # a program that loops (an RDD joined with itself, round after round) reaches
    # sides along many paths: each intermediate result is kept, not repeated in plans
    work = path.parent / f".work-{uuid.uuid4().hex}"
    graph = SideGraph(sides=sides, relation=relation, source_of=lambda i: i, keep=materializer(spark, work))
    try:
        publish_pairs(spark, source_pairs(rows, slots, graph), path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
