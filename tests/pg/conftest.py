"""Fixtures for the read_only_sql tests against the real throwaway cluster (tests.pgfixtures)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from mcp_suite.devdb.cluster import Cluster
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.read_only_sql.executor import Executor

WRITE_FUNCTION = "public.mcp_test_write"
ENUM_TYPE = "public.mcp_test_mood"
DOMAIN_TYPE = "public.mcp_test_positive"


def sql_settings(dsn: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "sql_dsn": SecretStr(dsn),
        "sql_pool_min_size": 1,
        "sql_pool_max_size": 2,
        "sql_connect_timeout_s": 2.0,
        "sql_pool_wait_s": 0.5,
        "metrics_enabled": False,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session")
def pg_helpers(demo_cluster: Cluster) -> Iterator[None]:
    """Objects some tests need, made by the superuser in `public` and dropped afterwards: a
    SECURITY INVOKER function that INSERTs (a write hidden behind a SELECT), an enum and a domain."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {WRITE_FUNCTION}() RETURNS integer LANGUAGE sql AS $$"
            " INSERT INTO docs.editors VALUES ('e-x', 'x@example.com') RETURNING 1 $$"
        )
        conn.execute(f"CREATE TYPE {ENUM_TYPE} AS ENUM ('sad', 'ok', 'happy')")
        conn.execute(f"CREATE DOMAIN {DOMAIN_TYPE} AS integer CHECK (VALUE > 0)")
    try:
        yield
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP FUNCTION IF EXISTS {WRITE_FUNCTION}()")
            conn.execute(f"DROP TYPE IF EXISTS {ENUM_TYPE}")
            conn.execute(f"DROP DOMAIN IF EXISTS {DOMAIN_TYPE}")


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        yield conn


def open_executor(dsn: str, **overrides: Any) -> Executor:
    executor = Executor(sql_settings(dsn, **overrides), dsn)
    executor.open()
    executor.mark_audited()  # these tests bypass the start-up audit on purpose
    return executor


@pytest.fixture
def reader_executor(demo_cluster: Cluster, pg_helpers: None) -> Iterator[Executor]:
    executor = open_executor(demo_cluster.reader_dsn)
    with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as conn:
        executor.load_type_names(conn)
    try:
        yield executor
    finally:
        executor.close()
