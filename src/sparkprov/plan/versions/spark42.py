"""The Spark 4.2 line: ``InlineCTE`` and ``Deduplicate`` without 4.3's last argument."""

from __future__ import annotations

from typing import Any

from ..handles import CATALYST
from .spark43 import SparkLine


class _Spark42(SparkLine):
    version = (4, 2)

    def inline_cte(self, jvm: Any) -> Any:
        return getattr(jvm, f"{CATALYST}.optimizer.InlineCTE")(True, False)

    def deduplicate(self, logical: Any, keys: Any, child: Any, none: Any) -> Any:
        return logical.Deduplicate(keys, child)
