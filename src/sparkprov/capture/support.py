"""Whether capture handles a plan: every operator has a rule, every window function,
join type, expression and subquery is one the rules are verified for; the first that
is not raises ``UnsupportedOperation`` naming it, before any work is done.

>>> supports("Aggregate"), supports("LogicalRelation"), supports("Pivot")
(True, True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidArgument, UnsupportedOperation
from ..functions.declare import declaration_of
from ..plan.catalyst import JExpr, JPlan
from .explain import COARSE, LEAF_STRATEGY, README_HOW, STRATEGY
from .rules import RULES, TABLE
from .rules.window import WINDOW_FUNCTIONS
from .shapes import JOIN_TYPES, LEAVES, PYTHON_UDTF, SUBQUERY_HOSTS

if TYPE_CHECKING:
    from .context import CaptureContext

# expression classes that capture does not verify. The optimizer takes every Python
# UDTF call out into a PYTHON_UDTF node (checked there); one left anywhere else is refused.
_UNSUPPORTED_EXPRESSIONS = {
    "PythonUDTF": "Python UDTF",
}
# a Catalyst tree pattern every expression above carries (a Python UDTF is a generator):
# an expression without it needs no walk
_UNSUPPORTED_PATTERN = "GENERATOR"


README_TABLE_START = "<!-- operators: written by scripts/readme_operators.py from capture's rules -->"
README_TABLE_END = "<!-- /operators -->"


def operator_table() -> str:
    """The README's table of the Catalyst operators capture has a rule for: per
    operator, the rule's module, its lineage (exact, or coarse and why) and how capture
    keeps it, as ``explain()`` says (``scripts/readme_operators.py`` writes it there)."""
    rows = ["| Catalyst operator | rule | lineage | how capture keeps it |", "|---|---|---|---|"]
    for op in LEAVES:
        rows.append(f"| {op} | leaf | exact | {LEAF_STRATEGY} |")
    for op, rule in TABLE:
        how = README_HOW.get(op) or STRATEGY[op]
        rows.append(f"| {op} | {rule.__module__.rsplit('.', 1)[-1]} | {COARSE.get(op, 'exact')} | {how} |")
    return "\n".join(rows) + "\n"


def supports(operator: str) -> bool:
    """Whether capture has a rule for Catalyst operator ``operator`` (an optimized
    plan's node name); the expressions inside it are checked when a plan is."""
    return operator in RULES or operator in LEAVES


def check_supported(cx: CaptureContext, node: JPlan, below: bool = True) -> None:
    """Raise ``UnsupportedOperation`` for the first operator or expression no rule
    handles; the operators checked are added to ``checked``. ``below=False``: no
    expression in ``node``'s subtree has ``_UNSUPPORTED_PATTERN`` (its parent's bits
    said so: they cover the subtree, not the plans of subqueries)."""
    b = cx.bridge
    b.prefetch(node)  # the whole tree in one round trip, the first time
    op = b.node_name(node)
    if cx.checked is None:
        cx.checked = set()
    cx.checked.add(op)
    below = below and b.has_pattern(node, _UNSUPPORTED_PATTERN)
    if below or b.has_pattern(node, "PLAN_EXPRESSION"):
        _check_expressions(cx, node, op)
    if b.has_pattern(node, "PYTHON_UDF"):
        _check_declared_udfs(cx, node)
    if op not in LEAVES and op not in RULES:
        raise UnsupportedOperation(op, cx.plan_text(node))
    if op == "Window":
        for e in b.window_parts(node)[0]:
            kind = b.window_function(e)[0]
            if kind not in WINDOW_FUNCTIONS:
                raise UnsupportedOperation(
                    f"Window ({kind})", cx.plan_text(node), "this window function is not verified"
                )
    if op == "Join" and b.join_type(node).split("(")[0] not in JOIN_TYPES:
        raise UnsupportedOperation(f"Join ({b.join_type(node)})", cx.plan_text(node))
    if op == "LogicalRelation" and b.file_relation(node) is None:
        raise UnsupportedOperation("LogicalRelation", cx.plan_text(node), "only file-based relations are supported")
    for child in b.children(node):
        check_supported(cx, child, below)


def _check_expressions(cx: CaptureContext, node: JPlan, op: str) -> None:
    b = cx.bridge
    for e in b.expressions(node):
        if b.contains_subquery(e):
            _check_subqueries(cx, node, op, e)
        walk = op not in PYTHON_UDTF and b.has_pattern(e, _UNSUPPORTED_PATTERN)
        for cls in b.expression_classes(e) if walk else ():
            if cls in _UNSUPPORTED_EXPRESSIONS:
                raise UnsupportedOperation(_UNSUPPORTED_EXPRESSIONS[cls], cx.plan_text(node), f"in {op}")


def _check_declared_udfs(cx: CaptureContext, node: JPlan) -> None:
    # A Python UDF's lineage is fixed by what it is: a scalar one's value comes from
    # its row, a grouped aggregate's from its group. A declaration saying otherwise
    # would be ignored, so it is refused (rowwise on a scalar UDF says what is so).
    from ..plan.versions import PythonEvalType

    names = {v: k for k, v in vars(PythonEvalType).items() if k.startswith("SQL_")}
    for function, eval_type in cx.bridge.python_udfs(node):
        decl, name = declaration_of(function), names.get(eval_type, "")
        aggregate = "_AGG_" in name
        scalar = name in ("SQL_BATCHED_UDF", "SQL_ARROW_BATCHED_UDF") or name.startswith("SQL_SCALAR_")
        # functions over groups and partitions (applyInPandas...) have rules of their own
        if decl is None or not (aggregate or scalar) or decl.mode == "rowwise" and scalar:
            continue
        kind = (
            "an aggregate Python UDF (one value per group or window: its lineage is every row of it)"
            if aggregate
            else "a scalar Python UDF (one value per input row: its lineage is that row)"
        )
        advice = "" if aggregate else "; declare it rowwise, or not at all"
        raise InvalidArgument(f"{decl.name!r} declares {decl.mode} lineage, but it is {kind}{advice}")


def _check_subqueries(cx: CaptureContext, node: JPlan, op: str, e: JExpr) -> None:
    # The optimizer has turned IN, EXISTS and correlated subqueries into joins; what
    # remains is uncorrelated scalar subqueries, computed once and referenced.
    b = cx.bridge
    found = b.scalar_subqueries(e)
    if b.count_subqueries(e) != len(found):
        raise UnsupportedOperation("subquery expression", cx.plan_text(node), f"in {op}: {b.expr_sql(e)[:200]}")
    for sq in found:
        if op not in SUBQUERY_HOSTS:
            raise UnsupportedOperation(f"scalar subquery in {op}", cx.plan_text(node))
        if b.is_correlated(sq):
            raise UnsupportedOperation("correlated scalar subquery", cx.plan_text(node), b.expr_sql(sq)[:200])
        check_supported(cx, b.subquery_plan(sq))
