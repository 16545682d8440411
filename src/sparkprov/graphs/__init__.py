"""The store's lineage graph (the IBM paper): every capture's pairs as triples between
rows of datasets, linked across jobs, with their weakly connected components, for
lineage queries that read one component rather than every capture (``session.graph()``,
``sparkprov graph``).

>>> import sparkprov.graphs
>>> from sparkprov.api import front_ends
>>> "graphs" in front_ends._MAKERS
True
"""

from ..api import front_ends


def _graph(session):
    from .graph import LineageGraph

    return LineageGraph(session)


front_ends.register("graphs", _graph)
