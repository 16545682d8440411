"""Region lineage for arrays (SubZero sections IV to VI): lineage between sets of cells,
kept compactly and never expanded to cell pairs unless asked.

* ``cells.py``: an array's shape, its cells as flat ids, and the cells a query names
  (coordinates, boxes, masks);
* ``regions.py``: ``RegionLog``, what an operator writes (SubZero's ``lwrite``): region
  pairs (output cells, input cells) and payload pairs (output cells, payload), held as
  ragged NumPy arrays;
* ``encodings.py``: how a log is stored and queried: SubZero's FullOne, FullMany,
  PayOne and PayMany, backward- or forward-optimized, the Many forms with a spatial
  index (an R-tree over their regions' bounding boxes); a range encoding after
  ProvRC (pairs grouped by the input's offset from the output, runs of output cells);
  and cell-level pairs, what sparkprov stores for rows;
* ``frames.py``: arrays held as DataFrames of cells or tiles read into NumPy, and a
  lineage answer's cells given back as rows (with their tiles) to join to them.

Plain NumPy and pyarrow: Spark only to collect a DataFrame of cells or tiles.
"""
