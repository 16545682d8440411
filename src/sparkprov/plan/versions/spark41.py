"""The Spark 4.1 line: the calls sparkprov makes are 4.2's."""

from __future__ import annotations

from .spark42 import _Spark42


class _Spark41(_Spark42):
    version = (4, 1)
