"""Marks: named intermediate points of a pipeline that lineage cursors can step to.

``mark(df, name)`` tags ``df`` (an alias Catalyst keeps in the analyzed plan). When a
capture meets a mark, it first captures the marked sub-plan on its own, as capture
``<capture>.<mark>`` whose output is written into the store, and then reads those
rows in its place: the outer capture's source ``<mark>`` is that capture's output, so
traces and cursors step from the outer output to the mark's rows and on to the
sources. The marked rows are computed once (as with a checkpoint) and the query runs
in two parts.

>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> marked = mark(spark.range(3), "small")
>>> marked.count()
3
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame

from ..errors import InvalidArgument, UnsupportedOperation
from ..plan.catalyst import Bridge, JPlan
from ..plan.written import read_written
from ..sources.identity import NamedLeaf, named_leaf
from ..store.catalog import check_name
from ..store.layout import StoreFolders
from ..store.lease import claim, release

_PREFIX = "__sp_mark__"


def mark(df: DataFrame, name: str) -> DataFrame:
    """``df`` as a named point of the pipeline: a capture of anything built on it keeps
    the lineage of its rows in two steps (output to ``name``'s rows, and those to the
    sources), so ``cap.lineage(rows).go_back()`` stops at them.

    >>> cleaned = mark(spark.range(10).where("id % 2 = 0"), "cleaned")  # doctest: +SKIP
    >>> cap = session.capture(cleaned.groupBy().count(), "evens")  # doctest: +SKIP
    >>> cap.lineage([0]).go_back().positions  # doctest: +SKIP
    ['evens/cleaned']
    """
    if not isinstance(df, DataFrame):
        raise InvalidArgument(f"df must be a DataFrame, not {type(df).__name__}")
    check_name(name)
    return df.alias(_PREFIX + name)


def mark_names(bridge: Bridge, df: DataFrame) -> list[str]:
    """The names of the marks in ``df``'s plan (each once), from its tree string: a
    capture's parts are known before any of them runs."""
    text = bridge.tree_string(bridge.analyzed(df))
    return list(dict.fromkeys(re.findall(re.escape(_PREFIX) + r"([A-Za-z0-9_.-]+)", text)))


def capture_marks(
    bridge: Bridge,
    df: DataFrame,
    name: str,
    named: list[NamedLeaf],
    store_root: Path,
    capture: Callable[[DataFrame, str, list[NamedLeaf], str], dict],
) -> tuple[DataFrame, list[NamedLeaf]]:
    """Capture every marked sub-plan of ``df`` (innermost first) with ``capture(sub,
    capture name, named, path)``; returns ``df`` reading the marks' stored rows instead,
    and the source names to use for them."""
    plan = bridge.analyzed(df)
    if _PREFIX not in bridge.tree_string(plan):
        return df, named
    named = list(named)
    done: dict[str, str] = {}  # mark -> path of its stored rows

    def replace(node: JPlan) -> JPlan:
        kids = bridge.children(node)
        new_kids = [replace(k) for k in kids]
        if any(a is not b for a, b in zip(new_kids, kids)):
            node = bridge.with_new_children(node, new_kids)
        alias = bridge.subquery_alias(node)
        if alias is None or not alias.startswith(_PREFIX):
            return node
        mark_name = alias[len(_PREFIX) :]
        if mark_name not in done:
            path = str(StoreFolders(store_root).mark(name, mark_name, uuid.uuid4().hex))
            claim(store_root, Path(path))  # not garbage while the mark's capture writes them
            (sub,) = new_kids
            try:
                capture(bridge.to_dataframe(sub), f"{name}.{mark_name}", named, path)
            finally:
                release(Path(path))  # named by the mark's entry now, or given up
            done[mark_name] = path
        # a fresh read per occurrence (fresh attributes), renamed to the ids the plan above uses
        leaf = bridge.analyzed(read_written(bridge.spark, done[mark_name]))
        named.append(named_leaf(bridge, leaf, mark_name))
        outputs = bridge.output(node)
        exprs = [
            bridge.alias(new, bridge.attr_name(old), bridge.jexpr_id(old))
            for new, old in zip(bridge.output(leaf), outputs)
        ]
        return bridge.project(exprs, leaf)

    plan = replace(plan)
    if _PREFIX in bridge.tree_string(plan):
        raise UnsupportedOperation(
            "a mark inside a subquery expression", reason="mark the subquery's DataFrame outside"
        )
    return bridge.to_dataframe(plan), named
