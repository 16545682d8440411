"""The capture rules, one module per kind of Catalyst operator, in one ordered table:
``RULES[operator]`` rewrites a node of that operator whose children the rule rewrites
first (``CaptureContext.rewrite``), returning it with its slot columns (``Rewritten``).
Leaves (``shapes.LEAVES``) go through ``leaf.rule``.

>>> RULES["Aggregate"] is aggregate.rule and RULES["Filter"] is rows.pass_through
True
>>> [op for op, _ in TABLE][:3]
['Filter', 'Sort', 'SubqueryAlias']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..shapes import PASS_THROUGH, PYTHON_EVAL, PYTHON_UDTF, Rewritten
from . import aggregate, distinct, join, python, rows, union, window

if TYPE_CHECKING:
    from ...plan.catalyst import JPlan
    from ..context import CaptureContext

Rule = Callable[["CaptureContext", "JPlan"], Rewritten]

# (operator, rule), in the order the README's table lists them
TABLE: list[tuple[str, Rule]] = [
    *((op, rows.pass_through) for op in PASS_THROUGH + PYTHON_EVAL),
    ("Project", rows.project),
    ("Generate", rows.generate),
    ("Expand", rows.expand),
    ("Join", join.rule),
    ("Aggregate", aggregate.rule),
    ("Distinct", distinct.distinct),
    ("Deduplicate", distinct.deduplicate),
    ("Union", union.rule),
    ("Window", window.rule),
    ("FlatMapGroupsInPandas", python.flat_map_groups),
    ("FlatMapGroupsInArrow", python.flat_map_groups),
    ("FlatMapCoGroupsInPandas", python.flat_map_cogroups),
    ("FlatMapCoGroupsInArrow", python.flat_map_cogroups),
    ("MapInPandas", python.map_in_batches),
    ("MapInArrow", python.map_in_batches),
    *((op, python.python_udtf) for op in PYTHON_UDTF),
]
RULES: dict[str, Rule] = dict(TABLE)
