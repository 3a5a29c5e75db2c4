"""The outer LIMIT's rewrite at its edges: what counts as the caller's literal, the text that will
run keeps the caller's names and drops every comment, and the proof refuses a root without
the LIMIT it expects."""

from __future__ import annotations

import pytest
from sqlglot import exp

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql_engine.policy import vet_sql
from mcp_suite.tools.sql_engine.policy.rewrite import check_postgres_limit, literal_limit


def test_a_limit_clause_with_more_than_its_count_is_not_a_plain_literal() -> None:
    five = exp.Literal.number(5)
    assert literal_limit(exp.Limit(expression=five.copy())) == 5
    assert literal_limit(exp.Limit(expression=five.copy(), offset=exp.Literal.number(2))) is None
    assert literal_limit(exp.Limit(expression=exp.Literal.string("5"))) is None


@pytest.mark.parametrize(
    ("sql", "executed"),
    [
        ('SELECT "MyFunc"(1)', 'SELECT "MyFunc"(1) LIMIT 11'),  # a quoted name keeps its case
        ("SELECT 1 /*+ SeqScan(t) */ FROM t -- note", "SELECT 1 FROM t LIMIT 11"),  # no hint survives
        ("/* a */ SELECT 1 /* b */ AS x", "SELECT 1 AS x LIMIT 11"),
    ],
)
def test_the_text_that_runs_keeps_the_callers_names_and_no_comment(sql: str, executed: str) -> None:
    assert vet_sql(sql, max_rows=10).sql == executed


def test_limit_null_at_the_root_is_no_proof_of_limit_0() -> None:
    null_limit = {"limitOption": "LIMIT_OPTION_COUNT", "limitCount": {"A_Const": {"isnull": True}}}
    with pytest.raises(ProblemError):
        check_postgres_limit(null_limit, 0, 10)
    zero = {"limitOption": "LIMIT_OPTION_COUNT", "limitCount": {"A_Const": {"ival": {}}}}
    check_postgres_limit(zero, 0, 10)  # PostgreSQL writes the integer 0 as an empty `ival`
