"""The check that the files written for the user hold the rows a capture stored
(capture/written_counts.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkprov.capture import written_counts
from sparkprov.errors import CaptureFailed


def test_row_counts_that_differ_fail_the_capture(tmp_path):
    def written(folder, name, rows):
        folder.mkdir(exist_ok=True)
        pq.write_table(pa.table({"x": list(range(rows))}), folder / name)

    written(tmp_path / "user", "part-00003-a-c000.snappy.parquet", 3)
    written(tmp_path / "stored", "part-00003-b-c000.snappy.parquet", 3)
    user = [f"file:{tmp_path}/user/part-00003-a-c000.snappy.parquet"]
    assert written_counts.footer_counts_match(str(tmp_path / "stored"), user, {3: 0})
    written(tmp_path / "stored", "part-00003-b-c000.snappy.parquet", 2)
    with pytest.raises(CaptureFailed, match="do not hold the rows"):
        written_counts.footer_counts_match(str(tmp_path / "stored"), user, {3: 0})
    # a file system Python does not read: the counts are left to Spark
    assert not written_counts.footer_counts_match(
        str(tmp_path / "stored"), ["hdfs://nn/x/part-00003-a.parquet"], {3: 0}
    )
