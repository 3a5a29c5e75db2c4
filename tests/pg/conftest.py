"""Fixtures for the read_only_sql tests against the real throwaway cluster (tests.pgfixtures)."""

from __future__ import annotations

import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import READER_USER
from mcp_suite.tools.sql.engine.executor import Executor
from tests.support.corpus import create_corpus, drop_corpus
from tests.support.pg import (
    DOMAIN_TYPE,
    ENUM_TYPE,
    PROBE_PASSWORD,
    PROBE_ROLE,
    WRITE_FUNCTION,
    open_executor,
)
from tests.support.reach import drop_hazards


@pytest.fixture(scope="session")
def pg_helpers(demo_cluster: Cluster) -> Iterator[None]:
    """Objects some tests need, made by the superuser in `public` and dropped afterwards: a
    SECURITY INVOKER function that INSERTs (a write hidden behind a SELECT), an enum and a domain."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {WRITE_FUNCTION}() RETURNS integer LANGUAGE sql AS $$"
            " INSERT INTO docs.editors VALUES ('e-x', 'x@example.com') RETURNING 1 $$"
        )
        # The demo's default privileges keep new functions from PUBLIC; these tests need the write
        # to reach the read-only transaction.
        conn.execute(f"GRANT EXECUTE ON FUNCTION {WRITE_FUNCTION}() TO PUBLIC")
        conn.execute(f"CREATE TYPE {ENUM_TYPE} AS ENUM ('sad', 'ok', 'happy')")
        conn.execute(f"CREATE DOMAIN {DOMAIN_TYPE} AS integer CHECK (VALUE > 0)")
    try:
        yield
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP FUNCTION IF EXISTS {WRITE_FUNCTION}()")
            conn.execute(f"DROP TYPE IF EXISTS {ENUM_TYPE}")
            conn.execute(f"DROP DOMAIN IF EXISTS {DOMAIN_TYPE}")


@pytest.fixture(scope="module")
def corpus(demo_cluster: Cluster) -> Iterator[None]:
    """The everyday-queries corpus (tests.support.corpus): schema `corpus` and its extensions, made by
    the superuser and readable by the reader role, for one module; dropped afterwards, so the other
    modules see the cluster as seeded."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        create_corpus(conn, READER_USER)
    try:
        yield
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            drop_corpus(conn)


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def reader_executor(demo_cluster: Cluster, pg_helpers: None) -> Iterator[Executor]:
    executor = open_executor(demo_cluster.reader_dsn)
    with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as conn:
        executor.load_type_names(conn)
    try:
        yield executor
    finally:
        executor.close()


# --- a probe role: set up like mcp_reader; a test gives it exactly one capability more ----------------
# What probe tests may create besides grants to the role (DROP OWNED BY takes the role's own things).
_PROBE_LEFTOVERS = (
    "DROP FUNCTION IF EXISTS docs.mcp_probe_definer()",
    "DROP SEQUENCE IF EXISTS docs.mcp_probe_seq",
    "DROP EXTENSION IF EXISTS dblink",
    "DROP FOREIGN DATA WRAPPER IF EXISTS mcp_probe_fdw CASCADE",
    "SELECT lo_unlink(oid) FROM pg_catalog.pg_largeobject_metadata WHERE oid = 424242",
    "DROP ROLE IF EXISTS mcp_audit_group",
)


def _drop_probe(conn: psycopg.Connection[Any]) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (PROBE_ROLE,)).fetchone()
    if exists:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(PROBE_ROLE)))
    for statement in _PROBE_LEFTOVERS:
        conn.execute(statement.encode())
    if exists:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(PROBE_ROLE)))


@pytest.fixture
def probe(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    """A login role set up like mcp_reader (CONNECT, USAGE on docs, SELECT on docs.pages, a
    temp_file_limit); yields the superuser's connection, which drops it all afterwards."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        _drop_probe(conn)
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOINHERIT PASSWORD {}").format(
                sql.Identifier(PROBE_ROLE), sql.Literal(PROBE_PASSWORD)
            )
        )
        for statement in (
            "GRANT CONNECT ON DATABASE mcp_demo TO {role}",
            "GRANT USAGE ON SCHEMA docs TO {role}",
            "GRANT SELECT ON docs.pages TO {role}",
            "ALTER ROLE {role} SET temp_file_limit = '64MB'",
        ):
            conn.execute(statement.format(role=PROBE_ROLE).encode())
        try:
            yield conn
        finally:
            _drop_probe(conn)


# --- witnesses: a file a program run by the database server would create -------------------------
@pytest.fixture
def witness_dir() -> Iterator[Path]:
    """A directory the database server's own account can write to (it runs COPY ... TO PROGRAM)."""
    path = Path(tempfile.mkdtemp(prefix="mcp-witness-", dir="/tmp"))
    path.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def hazards(
    probe: psycopg.Connection[Any], witness_dir: Path
) -> Iterator[tuple[psycopg.Connection[Any], Path]]:
    """The superuser's connection (the probe role exists) and a witness path no program has touched;
    every hazard of tests.support.reach is dropped afterwards."""
    try:
        yield probe, witness_dir / "witness"
    finally:
        drop_hazards(probe)
