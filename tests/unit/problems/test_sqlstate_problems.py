"""Each SQLSTATE class maps to the caller's problem documented in docs/tools/read_only_sql.md."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors

from mcp_suite.problems import (
    AccessDeniedError,
    ConflictError,
    DatabaseUnavailableError,
    ExecutionTimeoutError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    ResourceLimitError,
)
from mcp_suite.tools.sql.engine.executor import problem_from_sqlstate
from mcp_suite.tools.sql.engine.sqlstate import classify


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("57014", ExecutionTimeoutError),
        ("55P03", ExecutionTimeoutError),
        ("53400", ResourceLimitError),
        ("53200", ResourceLimitError),
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


@pytest.mark.parametrize("state", ["08006", "53300", "XX000"])
def test_server_and_connection_failures_are_not_the_callers_to_fix(state: str) -> None:
    assert problem_from_sqlstate(errors.lookup(state)(), timeout_ms=1) is None


# What a call that failed with each SQLSTATE class (and a few single conditions) is answered, on a
# connection that is still alive: a problem's slug, "connection" (only class 08: unavailability)
# or "server" (an internal error with an incident id). Every class psycopg knows is listed.
CLASSES = {
    "02000": "server",
    "03000": "server",
    "08000": "connection",
    "08006": "connection",
    "09000": "server",
    "0A000": "validation-error",
    "0B000": "server",
    "0F000": "server",
    "0L000": "server",
    "0P000": "server",
    "0Z000": "server",
    "20000": "server",
    "21000": "validation-error",
    "22000": "validation-error",
    "23000": "server",
    "24000": "server",
    "25000": "query-violation",
    "26000": "server",
    "27000": "server",
    "28000": "server",
    "2B000": "server",
    "2D000": "server",
    "2F000": "server",
    "34000": "server",
    "38000": "server",
    "39000": "server",
    "3B000": "server",
    "3D000": "server",
    "3F000": "server",
    "40000": "server",
    "40001": "conflict",  # also a recovery conflict on a hot standby
    "40P01": "conflict",
    "42000": "validation-error",
    "42501": "access-denied",
    "44000": "server",
    "53000": "server",
    "53200": "resource-limit",  # out of memory: the query asked for more than the host gave
    "53400": "resource-limit",
    "54000": "validation-error",
    "55000": "validation-error",  # SELECT lastval() before any nextval()
    "55P03": "execution-timeout",
    "57000": "database-unavailable",  # the session was ended: named, not logged as an outage
    "57014": "execution-timeout",
    "57P01": "database-unavailable",  # pg_terminate_backend, a fast shutdown
    "58000": "server",
    "72000": "server",
    "F0000": "server",
    "HV000": "server",
    "P0000": "server",
    "XX000": "server",
}


def answer(exc: psycopg.Error, *, broken: bool) -> str:
    found = classify(exc, broken=broken, timeout_ms=1)
    return found.slug if isinstance(found, ProblemError) else found.value


def test_the_table_lists_every_sqlstate_class_psycopg_knows() -> None:
    known = {
        cls.sqlstate
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, psycopg.Error) and str(cls.sqlstate).endswith("000")
    }
    assert known <= set(CLASSES)


@pytest.mark.parametrize(("state", "expected"), CLASSES.items())
def test_only_a_failure_of_the_connection_itself_is_unavailability(state: str, expected: str) -> None:
    assert answer(errors.lookup(state)("text"), broken=False) == expected


@pytest.mark.parametrize(("state", "expected"), CLASSES.items())
def test_on_a_broken_connection_a_problem_stays_and_the_rest_is_the_connection_s(
    state: str, expected: str
) -> None:
    is_problem = expected not in {"server", "connection"}
    assert answer(errors.lookup(state)("text"), broken=True) == (expected if is_problem else "connection")


def test_an_error_without_a_sqlstate_is_the_connection_s() -> None:
    assert answer(psycopg.OperationalError("server closed the connection"), broken=False) == "connection"


def test_a_terminated_session_is_named_and_not_retried_by_the_server() -> None:
    found = classify(errors.lookup("57P01")(), broken=True, timeout_ms=1)
    assert isinstance(found, DatabaseUnavailableError)
    assert found.metadata == {"sqlstate": "57P01", "retryable": True}
    assert "ended the session" in found.detail


def test_an_error_without_a_sqlstate_is_not_the_callers_to_fix() -> None:
    assert problem_from_sqlstate(psycopg.OperationalError("connection lost"), timeout_ms=1) is None
