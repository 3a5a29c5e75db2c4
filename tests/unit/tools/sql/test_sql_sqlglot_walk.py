"""The sqlglot walk at its edges: the bounds on sqlglot's token stream exactly (also after brackets
close), the verdict of a class the walk meets for the first time, a function sqlglot knows whose
name is denied, a column named like a denied function, and the text sqlglot is given."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlglot

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.denylist import denied_reason
from mcp_suite.tools.sql.engine.policy import sqlglot_walk, vet_sql

TOO_DEEP = {"rule": "too-deep"}


def _verdict(sql: str) -> Any:
    """The text that runs for `sql`, or the metadata of its refusal."""
    try:
        return vet_sql(sql, max_rows=10).sql
    except ProblemError as problem:
        return problem.metadata


def _parens(outer: int, inner: int) -> str:
    """`outer` parentheses around `(1) + ` and `inner` more around a 1: at most outer + inner deep."""
    return "SELECT " + "(" * outer + "(1) + " + "(" * inner + "1" + ")" * (inner + outer)


@pytest.mark.parametrize(
    ("sql", "runs"),
    [
        ("SELECT " + "(" * 48 + "1" + ")" * 48, True),  # the bound on brackets itself
        (_parens(30, 18), True),  # 48 deep again, after a bracket closed
        (_parens(30, 19), False),  # 49
        ("SELECT ARRAY[ARRAY[ARRAY[1], ARRAY[ARRAY[1]]]]", True),  # 4 square brackets deep
        ("SELECT ARRAY[ARRAY[ARRAY[1], ARRAY[ARRAY[ARRAY[1]]]]]", False),  # 5, after one closed
        ("SELECT a[1][2][3][4][5][6] FROM t", True),  # the bound on a chain of subscripts
        ("SELECT a[1][2][3][4][5][6][7] FROM t", False),
        ("SELECT " + ", ".join(["a[1]"] * 64) + " FROM t", True),  # the bound on subscripts
        ("SELECT " + ", ".join(["a[1]"] * 65) + " FROM t", False),
    ],
)
def test_the_bounds_on_sqlglot_s_tokens_hold_exactly(sql: str, runs: bool) -> None:
    verdict = _verdict(sql)
    if runs:
        assert verdict == f"SELECT * FROM (\n{sql}\n) AS q LIMIT 11"
    else:
        assert verdict == TOO_DEEP


# (the query, the rule the walk refuses it with, or None)
FIRST_SIGHT = [
    ("SELECT a FROM t", None),  # no call
    ("SELECT count(a), lower(b) FROM t", None),  # functions sqlglot knows, not denied
    ("SELECT pg_sleep(1)", "denied-function"),  # a function sqlglot does not know
    ("SELECT my_func(1)", None),
    ("SELECT 1 INTO t", "select-into"),
    ("SELECT $1", "bind-parameter"),
]


@pytest.fixture
def fresh_verdicts() -> Iterator[None]:
    """Every sqlglot class unseen, before and after (a test's own denylist leaves no verdict behind)."""
    sqlglot_walk.forget_verdicts()
    yield
    sqlglot_walk.forget_verdicts()


@pytest.mark.usefixtures("fresh_verdicts")
def test_a_class_met_for_the_first_time_gets_the_same_verdict_as_later() -> None:
    for _ in range(2):
        for sql, rule in FIRST_SIGHT:
            tree = sqlglot.parse_one(sql, read="postgres")
            if rule is None:
                sqlglot_walk.check_sqlglot(tree)
                continue
            with pytest.raises(ProblemError) as caught:
                sqlglot_walk.check_sqlglot(tree)
            assert caught.value.metadata["rule"] == rule


@pytest.mark.usefixtures("fresh_verdicts")
def test_a_function_sqlglot_knows_by_a_denied_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # No function sqlglot knows has a denied name today: a denylist that also denies lower() stands
    # in for the sqlglot version that gives one of them a class of its own.
    monkeypatch.setattr(
        sqlglot_walk,
        "denied_reason",
        lambda name: "a test denies it" if name.casefold() == "lower" else denied_reason(name),
    )
    with pytest.raises(ProblemError) as caught:
        sqlglot_walk.check_sqlglot(sqlglot.parse_one("SELECT lower(a) FROM t", read="postgres"))
    assert caught.value.metadata == {"rule": "denied-function", "function": "LOWER"}
    assert (
        caught.value.detail
        == "The function LOWER() is not allowed: a test denies it. Remove it from the query."
    )


def test_a_column_named_like_a_denied_function_is_no_call() -> None:
    sql = "SELECT lower(pg_sleep) FROM t"
    assert _verdict(sql) == f"SELECT * FROM (\n{sql}\n) AS q LIMIT 11"


def test_string_literals_continued_across_a_line_comment_are_one_literal() -> None:
    # sqlglot reads one literal (else it would see an alias); the text that runs is the caller's
    assert sqlglot_walk.merge_string_continuations(sqlglot_walk.without_comments("SELECT 'a' -- c\n'b'")) == (
        "SELECT 'ab'\n"
    )
    # PostgreSQL lexes the two literals and the comment between them as one token: kept as written
    assert _verdict("SELECT 'a' -- c\n'b'") == "SELECT * FROM (\nSELECT 'a' -- c\n'b'\n) AS q LIMIT 11"


def test_a_comment_after_the_last_semicolon_is_no_second_statement() -> None:
    assert sqlglot_walk.parse_sqlglot("SELECT 1; -- c").sql(dialect="postgres") == "SELECT 1"
