"""Regression: the executor pins `standard_conforming_strings=on` for its sessions.

The policy reads string literals as standard SQL does. On a server or database configured with
`standard_conforming_strings = off`, PostgreSQL would read a backslash inside a literal as an
escape, so `'x\\' , pg_sleep(10) --'` would end the literal early and run code the policy saw as
text. The executor's sessions must not inherit such a setting.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.executor import CallTicket
from tests.support.pg import open_executor, run_unvetted

pytestmark = pytest.mark.pg


@pytest.fixture
def database_without_standard_strings(demo_cluster: Cluster) -> Iterator[None]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{demo_cluster.dbname}" SET standard_conforming_strings = off')
    try:
        yield
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{demo_cluster.dbname}" RESET standard_conforming_strings')


def test_the_database_default_really_is_off(
    demo_cluster: Cluster, database_without_standard_strings: None
) -> None:
    with psycopg.connect(demo_cluster.reader_dsn) as conn:
        row = conn.execute("SHOW standard_conforming_strings").fetchone()
    assert row == ("off",)


def test_executor_sessions_read_backslashes_as_plain_characters(
    demo_cluster: Cluster, database_without_standard_strings: None
) -> None:
    executor = open_executor(demo_cluster.reader_dsn)
    try:
        result = run_unvetted(
            executor,
            "SELECT current_setting('standard_conforming_strings') AS s, 'a\\b' AS v",
            max_rows=1,
            ticket=CallTicket(),
        )
    finally:
        executor.close()
    assert result.rows == [["on", "a\\b"]]
