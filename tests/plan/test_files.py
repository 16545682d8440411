"""What the files a capture reads or writes are listed as: in one round trip through
the Java helper, as Py4J lists them file by file."""

from __future__ import annotations

from sparkprov.plan.catalyst import Bridge

from .conftest import round_trips


def test_files_listed_in_one_round_trip_as_file_by_file(spark, tmp_path, monkeypatch):
    folder = tmp_path / "a folder"  # a space: URIs spell it %20
    spark.range(12).repartition(3).write.parquet(str(folder))
    spark.range(4).selectExpr("id", "id % 2 AS day").write.partitionBy("day").parquet(str(tmp_path / "parts"))
    (folder / "_hidden").write_text("skipped, as Spark skips it")
    helped, plain = Bridge(spark), Bridge(spark)
    plain._listing = False  # the path without the helper
    root = helped.qualified(str(folder))
    files = helped.list_files([root])
    assert (root, sorted(files)) == (plain.qualified(str(folder)), sorted(plain.list_files([root])))
    assert root.startswith("file:/") and root.endswith("/a%20folder") and len(files) == 3
    assert all(name.startswith(root + "/part-") and size > 0 and mtime > 0 for name, size, mtime in files)
    roots = [root, helped.qualified(str(tmp_path / "parts")), root + "-missing"]
    listed = helped.list_files(roots)
    assert sorted(listed) == sorted(plain.list_files(roots))
    assert len(listed) == 3 + len(list((tmp_path / "parts").rglob("part-*")))
    assert any("/day=1/" in name for name, _, _ in listed)
    sent = round_trips(monkeypatch)
    helped.list_files(roots)
    assert len(sent) == 1
