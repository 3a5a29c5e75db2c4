"""A database that is down or refuses the login: one log line per change, a bounded back-off."""

from __future__ import annotations

import logging
import subprocess
import sys

import psycopg
import pytest

from mcp_suite.problems import DatabaseUnavailableError
from mcp_suite.tools.sql.engine.availability import Availability, State, login_refused
from mcp_suite.tools.sql.engine.role_audit.connect import connection_failure
from tests.support.fakes import Clock

DOWN = psycopg.OperationalError(
    'connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused'
)
REFUSED = psycopg.OperationalError(
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
    'FATAL:  password authentication failed for user "reader"'
)
FULL = psycopg.OperationalError(
    'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
    "FATAL:  sorry, too many clients already"
)


def test_a_refused_login_is_told_apart_from_a_database_that_is_down_or_full() -> None:
    assert login_refused(REFUSED)
    assert not login_refused(DOWN)
    assert not login_refused(FULL)  # it passes by itself


def test_after_the_second_failure_calls_fail_at_once_for_a_doubling_bounded_back_off() -> None:
    clock = Clock(now=100.0)
    availability = Availability(max_backoff_s=3.0, clock=clock)
    availability.check()  # available: no error
    waits = []
    for _ in range(5):
        problem = availability.failed(DOWN)
        waits.append(problem.metadata["retry_after_s"])
        if waits[-1]:
            with pytest.raises(DatabaseUnavailableError):
                availability.check()  # inside the back-off: refused without an attempt
        clock.now += waits[-1]
        availability.check()  # the back-off is over: the next call may try
    assert waits == [0.0, 0.5, 1.0, 2.0, 3.0]  # the first retry is at once; then doubling, bounded
    availability.succeeded()
    assert availability.state is State.AVAILABLE
    assert availability.failed(DOWN).metadata["retry_after_s"] == 0.0  # a success resets it


def test_one_log_line_per_change_of_state_never_one_per_call(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    availability = Availability(max_backoff_s=1.0, clock=Clock(now=100.0))
    for _ in range(3):
        problem = availability.failed(REFUSED, at_start=True)
    assert problem.metadata == {"retryable": False}
    availability.check()  # a failure at start-up starts no back-off: the first call tries
    assert problem.jsonrpc_code == -32603
    availability.failed(DOWN)
    availability.failed(DOWN)
    availability.succeeded()
    availability.succeeded()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "the database of MCP_SQL_DSN is refusing the login at start-up" in lines[0]
    assert "password authentication failed" in lines[0]
    assert "the database of MCP_SQL_DSN is unreachable (" in lines[1]
    assert lines[2] == "read_only_sql: the database is available again"
    assert not [r for r in caplog.records if r.exc_info]


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_suite"],
        env={"PATH": "/usr/bin:/bin", "MCP_SQL_CONNECT_TIMEOUT_S": "2", **env},
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_an_unreachable_database_at_start_up_is_fatal_with_exit_69_when_required() -> None:
    dsn = "host=127.0.0.1 port=1 user=reader password=Zebra-Quokka dbname=docs"
    required = _start({"MCP_SQL_DSN": dsn, "MCP_SQL_REQUIRE_DATABASE": "true"})
    assert required.returncode == 69, required.stderr
    assert b"MCP_SQL_REQUIRE_DATABASE" in required.stderr
    assert b"no connection to the database of MCP_SQL_DSN (" in required.stderr
    assert b"Zebra" not in required.stderr
    assert required.stdout == b""
    served = _start({"MCP_SQL_DSN": dsn})  # not required: it serves (and stops at EOF)
    assert served.returncode == 0, served.stderr
    assert b"the database of MCP_SQL_DSN is unreachable at start-up" in served.stderr


def test_the_operator_is_told_which_setting_and_which_host_failed_but_not_the_host() -> None:
    # A primary and its replica in one DSN (docs/operations/deployments.md), both down: the log
    # names the setting and each host by its place in the DSN's list, never its name or port.
    dsn = "host=127.0.0.1,127.0.0.2 port=1,2 user=reader password=Zebra-Quokka dbname=docs"
    served = _start({"MCP_SQL_DSN": dsn})
    assert served.returncode == 0, served.stderr
    (line,) = [line for line in served.stderr.decode().splitlines() if "unreachable" in line]
    assert "the database of MCP_SQL_DSN is unreachable at start-up" in line
    assert "host 1 of 2: connection failed" in line
    assert "host 2 of 2: connection failed" in line
    for part in ("127.0.0", "port 1", "port 2", "reader", "docs", "Zebra"):
        assert part not in line


def test_each_host_of_a_multi_host_dsn_is_named_by_its_place_in_the_list() -> None:
    both = psycopg.OperationalError(
        'connection failed: connection to server at "10.0.0.2", port 5433 failed: Connection refused\n'
        "Multiple connection attempts failed. All failures were:\n"
        "- host: 'db1.internal', port: '5432', hostaddr: '10.0.0.1': connection failed: connection "
        'to server at "10.0.0.1", port 5432 failed: FATAL:  password authentication failed for user "r"\n'
        "- host: 'db2.internal', port: '5433', hostaddr: '10.0.0.2': connection failed: connection "
        'to server at "10.0.0.2", port 5433 failed: Connection refused'
    )
    assert connection_failure(both) == (
        'host 1 of 2: connection failed: connection to server at "…", port … failed: FATAL:  '
        'password authentication failed for user "…"; '
        'host 2 of 2: connection failed: connection to server at "…", port … failed: Connection refused'
    )
    assert login_refused(both)  # one host answered and refused the role: not merely down
    assert connection_failure(DOWN) == (  # one host: its reason alone, as before
        'connection failed: connection to server at "…", port … failed: Connection refused'
    )
