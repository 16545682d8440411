"""What ``explain()`` says of each operator of a captured plan: its lineage granularity
(exact, or coarse and why) and how capture keeps it (the strategy texts rules choose from).

>>> STRATEGY["Filter"]
'1:1: slot columns carried through'
>>> selected_text("price > 10")
'lineage kept only where price > 10 (workload where)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..plan.catalyst import JPlan
from .shapes import LEAVES, PASS_THROUGH, PYTHON_EVAL, PYTHON_UDTF, ExplainLine, Rewritten

if TYPE_CHECKING:
    from .context import CaptureContext


CARRIED = "1:1: slot columns carried through"
BY_PARTITION = "partition: the partition number added to the function's output; side relation (partition, input slots)"
STRATEGY = {
    **dict.fromkeys(PASS_THROUGH, CARRIED),
    "Project": "1:1: slot columns appended",
    **dict.fromkeys(PYTHON_EVAL, "1:1: row-level Python UDF results appended, slot columns carried"),
    "Aggregate": "group: handle (grouping key) per row; side relation (handle, input slots)",
    "Distinct": "group: handle (the row) per row; side relation (handle, input slots)",
    "Deduplicate": "group: handle (the key) per row; side relation (handle, input slots)",
    "Union": "each branch's slots, NULL for the other branches' (none from EXCEPT ALL's right side)",
    "Generate": "1:N: each generated row keeps its input row's slots",
    "Expand": "1:N: each copy keeps its input row's slots",
    **dict.fromkeys(
        ("FlatMapGroupsInPandas", "FlatMapCoGroupsInPandas", "FlatMapGroupsInArrow", "FlatMapCoGroupsInArrow"),
        "group: the group's handle copied through the Python function; side relation (handle, input slots)",
    ),
    **dict.fromkeys(("MapInPandas", "MapInArrow"), BY_PARTITION),
    **dict.fromkeys(PYTHON_UDTF, "1:N: each row eval() yields keeps its input row's slots"),
    "Window": "own slots plus, per function, a range of positions in the partition; "
    "side relation (partition, position, input slots); a function reading its whole "
    "partition: a reference to the partition's lineage, kept once per partition",
}
# said of a window's ranges where they may be kept as blocks (not with witnesses)
WINDOW_BLOCKS = "; ranges that would flatten to over a million pairs, four or more a range, kept as blocks of positions"
WINDOW_TWIN = "; the same rows as a window before it (a CTE read again): its side relation read, not made again"
JOIN_STRATEGY = {
    **dict.fromkeys(
        ("Inner", "Cross", "LeftOuter", "RightOuter", "FullOuter"), "pairs: both sides' slots (NULL when padded)"
    ),
    "LeftAnti": "left slots only: absent matches are not dependencies",
    "LeftSemi": "left slots plus a group of matches; side relation: the inner join",
    "ExistenceJoin": "left slots plus a group of matches; side relation: the inner join",
}
COARSE = {
    op: "coarse: the Python function is opaque; every row of its input partition"
    for op in ("MapInPandas", "MapInArrow")
}
INJECT = "inject: input rids (and handles) collected in the aggregate's own state, an array per slot; no side relation"
INJECT_SHARED = (
    "inject: input rids collected in the aggregate's own state, each group's kept once (a join above repeats "
    "its rows), a set of a shared side; each row refers to its group's set"
)
WITNESSES_COLLECTED = (
    "group: handle (grouping key) per row; each group's witnesses (its input rows' slots) collected in the "
    "aggregate's own state, and its side relation (handle, input slots) read from the rows the query kept"
)
INJECT_PER_LEFT_ROW = (
    "inject: left rows numbered, inner-joined to the right with the condition and grouped back by number, "
    "each carrying its matches' rids (the left side is the smaller); no side relation"
)
# the explain() note of an aggregate whose input is first reduced (``rules.join.plan_reductions``)
REDUCED = "input first reduced to the keys the join above can match, read again from its"
INJECT_MATCHES = (
    "inject: right side grouped by the join key, its rids collected; an inner join in place of the semi join, "
    "each row carrying its matches; no side relation"
)
INJECT_EXISTS = (
    "inject: right side grouped by the join key, its rids collected; a left outer join in place of the existence "
    "join, its flag whether the row met a key's group, each row carrying its matches; no side relation"
)
PRUNED_TEXT = "no lineage kept (not among the workload's sources)"


# the README's summaries (capture/support.operator_table) of the texts explain_line picks from
LEAF_STRATEGY = "rid = file number and Parquet row index, read in place; other sources copied to Parquet first"
README_HOW = {
    "Join": "inner, cross, outer: both sides' slots; anti: the left row's; semi, existence: the left row's and "
    "its matches",
    "Aggregate": "inject (the default): input rids collected in the aggregate's own state; logical: a handle per "
    "row and a side relation (handle, input slots)",
    **dict.fromkeys(
        PYTHON_UDTF,
        "1:N: each row eval() yields keeps its input row's slots; with terminate() or a table argument, coarse "
        "(every row of its input partition)",
    ),
    "Window": STRATEGY["Window"] + WINDOW_BLOCKS + " (not with witnesses)",
}


def selected_text(predicate: str) -> str:
    """What explain says of a source whose lineage a workload predicate restricts."""
    return f"lineage kept only where {predicate} (workload where)"


ORDER_WHEN_READ = (
    "1:1: the output's order, kept with the stored rows and applied when they are read; "
    "the rows and their lineage are not sorted"
)
SUBQUERY_STRATEGY = "scalar subquery: its lineage stored once; rows carry a reference"
SUBQUERY_SHARED = "scalar subquery: the same plan as one above, whose kept row and lineage it reads"
LAZY_STRATEGY = "lazy: nothing captured; the first answer runs the query again with capture"
UDTF_COARSE = "coarse: the Python UDTF {}; every row of its input partition"


def explain_line(cx: CaptureContext, node: JPlan, op: str, rw: Rewritten) -> ExplainLine:
    """The explain line of operator ``node`` (``op``) as its rule rewrote it."""
    b = cx.bridge
    if op in LEAVES:
        if not rw.slots:
            strategy = rw.strategy or "constant rows: no source rows behind them"
        else:
            use = cx.sources[cx.instances[rw.slots[0].ref].source]
            if use.info.kind == "parquet":
                strategy = f"source {use.info.name}: rid = file number and Parquet row index, read in place"
            elif b.is_checkpoint(node):
                strategy = (
                    f"source {use.info.name}: a checkpoint, which cut the plan: lineage stops at its rows "
                    "(session.checkpoint() keeps it)"
                )
            else:
                strategy = f"source {use.info.name}: rid = position in a Parquet copy made at capture"
            if use.info.name in cx.where:
                strategy += f"; {selected_text(cx.where[use.info.name])}"
    elif op == "Join":
        strategy = rw.strategy or JOIN_STRATEGY.get(b.join_type(node).split("(")[0], "")
    else:
        strategy = rw.strategy or (BY_PARTITION if rw.coarse else STRATEGY.get(op, ""))
    granularity = f"exact as declared: {rw.declared}" if rw.declared else rw.coarse or COARSE.get(op, "exact")
    return ExplainLine(cx.depth + 1, b.simple_string(node), granularity, strategy)  # the root is depth 1
