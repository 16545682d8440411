"""The bridge to Catalyst through py4j: ``Bridge``, made of one mixin per job.

Everything that names a Spark JVM class or relies on a constructor signature lives in
this package (the modules below, ``rid_collector``, the Java sources of ``java/``), so
that a new Spark line needs changes in this package only. Plans and expressions cross
the boundary as opaque py4j handles (``JPlan``/``JExpr``); ``Bridge``'s methods read
and build them:

- ``handles``: Scala sequences to and from lists, JVM lookups made once, the memo of
  ``Bridge.remembering``;
- ``reading``: node names, children, outputs, tree patterns, operators' fields,
  expressions; a whole tree in one round trip;
- ``building``: aliases, literals, structs, rid collectors, Project, Aggregate, Join...;
- ``windows``: Window nodes read and built;
- ``subqueries``: subquery expressions found, replaced, made semi joins;
- ``optimizer``: Spark's optimizer as capture runs it, CTE inlining, SQL settings;
- ``dataframes``: DataFrames' plans and plans' DataFrames;
- ``files``: file relations, their listings, a Parquet leaf's rid column;
- ``python_functions``: the user's Python functions plan nodes call;
- ``accounting``: stages' executor time, the driver's G1 region size;
- ``versions``: the supported Spark line, checked by ``Bridge``;
- ``jvm_errors``: Py4J errors of every ``Bridge`` method raised as ``SparkFailed``,
  analysis errors kept out of the logs (``quiet_analysis``).

Supported: the PySpark lines of ``versions.SUPPORTED_LINES`` in classic mode (not Spark
Connect).

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> b.node_name(b.analyzed(spark.range(3)))
'Range'
"""

from __future__ import annotations

import threading
from typing import Any

from pyspark.sql import SparkSession

from .accounting import Accounting, task_seconds
from .building import Building
from .dataframes import DataFrames
from .files import Files
from .handles import CATALYST, Handles, JExpr, JPlan, Looked
from .jvm_errors import quiet_analysis, translating
from .optimizer import Optimizing
from .python_functions import PythonFunctions
from .reading import Reading
from .references import release_in_batches
from .subqueries import Subqueries
from .versions import SUPPORTED_LINES, line_of, spark_version
from .windows import Windows

# the names other packages import from here, wherever they live now
__all__ = ["SUPPORTED_LINES", "Bridge", "JExpr", "JPlan", "quiet_analysis", "spark_version", "task_seconds"]


@translating
class Bridge(
    Handles, Reading, Building, Windows, Subqueries, Optimizing, DataFrames, Files, PythonFunctions, Accounting
):
    """Reads and builds Catalyst plans for one SparkSession."""

    def __init__(self, spark: SparkSession) -> None:
        self.line = line_of(spark)  # what differs between Spark lines, asked where it does
        self.spark = spark
        release_in_batches(spark)  # a capture lets go of hundreds of proxies
        self.jvm = Looked(spark._jvm)
        self.jsession = spark._jsparkSession
        self._expr = getattr(self.jvm, f"{CATALYST}.expressions")
        self._logical = getattr(self.jvm, f"{CATALYST}.plans.logical")
        self._none = self.jvm.scala.Option.apply(None)
        self._fs_class: Any = None  # HadoopFsRelation's Class, once needed
        self._patterns: dict[str, Any] = {}
        self._classes: dict[str, Any] = {}  # expression classes by simple name
        self._empty: Any = None  # an empty Scala Seq, once needed
        self._row_index: tuple[str, Any] | None = None  # see _row_index_constants
        self._leaves: Any = None  # the compiled SparkprovLeaves (False: not compiled), once needed
        self._listing: Any = None  # the compiled SparkprovListing, likewise
        self._padding: Any = None  # the compiled SparkprovPadding, likewise
        self._state: Any = None  # the session's SessionState, once needed
        self._tree: Any = None  # the compiled SparkprovTree, likewise
        self._optimize: Any = None  # the compiled SparkprovOptimize, likewise
        self._seqs: Any = None  # the compiled SparkprovSeqs, likewise
        self._walk = threading.local()  # .memo while remembering(): see there
