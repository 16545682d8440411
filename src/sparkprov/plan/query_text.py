"""Queries users pass as text (the page's capture form): one Spark SQL query, never a
statement.

``spark.sql`` runs a statement (``DROP TABLE``, ``INSERT``, ``SET``...) as soon as it
is called, before any capture could look at it, so text from the page is checked first:
with sqlglot's Spark dialect, it must be exactly one query (a ``SELECT``, a set
operation, a ``WITH`` over them) with no statement separator; then, where a session is
at hand, Spark's own parser must read it as a query plan and not a command.

>>> check_query("SELECT k, count(*) FROM t GROUP BY k")
'SELECT k, count(*) FROM t GROUP BY k'
>>> check_query("SELECT 1; DROP TABLE t")
Traceback (most recent call last):
...
sparkprov.errors.InvalidArgument: query 'SELECT 1; DROP TABLE t' is not one query: ';' ends a statement
>>> check_query("INSERT INTO t SELECT 1")
Traceback (most recent call last):
...
sparkprov.errors.InvalidArgument: query 'INSERT INTO t SELECT 1' is not a query (found a statement, INSERT)
"""

from __future__ import annotations

from ..errors import InvalidArgument

# Spark's parsed plans that run something rather than describe a query
_COMMANDS = (
    "org.apache.spark.sql.catalyst.plans.logical.Command",
    "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement",
)


def check_query(text: object, spark=None) -> str:
    """``text`` unchanged when it is one Spark SQL query (read by ``spark``'s parser
    too, when given); ``InvalidArgument`` otherwise, saying why."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError
    from sqlglot.tokens import TokenType

    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument("a query is Spark SQL text, such as SELECT k, count(*) FROM t GROUP BY k")
    dialect = sqlglot.Dialect.get_or_raise("spark")
    try:
        tokens = dialect.tokenize(text)
    except TokenError:
        raise InvalidArgument(f"cannot parse query {text!r}: a quote, backquote or comment is not closed") from None
    if any(t.token_type == TokenType.SEMICOLON for t in tokens):
        raise InvalidArgument(f"query {text!r} is not one query: ';' ends a statement")
    try:
        trees = [t for t in dialect.parser().parse(tokens, text) if t is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise InvalidArgument(f"cannot parse query {text!r}: {first.get('description', 'not Spark SQL')}") from None
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        found = f"{len(trees)} statements" if len(trees) != 1 else f"a statement, {trees[0].key.upper()}"
        raise InvalidArgument(f"query {text!r} is not a query (found {found})")
    if spark is not None:
        _check_with_spark(spark, text)
    return text


def _check_with_spark(spark, text: str) -> None:
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except Py4JJavaError as exc:
        message = str(exc.java_exception.getMessage()).splitlines()[0]
        raise InvalidArgument(f"Spark cannot parse query {text!r}: {message}") from None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in _COMMANDS:
        if jvm.java.lang.Class.forName(name, False, loader).isInstance(plan):
            raise InvalidArgument(f"query {text!r} is not a query: Spark reads it as {plan.nodeName()}")
