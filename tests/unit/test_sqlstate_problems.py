"""Each SQLSTATE class maps to the caller's problem documented in docs/tools/read_only_sql.md."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors

from mcp_suite.problems import (
    AccessDeniedError,
    ConflictError,
    ExecutionTimeoutError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    ResourceLimitError,
)
from mcp_suite.tools.read_only_sql.executor import problem_from_sqlstate


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("57014", ExecutionTimeoutError),
        ("55P03", ExecutionTimeoutError),
        ("53400", ResourceLimitError),
        ("40001", ConflictError),
        ("40P01", ConflictError),
        ("25006", QueryViolationError),
        ("25001", QueryViolationError),
        ("42501", AccessDeniedError),
        ("42P01", InvalidArgumentsError),
        ("22012", InvalidArgumentsError),
        ("0A000", InvalidArgumentsError),
        ("54001", InvalidArgumentsError),
        ("21000", InvalidArgumentsError),
    ],
)
def test_a_sqlstate_becomes_the_callers_problem(state: str, problem: type[ProblemError]) -> None:
    found = problem_from_sqlstate(errors.lookup(state)("server text, never shown"), timeout_ms=1234)
    assert type(found) is problem
    assert found.metadata["sqlstate"] == state
    assert "server text" not in str(found)


def test_the_timeout_names_the_statement_timeout_and_a_conflict_is_retryable() -> None:
    timeout = problem_from_sqlstate(errors.lookup("57014")(), timeout_ms=1234)
    assert timeout is not None
    assert "(1234 ms)" in str(timeout)
    assert timeout.metadata["statement_timeout_ms"] == 1234
    conflict = problem_from_sqlstate(errors.lookup("40P01")(), timeout_ms=1)
    assert conflict is not None
    assert conflict.metadata["retryable"] is True


def test_only_unknown_names_get_the_schema_hint() -> None:
    unknown = problem_from_sqlstate(errors.lookup("42703")(), timeout_ms=1)
    syntax = problem_from_sqlstate(errors.lookup("42601")(), timeout_ms=1)
    assert unknown is not None
    assert syntax is not None
    assert "sql_schema lists the tables" in str(unknown)
    assert "sql_schema" not in str(syntax)


@pytest.mark.parametrize("state", ["08006", "53300", "XX000", "57P01"])
def test_server_and_connection_failures_are_not_the_callers_to_fix(state: str) -> None:
    assert problem_from_sqlstate(errors.lookup(state)(), timeout_ms=1) is None


def test_an_error_without_a_sqlstate_is_not_the_callers_to_fix() -> None:
    assert problem_from_sqlstate(psycopg.OperationalError("connection lost"), timeout_ms=1) is None
