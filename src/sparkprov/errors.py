"""Exceptions raised by sparkprov.

Every error derives from :class:`SparkprovError`; the argument errors also derive
from ``ValueError`` so callers may catch either.

>>> import sparkprov as sp
>>> issubclass(sp.CaptureNotFound, sp.SparkprovError)
True
"""

from __future__ import annotations


class SparkprovError(Exception):
    """Root of every sparkprov error."""


class InvalidArgument(SparkprovError, ValueError):
    """An argument a function was given is not one it takes (a wrong type, an unknown
    name, a value out of range); the message says which and what it takes."""


class UnsupportedOperation(SparkprovError):
    """A query uses an operator or expression that capture does not handle exactly.

    ``operator`` names the Catalyst operator; ``where`` shows the plan around it.
    """

    def __init__(self, operator: str, where: str = "", reason: str = "") -> None:
        self.operator = operator
        self.where = where
        self.reason = reason
        msg = f"sparkprov cannot capture lineage through {operator}"
        if reason:
            msg += f": {reason}"
        if where:
            msg += f"\nin the plan:\n{where}"
        super().__init__(msg)


class SourceChanged(SparkprovError):
    """A source was modified, replaced or removed after the capture that read it."""


class SourceChangedWarning(UserWarning):
    """A source that capture copied into the store (CSV, JSON, ORC, text, in-memory data)
    changed after capture: traces read the copy, so they answer as captured. Make it an
    error with ``warnings.simplefilter("error", sp.SourceChangedWarning)`` (the command
    line: ``--refuse-changed``)."""


class CaptureNotFound(SparkprovError, KeyError):
    """No capture of that name exists in the store."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class CaptureFailed(SparkprovError):
    """The capture was attempted but not made: ``sparkprov run`` records why (and the
    script went on without it), and so does a capture that failed after storing the
    part of one of its marks, for that part."""


class SparkUnsupported(SparkprovError):
    """The SparkSession is not one sparkprov runs on: a Spark line it does not support,
    or a Spark Connect session (which exposes no Catalyst plans)."""


class SparkFailed(SparkprovError):
    """Spark's JVM raised an error sparkprov did not expect while it read, built or ran a
    plan; the message is Spark's own (the Java exception's class and message), and the
    Py4J error is its cause."""


class JvmHelperUnavailable(SparkprovError):
    """A Java helper sparkprov compiles at run time (with Janino, Spark's own compiler)
    could not be compiled or shipped to the executors; the message says which."""


class StoreCorrupt(SparkprovError):
    """The store holds an entry or a file this version of sparkprov cannot trust: a
    catalog entry that does not parse, or a file a capture names that is missing, of
    another size than when it was written, or not one the capture wrote. The message
    names the capture and the file."""


class CaptureTooNew(StoreCorrupt):
    """A capture was written by a newer sparkprov and keeps lineage in a form this one
    does not read (its entry's ``features``): refused, since reading it as this
    version's lineage would answer wrongly. The message names the forms; read the
    capture with a sparkprov that knows them. (A ``StoreCorrupt``, so what refuses to
    act on an entry it cannot read, ``sparkprov gc``, refuses it too.)"""


class StoreNotFound(SparkprovError, FileNotFoundError):
    """No sparkprov store exists at the given location."""


class StoreUnsupported(SparkprovError):
    """The store's location is on a file system whose guarantees the catalog commit
    needs are not given there (``docs/store.md``): refused before anything is written,
    rather than risking a lost or half-seen capture. The message says what is missing."""


class InputNotFound(SparkprovError, FileNotFoundError):
    """A file or directory a traced program reads does not exist."""


class ExecutorsLackModules(SparkprovError):
    """The executors' Python cannot run sparkprov's code: a module it imports is missing
    there (sparkprov itself is shipped with the job)."""


class InvalidPredicate(SparkprovError, ValueError):
    """A predicate given as text is not one Spark SQL expression (several statements,
    a statement, or text that does not parse): refused before any engine sees it."""


class LineageTooLarge(SparkprovError):
    """An answer would read more lineage than the embedded engine takes on; Spark answers it."""


class EmbeddedUnsupported(SparkprovError):
    """Something about a capture the embedded engine does not read (Spark does): an
    answer that asked for the embedded engine by name raises it; one that left the
    choice to sparkprov is answered by Spark instead."""


class LineageNotBuilt(SparkprovError):
    """A lazy capture's lineage could not be built: the process that captured it (which
    holds the query) is gone, or the query gave other rows when run again; or a workflow
    execution run with ``track="later"`` gave other rows when run again to track it."""


class WitnessesNotKept(SparkprovError):
    """The capture was made without the structure why and how provenance are read from
    (``capture(..., witnesses=True)``)."""


class LineageRestricted(SparkprovError, ValueError):
    """The capture kept a source's lineage only for the rows a workload predicate
    selects (``workload={"where": ...}``), and the question needs the other rows too
    (a forward trace from that source)."""


class RestrictedLineageWarning(UserWarning):
    """A backward trace reached a source whose lineage the capture kept only for the
    rows a workload predicate selects: the answer holds those rows alone."""


class CoarseLineageWarning(UserWarning):
    """An answer from a capture whose Python functions are declared blackbox holds
    their stored lineage (every row of a group or partition): the exact answer needs
    the session that captured the query (``backward`` and ``forward`` there)."""


def one_line(exc: BaseException) -> str:
    """``exc`` as the short reason a failed attempt records: its type and first line.

    >>> one_line(ValueError("no column k\\nmore detail"))
    'ValueError: no column k'
    """
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


class LineageDeclarationWrong(SparkprovError, ValueError):
    """A Python function's declared lineage (``sp.lineage``) does not hold for a row it
    produced: a mapping function raised or named an input row the function never
    received, a reported input column is missing or holds something other than input
    positions, or a declared forward mapping is not the inverse of the backward one.
    The message names the function, its input (partition or group) and the row."""


class ReplayUnavailable(SparkprovError):
    """A replay asked where the captured query is not held: a page not opened from the
    session that made the capture (``session.ui()``)."""


class SessionRequired(SparkprovError):
    """Work asked of a page served without a Spark session (``sparkprov ui``) that only
    one can do, such as capturing a query: open the page with ``session.ui()``."""
