"""Predicates users pass as text: one parser decides what is a predicate.

Traces take Spark SQL predicates (``cap.backward("region = 'EU'")``, ``sparkprov trace
--where``) and hand them to Spark or, in the embedded engine, to DuckDB. The two would
disagree on text that is not one expression: DuckDB ran the first of several
statements, Spark refused them. So every predicate is parsed here first, with sqlglot's
Spark dialect, before either engine sees it: it must be exactly one expression, with no
statement separator and no statement (``SELECT``, ``DROP``...) in its place. Nothing a
user types is ever run as a statement.

>>> check_predicate("region = 'EU'")
"region = 'EU'"
>>> check_predicate("1=1; DROP TABLE x")
Traceback (most recent call last):
...
sparkprov.errors.InvalidPredicate: predicate '1=1; DROP TABLE x' is not one expression: ';' ends a statement, ...
"""

from __future__ import annotations

from ..errors import InvalidPredicate


def check_predicate(text: object) -> str:
    """``text`` unchanged when it is one Spark SQL expression; ``InvalidPredicate``
    (a ``ValueError``) otherwise, saying why."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError
    from sqlglot.tokens import TokenType

    if not isinstance(text, str):
        raise InvalidPredicate(f"a predicate is a string of Spark SQL, not {type(text).__name__}")
    if not text.strip():
        raise InvalidPredicate("empty predicate")
    dialect = sqlglot.Dialect.get_or_raise("spark")
    try:
        tokens = dialect.tokenize(text)
    except TokenError:
        raise InvalidPredicate(
            f"cannot parse predicate {text!r}: a quote, backquote or comment is not closed"
        ) from None
    if any(t.token_type == TokenType.SEMICOLON for t in tokens):
        raise InvalidPredicate(
            f"predicate {text!r} is not one expression: ';' ends a statement, "
            "and a predicate is a single boolean expression"
        )
    try:
        trees = dialect.parser().parse(tokens, text)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" (near column {first['col']})" if first.get("col") else ""
        raise InvalidPredicate(
            f"cannot parse predicate {text!r}: {first.get('description', 'not Spark SQL')}{where}"
        ) from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1 or not isinstance(trees[0], exp.Condition):
        if len(trees) != 1:
            found = f"{len(trees)} statements"
        elif isinstance(trees[0], exp.Alias):  # "a = 1 b" reads as an alias
            found = f"text after the expression: {trees[0].alias!r}"
        else:
            found = f"a statement, {trees[0].key.upper()}"
        raise InvalidPredicate(f"predicate {text!r} is not one boolean expression (found {found})")
    return text
