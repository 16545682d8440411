"""sparkprov: record-level lineage for PySpark DataFrames and Spark SQL.

>>> import sparkprov as sp
>>> sorted(n for n in sp.__all__ if n[0].isupper())[:3]
['Capture', 'CaptureFailed', 'CaptureNotFound']
"""

from .api import Capture, LineageSession, Source
from .capture.marks import mark
from .capture.workload import Workload
from .errors import (
    CaptureFailed,
    CaptureNotFound,
    ExecutorsLackModules,
    InvalidPredicate,
    LineageNotBuilt,
    LineageRestricted,
    LineageTooLarge,
    RestrictedLineageWarning,
    SourceChanged,
    SourceChangedWarning,
    SparkprovError,
    StoreCorrupt,
    StoreNotFound,
    UnsupportedOperation,
    WitnessesNotKept,
)
from .query.navigation import LineageCursor
from .rdd.context import LineageContext
from .rdd.lineage_rdd import LineageRDD

__version__ = "0.1.0"

__all__ = [
    "Capture",
    "CaptureFailed",
    "CaptureNotFound",
    "ExecutorsLackModules",
    "InvalidPredicate",
    "LineageContext",
    "LineageCursor",
    "LineageRDD",
    "LineageNotBuilt",
    "LineageRestricted",
    "LineageSession",
    "LineageTooLarge",
    "RestrictedLineageWarning",
    "Source",
    "SourceChanged",
    "SourceChangedWarning",
    "SparkprovError",
    "StoreCorrupt",
    "StoreNotFound",
    "UnsupportedOperation",
    "WitnessesNotKept",
    "Workload",
    "__version__",
    "mark",
]
