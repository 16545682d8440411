"""Python functions that state their own lineage (SubZero's lineage modes).

A function passed to mapInPandas, mapInArrow, applyInPandas, applyInArrow or
cogroup().applyInPandas / applyInArrow is opaque to capture: without a declaration an
output row's lineage is its whole group or partition. ``sp.lineage`` lets the
function's author say which input rows each output row came from:

* ``declare.py``: the declaration (``sp.lineage``) and what a declared function does in
  a run without capture;
* ``frames.py``: the data forms functions see (pandas frames, Arrow tables and batches,
  iterators of them): positions, added and dropped columns;
* ``tracer.py``: in the Python workers, a declared function's reported or mapped input
  positions checked and turned into the ids of the input rows.

This package sits below capture (``capture/rules/python.py`` reads declarations and
calls the tracer); it imports no Spark.
"""
