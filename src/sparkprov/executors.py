"""sparkprov's own code on the executors: shipped with the job, checked before it runs.

Traced RDD programs (and the wrappers around ``applyInPandas``-style functions) run
sparkprov's functions in the executors' Python workers. On a cluster, or whenever
``PYSPARK_PYTHON`` names another Python than the driver's, those workers need not have
sparkprov installed: ``ship`` adds a zip of the package to the SparkContext
(``addPyFile``, as the compiled Java helpers are added with ``addJar``), once per
context. What the package itself imports there (pyarrow, NumPy) cannot be shipped that
way: ``check_workers`` runs one small task first and, when the workers' Python lacks
any of it, refuses with one error saying what to install and where, instead of a Python
traceback from a task in the middle of the program.

>>> sorted(zipped_package().namelist())[:1]
['sparkprov/__init__.py']
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
import zipfile
from pathlib import Path

from pyspark import SparkContext

from .errors import ExecutorsLackModules

# what sparkprov's code run in Python workers imports (rdd/worker.py: side files written
# with pyarrow, handles and rids in NumPy arrays)
WORKER_MODULES = ("pyarrow", "numpy")
_PACKAGE = Path(__file__).resolve().parent
_lock = threading.Lock()
_shipped: set[str] = set()
_checked: set[str] = set()


@functools.lru_cache(maxsize=1)
def _zip_path() -> Path:
    sources = sorted(p for p in _PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha1()
    for p in sources:
        digest.update(str(p.relative_to(_PACKAGE)).encode())
        digest.update(p.read_bytes())
    path = Path(tempfile.gettempdir()) / f"sparkprov-{digest.hexdigest()[:16]}.zip"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p in sources:
                z.write(p, Path("sparkprov") / p.relative_to(_PACKAGE))
        os.replace(tmp, path)
    return path


def zipped_package() -> zipfile.ZipFile:
    """The zip ``ship`` adds (the package as it is in this process)."""
    return zipfile.ZipFile(_zip_path())


def _key(sc: SparkContext) -> str:
    return sc.applicationId


def ship(sc: SparkContext) -> None:
    """Add sparkprov's code to ``sc``'s Python workers, once per context."""
    with _lock:
        if _key(sc) in _shipped:
            return
        sc.addPyFile(str(_zip_path()))
        _shipped.add(_key(sc))


def check_workers(sc: SparkContext) -> None:
    """Ship sparkprov to ``sc``'s workers and check, with one task, that their Python
    has what its code imports; ``ExecutorsLackModules`` says what is missing where."""
    ship(sc)
    with _lock:
        if _key(sc) in _checked:
            return
    modules = (*WORKER_MODULES, "sparkprov")

    def probe(_):  # nested, so it is pickled by value: the worker needs no sparkprov to run it
        import importlib
        import socket
        import sys

        missing = []
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError as exc:  # sparkprov's own import names what it lacks
                missing.append(getattr(exc, "name", None) or name)
        yield (sys.executable, socket.gethostname(), sorted(set(missing)))

    executable, host, missing = sc.parallelize([0], 1).mapPartitions(probe).collect()[0]
    if missing:
        install = " ".join(m for m in missing if m != "sparkprov")
        raise ExecutorsLackModules(
            f"the executors' Python ({executable} on {host}) cannot import {', '.join(missing)}, which sparkprov's "
            f"code run in Python workers needs: install {install or 'sparkprov'} into that Python on every "
            "executor, or point spark.pyspark.python (PYSPARK_PYTHON) at a Python that has them"
        )
    with _lock:
        _checked.add(_key(sc))
