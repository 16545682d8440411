"""Arrays held as Spark DataFrames of cells or tiles: read into the arrays a workflow
runs on, and a lineage answer's cells given back as rows to join to them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sparkprov.arrays.cells import Box
from sparkprov.arrays.frames import array_from_cells, array_from_tiles, cells_table
from sparkprov.arrays.operators import neighbourhood
from sparkprov.arrays.workflow import ArrayWorkflow
from sparkprov.bench.astronomy import Smooth
from sparkprov.errors import InvalidArgument

IMAGE = np.arange(6 * 7, dtype=np.float64).reshape(6, 7) * 1.5


def _tiles(image, tile_shape, binary):
    rows = []
    for ti in range(-(-image.shape[0] // tile_shape[0])):
        for tj in range(-(-image.shape[1] // tile_shape[1])):
            block = image[ti * tile_shape[0] : (ti + 1) * tile_shape[0], tj * tile_shape[1] : (tj + 1) * tile_shape[1]]
            rows.append((ti, tj, block.tobytes() if binary else block.ravel().tolist()))
    return rows


def test_a_dataframe_of_cells_is_the_array_it_holds(spark):
    cells = spark.createDataFrame(cells_table(IMAGE, np.arange(IMAGE.size)).to_pandas().sample(frac=1, random_state=1))
    assert cells.columns == ["i", "j", "value"]
    assert np.array_equal(array_from_cells(cells, ("i", "j"), "value"), IMAGE)
    some = cells.where("i < 2 or j > 4")  # cells missing: filled, or an error
    filled = array_from_cells(some, ("i", "j"), "value", shape=(6, 7), fill=-1)
    assert (filled[2:, :5] == -1).all() and np.array_equal(filled[:2], IMAGE[:2])
    with pytest.raises(InvalidArgument, match=r"20 of the 42 cells of an array of shape \(6, 7\) have no row"):
        array_from_cells(some, ("i", "j"), "value", shape=(6, 7))


@pytest.mark.parametrize("binary", [False, True], ids=["array column", "binary column"])
def test_a_dataframe_of_tiles_is_the_array_it_holds(spark, binary):
    rows = _tiles(IMAGE, (4, 3), binary)  # edge tiles cut to the array: 2 rows, 1 column
    kind = "binary" if binary else "array<double>"
    tiles = spark.createDataFrame(rows, f"ti int, tj int, data {kind}")
    assert np.array_equal(array_from_tiles(tiles, ("ti", "tj"), "data", (4, 3), shape=(6, 7)), IMAGE)
    with pytest.raises(InvalidArgument, match=r"tile \(1, 2\) has no row"):
        array_from_tiles(tiles.where("not (ti = 1 and tj = 2)"), ("ti", "tj"), "data", (4, 3), shape=(6, 7))
    with pytest.raises(InvalidArgument, match=r"tile \(1, 0\) holds 6 values; it covers 3 cells"):
        array_from_tiles(tiles, ("ti", "tj"), "data", (4, 3), shape=(5, 7))


def test_a_lineage_answer_comes_back_as_the_rows_it_names(spark, tmp_path):
    # a user's flow: tiles in a DataFrame, a workflow over them, an output cell traced
    # back, and the input tiles and cells behind it as rows
    tiles = spark.createDataFrame(_tiles(IMAGE, (3, 3), binary=False), "ti int, tj int, data array<double>")
    image = array_from_tiles(tiles, ("ti", "tj"), "data", (3, 3), shape=(6, 7))
    wf = ArrayWorkflow()
    wf.add("smooth", Smooth(), ["image"])
    run = wf.run({"image": image}, tmp_path / "run", {"smooth": ["Map"]})
    ids = run.backward(Box((2, 2), (3, 3)), "smooth", "image")
    assert ids.tolist() == neighbourhood(Box((2, 2), (3, 3)).ids(run.shape("image")), run.shape("image"), 1).tolist()
    found = spark.createDataFrame(cells_table(image, ids, tile_shape=(3, 3)))
    behind = found.join(tiles, ["ti", "tj"]).select("ti", "tj").distinct().orderBy("ti", "tj").collect()
    assert [tuple(r) for r in behind] == [(0, 0), (0, 1), (1, 0), (1, 1)]  # rows 1-4, columns 1-4
    got = {(r.i, r.j): r.value for r in found.collect()}
    assert got == {(i, j): IMAGE[i, j] for i in range(1, 5) for j in range(1, 5)}


def test_bad_cells_and_tiles_are_named():
    cells = pa.table({"i": [0, 1, 1], "j": [0, 0, 0], "v": [1.0, 2.0, 3.0]})
    with pytest.raises(InvalidArgument, match=r"cell \(1, 0\) has more than one row"):
        array_from_cells(cells, ("i", "j"), "v", fill=0)
    with pytest.raises(InvalidArgument, match=r"cell \(1, 0\) is outside an array of shape \(1, 1\)"):
        array_from_cells(cells, ("i", "j"), "v", shape=(1, 1))
    with pytest.raises(InvalidArgument, match="negative coordinate"):
        array_from_cells(pa.table({"i": [-1], "v": [1.0]}), ("i",), "v")
    with pytest.raises(InvalidArgument, match="holds double; a coordinate is an integer"):
        array_from_cells(pa.table({"i": [0.5], "v": [1.0]}), ("i",), "v")
    with pytest.raises(InvalidArgument, match="no column 'w'"):
        array_from_cells(cells, ("i", "j"), "w")
    with pytest.raises(InvalidArgument, match="Spark DataFrame or an Arrow table, not list"):
        array_from_cells([(0, 1.0)], ("i",), "v")
    with pytest.raises(InvalidArgument, match="cell id 42 is outside"):
        cells_table(IMAGE, [42])
