"""What capture says it supports: the rule table, supports(), and the README's table."""

from __future__ import annotations

from pathlib import Path

from sparkprov.capture import support
from sparkprov.capture.rules import RULES, TABLE
from sparkprov.capture.shapes import LEAVES

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_lists_exactly_the_operators_capture_has_rules_for():
    text = README.read_text()
    start = text.index(support.README_TABLE_START) + len(support.README_TABLE_START) + 1
    table = text[start : text.index(support.README_TABLE_END)]
    assert table == support.operator_table(), "run scripts/readme_operators.py to write the README's table"
    listed = {line.split("|")[1].strip() for line in table.splitlines()[2:]}
    assert listed == set(RULES) | set(LEAVES)


def test_supports_answers_for_the_rule_table_and_the_leaves_alone():
    assert all(support.supports(op) for op, _ in TABLE)
    assert all(support.supports(op) for op in LEAVES)
    for op in ("Pivot", "Tail", "DataSourceV2Relation", "MergeIntoTable", ""):
        assert not support.supports(op)
    # one entry per operator: a second rule for one would be silently ignored
    assert len({op for op, _ in TABLE}) == len(TABLE)
