"""Text files read in place: a line's id is its input split and its number in it.

``sc.textFile`` splits files as Hadoop's ``TextInputFormat`` does and reads each split
in one task. A traced ``textFile`` numbers the lines of each split as they stream by
(rid ``split << 40 | line``), so nothing is copied. To show a line again, its split
is read the way Hadoop reads it (``split_lines``): from the byte ``start``, skipping
the first line unless the split starts the file (the split before reads it), up to
and including the line that starts at ``start + length``, lines ending at ``\\n``,
``\\r`` or ``\\r\\n``. The files' fingerprint says whether they changed since.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
>>> _ = open(path, "w").write("one\\ntwo\\nthree\\n")
>>> split_lines(path, 0, 5), split_lines(path, 5, 9)
(['one', 'two'], ['three'])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import count

import numpy as np

from ..store.format import RID, ROW_BITS
from ..store.layout import local_path

# Hadoop decompresses these whole (one split per file); read back with a copy instead
COMPRESSED = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br", ".xz")
_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"


def split_lines(path: str, start: int, length: int) -> list[str]:
    """The lines Hadoop's ``LineRecordReader`` reads for split ``(start, length)`` of ``path``."""
    return [line.decode("utf-8", errors="replace") for line in _split_data(path, start, length).splitlines()]


def picked_lines(path: str, start: int, length: int, rows: list[int]) -> list[str | None]:
    """Lines ``rows`` (numbers in the split) of a split, as ``split_lines`` numbers them;
    None for a number the split has no line for. Line ends are found with NumPy, and
    only the picked lines become strings."""
    data = _split_data(path, start, length)
    codes = np.frombuffer(data, dtype=np.uint8)
    lf = codes == 10
    if b"\r" in data:
        cr = codes == 13
        lone_cr = cr.copy()
        lone_cr[:-1] &= ~lf[1:]  # \r\n ends a line once, at its \n
        ends = np.flatnonzero(lf | lone_cr)  # the last byte of each line end
        stops = np.concatenate((ends, [len(data)]))
        stops[: len(ends)] -= lf[ends] & (ends > 0) & cr[np.maximum(ends - 1, 0)]
    else:  # the usual text: \n alone ends lines
        ends = np.flatnonzero(lf)
        stops = np.concatenate((ends, [len(data)]))
    starts = np.concatenate(([0], ends + 1))
    if starts[-1] == len(data):  # nothing after the last line end
        starts, stops = starts[:-1], stops[:-1]
    found: list[str | None] = []
    for row in rows:
        found.append(data[starts[row] : stops[row]].decode("utf-8", errors="replace") if row < len(starts) else None)
    return found


def _split_data(path: str, start: int, length: int) -> bytes:
    """The bytes of the lines a split holds (see ``split_lines``)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(length)
        tail = bytearray()
        # the last line read starts at or before the split's end and may run past it
        while len(data) == length:
            more = f.read(_CHUNK)
            end = _line_end(more, 0)
            if end is None:
                tail += more
                if not more:
                    break
                continue
            tail += more[:end]
            if more[end - 1 : end] == b"\r" and (more[end : end + 1] or f.read(1)) == b"\n":
                tail += b"\n"  # \r\n is one line end
            break
    if tail:
        data += tail
    if not start and data.startswith(_BOM):  # as Hadoop: a UTF-8 byte order mark is not text
        data = data[len(_BOM) :]
    if start:  # a split that does not start the file leaves its first line to the one before
        first = _line_end(data, 0)
        if first is None:
            return b""
        if data[first - 1 : first] == b"\r" and data[first : first + 1] == b"\n":
            first += 1
        data = data[first:]
    return data


def _line_end(data: bytearray | bytes, at: int) -> int | None:
    """The index just past the first line terminator at or after ``at``, if any."""
    n, r = data.find(b"\n", at), data.find(b"\r", at)
    found = [i for i in (n, r) if i >= 0]
    return min(found) + 1 if found else None


def number_lines(split: int, lines: Iterable[str]) -> Iterator[tuple[tuple[int], str]]:
    """A ``mapPartitionsWithIndex`` function: each line of split ``split`` as a traced
    record ``((split << 40 | n,), line)``, numbered in C (``count``), not a Python loop."""
    return zip(zip(count(split << ROW_BITS)), lines)


def split_rows(split: tuple[int, tuple[str, int, int]]) -> Iterator[tuple[str, int]]:
    """``(line, rid)`` for every line of one numbered split ``(number, (path, start, length))``."""
    number, (path, start, length) = split
    base = number << ROW_BITS
    for n, line in enumerate(split_lines(local_path(path), start, length)):
        yield line, base | n


ROWS_SCHEMA = f"value string, {RID} long"
