"""Running a script in this process: plainly, and under ``sparkprov run``."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys

from sparkprov.script.runner import run_script


def run_plain(path, args: list[str]) -> str:
    """What ``python path args...`` prints."""
    out = io.StringIO()
    saved = sys.argv
    sys.argv = [str(path), *args]
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = saved
    return out.getvalue()


def run_traced(path, args: list[str], store) -> str:
    """What ``sparkprov run --store store path args...`` prints (the script's own output)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_script(str(path), args, store) == 0
    return out.getvalue()
