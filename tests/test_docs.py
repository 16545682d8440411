"""Every docstring example in the package runs (with the suite's SparkSession active)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sparkprov

MODULES = sorted(m.name for m in pkgutil.walk_packages(sparkprov.__path__, "sparkprov."))


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(spark, module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
