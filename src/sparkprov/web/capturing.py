"""Captures started from the page: a Spark SQL query over the session's tables, captured
as a job (progress from its Spark stages, cancellable) by the session serving the page
(``session.ui()``); ``sparkprov ui`` has no session, so no capture form.

The query is checked to be one query, never a statement (``plan/query_text.py``),
before ``spark.sql`` sees it: ``spark.sql`` runs a statement at once.

>>> from sparkprov.errors import InvalidArgument
>>> try:
...     checked_request({"name": "by k", "sql": "SELECT 1"})
... except InvalidArgument as exc:
...     print(str(exc).split(":")[0])
invalid capture name 'by k'
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..plan.query_text import check_query
from ..store.catalog import check_name

TABLES_SHOWN = 200  # the session's tables and views listed beside the form


def checked_request(body: dict, spark=None) -> tuple[str, str, bool]:
    """The name, query and witnesses flag the page sent, checked."""
    name = check_name(body.get("name"))
    sql = check_query(body.get("sql"), spark)
    witnesses = body.get("witnesses", False)
    if not isinstance(witnesses, bool):
        raise InvalidArgument("witnesses is true or false")
    return name, sql, witnesses


def analysed(session, sql: str):
    """``sql`` (checked) as a DataFrame of ``session``'s, analysed (no job runs): what
    it names is there, or ``InvalidArgument`` says what is not."""
    from pyspark.errors import AnalysisException

    try:
        return session.spark.sql(sql)
    except AnalysisException as exc:
        raise InvalidArgument(f"query {sql!r}: {str(exc).splitlines()[0]}") from None


def capture_query(session, df, name: str, witnesses: bool) -> dict[str, Any]:
    """Capture ``df`` with ``session`` as ``name``: its version and size."""
    capture = session.capture(df, name=name, witnesses=witnesses)
    return {"name": capture.name, "version": capture.version, "rows": capture.output.count()}


def session_tables(session) -> list[str]:
    """The tables and views the session's queries can read (temporary ones first)."""
    tables = session.spark.catalog.listTables()
    ordered = sorted(tables, key=lambda t: (not t.isTemporary, t.name))
    return [t.name if t.isTemporary or not t.database else f"{t.database}.{t.name}" for t in ordered][:TABLES_SHOWN]
