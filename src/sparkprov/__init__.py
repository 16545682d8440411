"""sparkprov: record-level lineage for PySpark DataFrames and Spark SQL.

>>> import sparkprov as sp
>>> sorted(n for n in sp.__all__ if n[0].isupper())[:3]
['Capture', 'CaptureFailed', 'CaptureNotFound']
"""

import importlib
from typing import TYPE_CHECKING

from .errors import (
    CaptureFailed,
    CaptureNotFound,
    CaptureTooNew,
    CoarseLineageWarning,
    EmbeddedUnsupported,
    ExecutorsLackModules,
    InputNotFound,
    InvalidArgument,
    InvalidPredicate,
    JvmHelperUnavailable,
    LineageDeclarationWrong,
    LineageNotBuilt,
    LineageRestricted,
    LineageTooLarge,
    RestrictedLineageWarning,
    SourceChanged,
    SourceChangedWarning,
    SparkFailed,
    SparkprovError,
    SparkUnsupported,
    StoreCorrupt,
    StoreNotFound,
    StoreUnsupported,
    UnsupportedOperation,
    WitnessesNotKept,
)

# the API is imported when first named: the command line reads stores without PySpark's
# SQL modules (about 0.9 s of imports) unless it needs Spark
_LAZY = {
    "Capture": "api",
    "LineageSession": "api",
    "Source": "api",
    "mark": "capture.marks",
    "lineage": "functions.declare",
    "Workload": "capture.workload",
    "LineageCursor": "api.cursor",
    "LineageContext": "rdd.context",
    "LineageRDD": "rdd.lineage_rdd",
    "Workflow": "workflows",
    "choose_keep": "tuning.keep",
    "Trace": "tuning.keep",
}

if TYPE_CHECKING:
    from .api import Capture, LineageSession, Source
    from .api.cursor import LineageCursor
    from .capture.marks import mark
    from .capture.workload import Workload
    from .functions.declare import lineage
    from .rdd.context import LineageContext
    from .rdd.lineage_rdd import LineageRDD
    from .tuning.keep import Trace, choose_keep
    from .workflows import Workflow


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "Capture",
    "CaptureFailed",
    "CaptureNotFound",
    "CaptureTooNew",
    "EmbeddedUnsupported",
    "ExecutorsLackModules",
    "InvalidArgument",
    "InputNotFound",
    "InvalidPredicate",
    "JvmHelperUnavailable",
    "LineageContext",
    "LineageCursor",
    "LineageRDD",
    "Workflow",
    "LineageDeclarationWrong",
    "LineageNotBuilt",
    "LineageRestricted",
    "LineageSession",
    "LineageTooLarge",
    "RestrictedLineageWarning",
    "CoarseLineageWarning",
    "Source",
    "Trace",
    "SourceChanged",
    "SourceChangedWarning",
    "SparkFailed",
    "SparkUnsupported",
    "SparkprovError",
    "StoreCorrupt",
    "StoreNotFound",
    "StoreUnsupported",
    "UnsupportedOperation",
    "WitnessesNotKept",
    "Workload",
    "__version__",
    "choose_keep",
    "lineage",
    "mark",
]
