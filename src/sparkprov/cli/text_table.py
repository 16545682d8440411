"""Rows as the command line prints them: an aligned text table.

NULL is printed as ``NULL`` (or what the user asks for), never as ``None`` or ``NaN``,
so it cannot be mistaken for the string "None"; whole numbers stay whole numbers (a
nullable integer column is not turned into floats); columns are aligned by the width
characters take on a terminal (a CJK character takes two), numbers to the right.

>>> import pyarrow as pa
>>> print(render(pa.table({"k": ["a", None, "東京"], "n": [6, None, 12]})))
k     n
a        6
NULL  NULL
東京    12
"""

from __future__ import annotations

import unicodedata

import pyarrow as pa

MAX_WIDTH = 40  # display columns a cell may take; longer ones end with "…"


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text
    )


def _clipped(text: str) -> str:
    if width(text) <= MAX_WIDTH:
        return text
    kept, used = [], 0
    for c in text:
        used += width(c)
        if used > MAX_WIDTH - 1:
            break
        kept.append(c)
    return "".join(kept) + "…"


def cell(value: object, null: str = "NULL") -> str:
    """One value as printed."""
    if value is None:
        return null
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v, null) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {cell(v, null)}" for k, v in value.items()) + "}"
    if hasattr(value, "isoformat"):
        return value.isoformat(sep=" ") if hasattr(value, "hour") and hasattr(value, "day") else value.isoformat()
    return str(value)


def render(table: pa.Table, null: str = "NULL") -> str:
    """``table`` as aligned text, a header line and one line per row."""
    names = table.column_names
    columns = [[_clipped(cell(v, null)) for v in table.column(n).to_pylist()] for n in names]
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) for t in table.schema.types]
    widths = [max([width(n), *(width(c) for c in col)]) for n, col in zip(names, columns)]

    def line(cells: list[str], header: bool = False) -> str:
        out = []
        for text, w, right in zip(cells, widths, numeric):
            pad = " " * (w - width(text))
            out.append(pad + text if right and not header else text + pad)
        return "  ".join(out).rstrip()

    rows = [line(names, header=True)] + [line([col[i] for col in columns]) for i in range(table.num_rows)]
    return "\n".join(rows)
