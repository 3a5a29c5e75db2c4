"""A query's own error is not an outage: only a failure of the connection itself makes the database
`database-unavailable` and logs "unreachable" (docs/tools/read_only_sql.md, "Errors")."""

from __future__ import annotations

import logging

import pytest

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.tools.read_only_sql.executor import Executor
from mcp_suite.tools.read_only_sql.ticket import CallTicket

pytestmark = pytest.mark.pg


def test_lastval_before_nextval_is_the_query_s_error_and_no_outage_is_logged(
    reader_executor: Executor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(3):  # each call alike: no "unreachable", then "available again"
        with pytest.raises(InvalidArgumentsError) as raised:
            reader_executor.run("SELECT lastval()", max_rows=1, ticket=CallTicket())
        assert raised.value.metadata == {"sqlstate": "55000"}
        assert "lastval is not yet defined" in raised.value.detail
    assert reader_executor.run("SELECT 1", max_rows=1, ticket=CallTicket()).rows == [[1]]
    assert "unreachable" not in caplog.text
    assert "available again" not in caplog.text
