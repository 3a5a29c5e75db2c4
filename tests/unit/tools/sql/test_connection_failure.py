"""The operator's log line for a failed connection keeps the reason and no part of the DSN."""

from __future__ import annotations

import psycopg
import pytest

from mcp_suite.tools.sql.engine.role_audit.connect import connection_failure


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            'connection failed: connection to server at "db.internal" (10.1.2.3), port 6543 failed:'
            ' FATAL:  password authentication failed for user "reader"',
            "password authentication failed for user",
        ),
        (
            'connection failed: connection to server at "db.internal" (2001:db8::7), port 6543 failed:'
            ' FATAL:  database "secretdb" does not exist',
            "does not exist",
        ),
        (
            'connection failed: connection to server on socket "/run/pg/.s.PGSQL.6543" failed:'
            " No such file or directory",
            "No such file or directory",
        ),
        ("failed to resolve host 'db.internal': [Errno -2] Name or service not known", "not known"),
    ],
)
def test_the_reason_stays_and_every_part_of_the_dsn_goes(message: str, reason: str) -> None:
    line = connection_failure(psycopg.OperationalError(message + "\nsecond line: reader db.internal"))
    assert reason in line
    for part in ("db.internal", "10.1.2.3", "2001:db8::7", "6543", '"reader"', "secretdb", "/run/pg"):
        assert part not in line


def test_an_error_without_a_message_is_named_by_its_type() -> None:
    assert connection_failure(psycopg.OperationalError("")) == "OperationalError"
