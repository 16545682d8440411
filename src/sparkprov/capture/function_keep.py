"""``session.capture(..., keep={function: "pairs" | "payload"})``: how one capture keeps
the lineage of the payload and composite functions its query calls, whatever their
declarations say (``sp.lineage(..., keep=...)``); what ``sp.choose_keep`` chooses.

Functions are named as ``explain()`` names them (their ``__qualname__``). A name no
declared function of the query has, or a function whose lineage has no payloads to
keep, is refused before anything is stored.

>>> FunctionKeep.of({"rolling": "payload"}).choices
{'rolling': 'payload'}
>>> FunctionKeep.of({"rolling": "ids"})
Traceback (most recent call last):
...
sparkprov.errors.InvalidArgument: keep= gives each function 'pairs' or 'payload', not {'rolling': 'ids'}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import InvalidArgument
from ..functions.declare import Declaration

KEEPS = ("pairs", "payload")
KEPT_MODES = ("payload", "composite")  # the modes whose lineage has payloads to keep


@dataclass
class FunctionKeep:
    """The ``keep`` chosen per function for one capture, and the functions a rewrite
    found (shared by the parts of a marked capture, which run before the whole)."""

    choices: dict[str, str]
    applied: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, value: Mapping[str, str] | None) -> FunctionKeep | None:
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
            raise InvalidArgument(f"keep= maps function names to 'pairs' or 'payload', not {value!r}")
        wrong = {k: v for k, v in value.items() if v not in KEEPS}
        if wrong:
            raise InvalidArgument(f"keep= gives each function 'pairs' or 'payload', not {wrong!r}")
        return cls(dict(value))

    def apply(self, decl: Declaration | None) -> Declaration | None:
        """``decl`` with the keep chosen for its function, if one was."""
        if decl is None or decl.name not in self.choices:
            return decl
        keep = self.choices[decl.name]
        if decl.mode not in KEPT_MODES:
            raise InvalidArgument(
                f"keep={{{decl.name!r}: {keep!r}}}: {decl.name} declares {decl.mode} lineage; "
                "keep chooses how payload and composite lineage is kept"
            )
        self.applied.add(decl.name)
        return dataclasses.replace(decl, keep=keep)

    def check_applied(self) -> None:
        """Raise unless every function named was found in the query."""
        missing = sorted(set(self.choices) - self.applied)
        if missing:
            raise InvalidArgument(
                f"keep= names {', '.join(map(repr, missing))}: no function of this query declares its lineage "
                "under that name (functions are named by their __qualname__, as explain() names them)"
            )
