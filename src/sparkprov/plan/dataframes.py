"""The plans of DataFrames (analyzed, or with cached data in place), and DataFrames of
plans: as they are, or checked by Spark's analyzer first.

>>> from pyspark.sql import SparkSession
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> b.checked_dataframe(b.analyzed(spark.range(3))).count()
3
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from .handles import JPlan


class DataFrames:
    """How ``Bridge`` goes from DataFrames to plans and back (a mixin: ``Bridge.__init__``
    sets the ``spark``, ``jvm``, ``line`` and ``jsession`` it uses)."""

    @staticmethod
    def analyzed(df: DataFrame) -> JPlan:
        return df._jdf.queryExecution().analyzed()

    @staticmethod
    def cached_relation(df: DataFrame) -> JPlan:
        """The cached relation standing for persisted ``df`` in plans (Spark's
        ``InMemoryRelation``, with ``df``'s own attribute ids): filled by the first
        job that reads it."""
        return df._jdf.queryExecution().withCachedData()

    def to_dataframe(self, plan: JPlan) -> DataFrame:
        jdf = self.line.dataset_of_rows(self.jvm, self.jsession, plan)
        return DataFrame(jdf, self.spark)

    def checked_dataframe(self, plan: JPlan) -> DataFrame:
        """A DataFrame of ``plan``, built resolved from analyzed or optimized nodes (a
        capture's rewritten plan): Spark's analysis checks run (missing attributes,
        types, conflicting references raise as usual), its resolution rules do not, as
        they would find nothing to resolve (TPC-H Q2's rewritten plan at SF 1: 43 ms
        analysed, 9 ms checked). A copy is marked analyzed, not ``plan``."""
        copy = plan.clone()
        self._session_state().analyzer().checkAnalysis(copy)
        copy.setAnalyzed()  # Spark's analyzer returns an analyzed plan as it is
        return self.to_dataframe(copy)
