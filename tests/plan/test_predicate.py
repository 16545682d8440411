"""Predicates are one expression, refused alike by both engines and the command line."""

from __future__ import annotations

import pytest

import sparkprov as sp
from sparkprov.plan.predicate import check_predicate

from ..cli.test_main import sparkprov_cli

NOT_ONE = ["1=1; DROP TABLE x", "k = 'a';", "SELECT 1", "DROP TABLE x", "k = 'a' UNION SELECT 2", "k = 'a' b"]


@pytest.mark.parametrize("text", NOT_ONE)
def test_statements_and_trailing_text_are_refused(text):
    with pytest.raises(sp.InvalidPredicate, match="not one"):
        check_predicate(text)


def test_parse_errors_say_what_is_wrong():
    with pytest.raises(sp.InvalidPredicate) as unclosed:
        check_predicate("k = 'abc")
    assert str(unclosed.value) == 'cannot parse predicate "k = \'abc": a quote, backquote or comment is not closed'
    with pytest.raises(ValueError, match="empty predicate"):
        check_predicate("  ")
    # what Spark SQL predicates users write still passes
    for ok in ["`sum(v)` > 1000", "k IN (SELECT 1)", "a <=> NULL AND m['x'] = 1", "k = ';'", "v > 1 -- note"]:
        assert check_predicate(ok) == ok


@pytest.fixture
def sums(session, spark):
    df = session.source(spark.createDataFrame([("a", 1), ("a", 2), ("b", 5)], "k string, v int"), "numbers")
    return session.capture(df.groupBy("k").sum("v"), name="sums")


@pytest.mark.parametrize("engine", ["embedded", "spark"])
def test_both_engines_refuse_a_trailing_statement(sums, engine):
    for text in ["1=1; DROP TABLE x", "k = 'a' UNION SELECT 2"]:
        with pytest.raises(sp.InvalidPredicate):
            sums.backward(text, engine=engine)
        with pytest.raises(sp.InvalidPredicate):
            sums.forward("numbers", text, engine=engine)
        with pytest.raises(sp.InvalidPredicate):
            sums.backward([0], "numbers", where=text, engine=engine)
    assert sums.backward("k = 'a'", "numbers", engine=engine).count() == 2


def test_the_command_line_refuses_it_with_either_engine(sums):
    store = str(sums._session.store.root)
    for engine in ["embedded", "spark"]:
        where = "1=1; DROP TABLE x"
        done = sparkprov_cli("trace", "backward", "sums", "--where", where, "--store", store, "--engine", engine)
        assert done.returncode == 1 and "is not one expression" in done.stderr and "rows" not in done.stdout
