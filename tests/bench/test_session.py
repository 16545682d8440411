"""A benchmark of named workloads checks its arguments before starting Spark."""

from __future__ import annotations

import argparse

import pytest

from sparkprov.bench.session import run_workloads, workload_names


def test_workload_names_are_split_and_trimmed():
    assert workload_names(" q1 ,q18,, ") == ["q1", "q18"]
    assert workload_names("") is None


def test_a_repeat_below_one_is_refused_before_spark_starts():
    args = argparse.Namespace(repeat=0, sf=1.0, data="data/tpch", workloads="")

    def never(*args):
        raise AssertionError("ran")

    with pytest.raises(ValueError, match="--repeat must be at least 1"):
        run_workloads(args, "unused", never)
