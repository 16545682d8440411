"""Replay and what-if: the captured query re-run with some sources replaced, and the diff.

The query is the DataFrame that was captured, so replay works in the session that
captured it. Each occurrence of a replaced source in its plan becomes the replacement
(its columns taken by the source's names and cast to the source's types, renamed to
the ids the plan above expects); the new output is compared with the stored one.

>>> import sparkprov as sp, tempfile
>>> from pyspark.sql import SparkSession
>>> spark = SparkSession.builder.getOrCreate()
>>> session = sp.LineageSession(spark, store=tempfile.mkdtemp())
>>> df = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], ["k", "v"]), "numbers")
>>> cap = session.capture(df.groupBy("k").sum("v"), name="sums")
>>> result = cap.replay({"numbers": df.where("v > 1")}, key="k")
>>> [(r.k, r["sum(v)"]) for r in result.changed.collect()]
[('a', 2)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import InvalidArgument
from ..plan.catalyst import Bridge, JPlan
from ..sources.identity import leaf_key

_WAS = "__sp_was_"


@dataclass
class Replay:
    """The new output of a replayed query and how it differs from the captured one.

    ``added`` and ``removed`` are whole rows (as multisets: a row that appears once
    more counts once). With a ``key``, a removed and an added row with equal keys are
    one ``changed`` row instead: its new values, and the old value of every other
    column as ``__sp_was_<column>``.
    """

    output: DataFrame
    added: DataFrame
    removed: DataFrame
    changed: DataFrame | None
    key: list[str] | None

    def counts(self) -> dict[str, int]:
        """How many rows were added, removed and changed."""
        counts = {"added": self.added.count(), "removed": self.removed.count()}
        counts["changed"] = self.changed.count() if self.changed is not None else 0
        return counts


@dataclass(frozen=True)
class SourceLeaf:
    """How to recognise a source's leaves in a query plan."""

    key: Any  # leaf_key for file sources; None for in-memory ones (compared by sameResult)
    leaf: JPlan


def replay(
    bridge: Bridge,
    query: DataFrame,
    leaves: dict[str, SourceLeaf],
    replacements: dict[str, DataFrame],
    original: DataFrame,
    key: str | list[str] | None = None,
) -> Replay:
    """Re-run ``query`` with the sources in ``replacements`` replaced; diff with ``original``."""
    if not isinstance(replacements, dict) or not replacements:
        raise InvalidArgument("replacements must be a non-empty dict {source name: DataFrame}")
    for name, df in replacements.items():
        if name not in leaves:
            raise InvalidArgument(f"no source {name!r} to replace; sources: {', '.join(leaves)}")
        if not isinstance(df, DataFrame):
            raise InvalidArgument(f"the replacement of {name!r} must be a DataFrame, not {type(df).__name__}")
    keys = [key] if isinstance(key, str) else list(key) if key is not None else None
    if keys is not None:
        missing = [k for k in keys if k not in original.columns]
        if missing:
            raise InvalidArgument(f"key columns {missing} are not output columns: {', '.join(original.columns)}")

    found = set()

    def swap(node: JPlan) -> JPlan:
        kids = bridge.children(node)
        if not kids:
            for name, df in replacements.items():
                if _is_leaf_of(bridge, node, leaves[name]):
                    found.add(name)
                    return _in_place_of(bridge, node, df, name)
            return node
        new = [swap(k) for k in kids]
        return bridge.with_new_children(node, new) if any(a is not b for a, b in zip(new, kids)) else node

    plan = swap(bridge.inline_ctes(bridge.analyzed(query)))
    unseen = set(replacements) - found
    if unseen:
        raise InvalidArgument(
            f"sources {sorted(unseen)} are not read directly by the query's plan; cannot replace them"
        )
    output = bridge.to_dataframe(plan)
    return diff(output, original, keys)


def diff(new: DataFrame, old: DataFrame, key: list[str] | None) -> Replay:
    """Rows added, removed and (with ``key``) changed from ``old`` to ``new``."""
    added, removed = new.exceptAll(old), old.exceptAll(new)
    if key is None:
        return Replay(new, added, removed, None, None)
    was = removed.select(*[F.col(f"`{c}`").alias(_WAS + c) for c in removed.columns])
    changed = added.join(was, [added[k].eqNullSafe(was[_WAS + k]) for k in key], "inner").select(
        *[added[c] for c in added.columns], *[was[_WAS + c] for c in removed.columns if c not in key]
    )
    return Replay(
        new,
        added.join(removed.select(*key), [added[k].eqNullSafe(removed[k]) for k in key], "left_anti"),
        removed.join(added.select(*key), [removed[k].eqNullSafe(added[k]) for k in key], "left_anti"),
        changed,
        key,
    )


def _is_leaf_of(bridge: Bridge, node: JPlan, source: SourceLeaf) -> bool:
    if source.key is not None:
        return leaf_key(bridge, node) == source.key
    return bridge.file_relation(node) is None and bridge.same_result(node, source.leaf)


def _in_place_of(bridge: Bridge, leaf: JPlan, df: DataFrame, name: str) -> JPlan:
    outputs = bridge.output(leaf)
    columns = {c.lower() for c in df.columns}
    missing = [bridge.attr_name(a) for a in outputs if bridge.attr_name(a).lower() not in columns]
    if missing:
        raise InvalidArgument(f"the replacement of {name!r} lacks its columns {missing}")
    typed = df.select(*[F.col(f"`{bridge.attr_name(a)}`").cast(_type_string(bridge, a)) for a in outputs])
    new = bridge.analyzed(typed)
    exprs = [bridge.alias(n, bridge.attr_name(o), bridge.jexpr_id(o)) for n, o in zip(bridge.output(new), outputs)]
    return bridge.project(exprs, new)


def _type_string(bridge: Bridge, attr) -> str:
    return str(bridge.data_type(attr).sql())
