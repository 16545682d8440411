"""``sparkprov run script.py [args...]``: an unchanged PySpark script, traced.

The script runs in this process as ``python script.py args...`` would run it
(``__main__``, its ``sys.argv``, its folder first on ``sys.path``), with PySpark
patched by a ``Tracer`` (``hooks.py``) so every action is a capture in the store.
Its output is its own; sparkprov reports on stderr, after it, which captures it
made and which failed and why (also listed by ``sparkprov captures``).

>>> summary([]).splitlines()[0]
'sparkprov: the script ran no action'
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path

from .hooks import Attempt, Tracer


def run_script(script: str, args: list[str], store: str | Path) -> int:
    """Run ``script`` with ``args`` under capture into ``store``; returns its exit status."""
    path = Path(script)
    if not path.is_file():
        raise FileNotFoundError(f"no such script: {script}")
    tracer = Tracer(path, store)
    # Python workers run this interpreter: traced records go through sparkprov's code
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    status = 0
    try:
        with tracer.installed():
            # by its absolute path, as Python runs a script (its code objects, and so its
            # frames, are named by it: captures are named after their lines)
            runpy.run_path(str(path.resolve()), run_name="__main__")
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except Exception:  # noqa: BLE001 - as the interpreter reports an uncaught exception
        traceback.print_exc()
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.stdout.flush()
        print(summary(tracer.attempts, tracer.store.root), file=sys.stderr)
    return status


def summary(attempts: list[Attempt], store: str | Path | None = None) -> str:
    """What ``sparkprov run`` says after the script: its captures, and the failed ones' reasons."""
    if not attempts:
        return "sparkprov: the script ran no action"
    failed = [a for a in attempts if a.failed]
    where = f" in {store}" if store is not None else ""
    lines = [f"sparkprov: {len(attempts) - len(failed)} captures made, {len(failed)} failed{where}"]
    for a in attempts:
        lines.append(f"  {a.name} v{a.version}" + (f"  FAILED: {a.failed}" if a.failed else ""))
    return "\n".join(lines)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # as the interpreter does with sys.exit("message")
    return 1
