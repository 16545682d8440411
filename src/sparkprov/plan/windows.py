"""Window nodes: their expressions, functions, frames and lag/lead offsets read, and
window counts and Window nodes built like a plan's own.

>>> from pyspark.sql import SparkSession, Window, functions as F
>>> from sparkprov.plan.catalyst import Bridge
>>> spark = SparkSession.builder.getOrCreate()
>>> b = Bridge(spark)
>>> df = spark.range(4).withColumn("prev", F.lag("id").over(Window.orderBy("id")))
>>> window = b.optimized(b.analyzed(df))
>>> named, partition, order = b.window_parts(window)
>>> name, fn, wexpr = b.window_function(named[0])
>>> name, b.offset_value(fn), b.frame(wexpr)[0]
('Lag', -1, 'RowFrame')
"""

from __future__ import annotations

from ..errors import InvalidArgument
from .handles import JExpr, JPlan


class Windows:
    """What ``Bridge`` reads and builds of Window nodes (a mixin: ``Bridge.__init__``
    sets the ``spark``, ``line`` and ``_expr`` it uses)."""

    def window_parts(self, window: JPlan) -> tuple[list[JExpr], list[JExpr], list[JExpr]]:
        """(window expressions (named), partition spec, order spec) of a Window node."""
        return (
            self.to_list(window.windowExpressions()),
            self.to_list(window.partitionSpec()),
            self.to_list(window.orderSpec()),
        )

    def window_function(self, named: JExpr) -> tuple[str, JExpr, JExpr]:
        """(function class name, function, WindowExpression) of an aliased window expression."""
        wexpr = named.child()
        if self.class_name(wexpr) != "WindowExpression":
            raise InvalidArgument(f"not a window expression: {named.sql()}")
        fn = wexpr.windowFunction()
        return self.class_name(fn), fn, wexpr

    def frame(self, wexpr: JExpr) -> tuple[str, JExpr, JExpr]:
        """(``RowFrame`` or ``RangeFrame``, lower bound, upper bound) of a window expression."""
        f = wexpr.windowSpec().frameSpecification()
        return str(f.frameType().toString()).replace("$", ""), f.lower(), f.upper()

    def is_unbounded(self, bound: JExpr) -> bool:
        return self.class_name(bound).rstrip("$") in ("UnboundedPreceding", "UnboundedFollowing")

    def offset_value(self, fn: JExpr) -> int:
        """The signed row offset of lag (negative) or lead (positive)."""
        return int(fn.offset().eval(None))

    def count_over(self, like: JExpr, frame_type: str, lower: JExpr | str, upper: JExpr | str) -> JExpr:
        """``count(1)`` over ``like``'s partition and order with the given frame.

        Bounds are expressions or the strings ``unbounded_preceding``,
        ``unbounded_following`` and ``current_row``.
        """
        e = self._expr
        kinds = {"RowFrame": "RowFrame$", "RangeFrame": "RangeFrame$"}
        ftype = getattr(getattr(e, kinds[frame_type]), "MODULE$")
        named = {
            "unbounded_preceding": "UnboundedPreceding$",
            "unbounded_following": "UnboundedFollowing$",
            "current_row": "CurrentRow$",
        }
        lo = getattr(getattr(e, named[lower]), "MODULE$") if isinstance(lower, str) else lower
        hi = getattr(getattr(e, named[upper]), "MODULE$") if isinstance(upper, str) else upper
        spec = like.windowSpec()
        new_spec = spec.copy(spec.partitionSpec(), spec.orderSpec(), e.SpecifiedWindowFrame(ftype, lo, hi))
        return like.copy(self._count_one(), new_spec)

    def _count_one(self) -> JExpr:
        # a resolved count(1), taken from a tiny analyzed plan, with a fresh result id
        agg = self.analyzed(self.spark.range(1).selectExpr("count(1)"))
        found = self.to_list(agg.aggregateExpressions())[0].child()
        return found.copy(
            found.aggregateFunction(),
            found.mode(),
            found.isDistinct(),
            found.filter(),
            self._expr.NamedExpression.newExprId(),
        )

    def window_like(self, window: JPlan, window_exprs: list[JExpr], child: JPlan) -> JPlan:
        return self.line.window_like(window, self.seq(window_exprs), child)
