"""The sources the command line's answers are traced over (those of the workload tests)."""

from ..query.conftest import orders  # noqa: F401 - a fixture
