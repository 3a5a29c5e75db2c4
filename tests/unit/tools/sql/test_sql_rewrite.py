"""The outer LIMIT at its edges: what counts as the caller's literal, and the text that will run is
the caller's statement, names and positions kept, comments blanked out, inside the outer LIMIT."""

from __future__ import annotations

import pytest

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.policy import vet_sql
from mcp_suite.tools.sql.engine.policy.postgres_walk import check_postgres
from mcp_suite.tools.sql.engine.policy.rewrite import check_wrapped, literal_limit, wrap


@pytest.mark.parametrize(
    ("sql", "literal"),
    [
        ("SELECT 1 LIMIT 5", 5),
        ("SELECT 1 LIMIT 0", 0),  # PostgreSQL writes the integer 0 as an empty `ival`
        ("SELECT 1 LIMIT 5 OFFSET 2", 5),
        ("SELECT 1 FETCH FIRST 5 ROWS ONLY", 5),
        ("SELECT 1 LIMIT '5'", None),
        ("SELECT 1 LIMIT 2 + 3", None),
        ("SELECT 1 LIMIT NULL", None),
        ("SELECT 1 LIMIT ALL", None),
        ("SELECT 1 ORDER BY 1 FETCH FIRST 5 ROWS WITH TIES", None),
        ("SELECT 1", None),
    ],
)
def test_only_a_plain_integer_is_the_caller_s_literal_limit(sql: str, literal: int | None) -> None:
    assert literal_limit(check_postgres(sql, executed=False).root) == literal


@pytest.mark.parametrize(
    ("sql", "executed"),
    [
        ('SELECT "MyFunc"(1)', 'SELECT "MyFunc"(1)'),  # a quoted name keeps its case
        # no hint survives
        (
            "SELECT 1 /*+ SeqScan(t) */ FROM t -- note",
            "SELECT 1 " + " " * len("/*+ SeqScan(t) */") + " FROM t",
        ),
        ("/* a */ SELECT 1 /* é */ AS x;", "SELECT 1 " + " " * len("/* é */".encode()) + " AS x"),
        ("SELECT 1 -- a\nFROM t", "SELECT 1     \nFROM t"),
        ("SELECT log10(2.0), interval 'P1D', to_hex(255)", "SELECT log10(2.0), interval 'P1D', to_hex(255)"),
    ],
)
def test_the_text_that_runs_is_the_caller_s_statement_without_comments(sql: str, executed: str) -> None:
    assert vet_sql(sql, max_rows=10).sql == f"SELECT * FROM (\n{executed}\n) AS q LIMIT 11"


@pytest.mark.parametrize(
    ("sql", "limit"),
    [
        ("SELECT 1 LIMIT 3", 3),
        ("SELECT 1 LIMIT 500", 11),
        ("SELECT 1 ORDER BY 1 FETCH FIRST 3 ROWS WITH TIES", 11),  # ties may bring more than 3
        ("SELECT 1 LIMIT 2 + 3", 11),
    ],
)
def test_the_answer_s_bound_is_the_caller_s_literal_limit_or_the_cap(sql: str, limit: int) -> None:
    assert vet_sql(sql, max_rows=10).limit == limit


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 0x1F AS n",  # sqlglot: a bit string
        "SELECT 1_000",  # sqlglot: 1 AS _000
        "SELECT 0o17",
        'SELECT U&"\\0073lug" FROM docs.pages',
        "SELECT interval '1' day AS i",
        "SELECT 1 FROM docs.pages\u2028",  # U+2028: part of a name for PostgreSQL, whitespace for sqlglot
    ],
)
def test_a_text_sqlglot_reads_otherwise_runs_as_postgresql_reads_it(sql: str) -> None:
    assert vet_sql(sql, max_rows=10).sql == f"SELECT * FROM (\n{sql}\n) AS q LIMIT 11"


def test_a_node_of_another_kind_in_the_text_that_runs_is_no_proof() -> None:
    # PostgreSQL's reading of a text never gives one field two kinds of value; the proof does not
    # assume it: a list where the caller's tree holds a string refuses.
    sql = "SELECT 1 AS one"
    executed, shift = wrap(sql, 11)
    original = check_postgres(sql, executed=False).root
    final = check_postgres(executed, executed=True).root
    inner = final["fromClause"][0]["RangeSubselect"]["subquery"]["SelectStmt"]
    inner["targetList"][0]["ResTarget"]["name"] = ["one"]
    with pytest.raises(ProblemError) as caught:
        check_wrapped(final, original, 11, shift)
    assert caught.value.metadata == {"rule": "limit-rewrite"}
