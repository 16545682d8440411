"""RDD programs traced record by record: a front end above the facade, ``session.rdd``
(``LineageContext``), registered with the session when this package is imported.

>>> import sparkprov.rdd
>>> from sparkprov.api import front_ends
>>> "rdd" in front_ends._MAKERS
True
"""

from ..api import front_ends


def _context(session):
    from .context import LineageContext

    return LineageContext(session.spark.sparkContext, session=session)


front_ends.register("rdd", _context)
