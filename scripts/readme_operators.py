#!/usr/bin/env python3
"""Write the README's table of supported Catalyst operators from capture's own rule
table (sparkprov.capture.support.operator_table); tests/capture/test_support.py fails
when the README differs from it."""

from pathlib import Path

from sparkprov.capture.support import README_TABLE_END, README_TABLE_START, operator_table

readme = Path(__file__).resolve().parents[1] / "README.md"
text = readme.read_text()
start, end = text.index(README_TABLE_START), text.index(README_TABLE_END)
readme.write_text(text[: start + len(README_TABLE_START)] + "\n" + operator_table() + text[end:])
print(f"wrote the operator table into {readme}")
