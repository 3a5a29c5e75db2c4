"""What one call can leave on its backend, and what a role's search_path can shadow.

A DBA's helper function (SECURITY INVOKER, so the audit has nothing to say about it) can leave state
that a ROLLBACK does not take back: a prepared statement and the random seed. The next call on the
same backend (a pool of one) must see neither. And a role whose search_path puts a schema before
`pg_catalog` must not get that schema's same-named aggregate for a plain `max(x)`: every call pins
`pg_catalog` first. The witness of code that must not run is a file the database server would touch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.policy import vet_sql
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.pg import PROBE_ROLE, open_executor, probe_dsn
from tests.support.reach import SHADOWING_SEARCH_PATH, drop_shadowing_max, make_shadowing_max

pytestmark = pytest.mark.pg


@pytest.fixture
def one_backend(demo_cluster: Cluster) -> Iterator[Executor]:
    """The reader's executor with a pool of exactly one connection: every call meets the same backend."""
    executor = open_executor(demo_cluster.reader_dsn, sql_pool_min_size=1, sql_pool_max_size=1)
    try:
        yield executor
    finally:
        executor.close()


@pytest.fixture
def helper(admin: psycopg.Connection[Any]) -> Iterator[str]:
    """A DBA's invoker helper that prepares a statement, reseeds random() and opens a held cursor."""
    admin.execute(
        "CREATE FUNCTION docs.page_helper() RETURNS integer LANGUAGE plpgsql AS $$ BEGIN"
        " EXECUTE 'PREPARE mcp_left_behind AS SELECT 1';"
        " PERFORM pg_catalog.setseed(0.5);"
        " EXECUTE 'DECLARE mcp_left_open CURSOR WITH HOLD FOR SELECT 1';"
        " RETURN 1; END $$"
    )
    # The demo's default privileges keep new functions from PUBLIC; this DBA grants it back.
    admin.execute("GRANT EXECUTE ON FUNCTION docs.page_helper() TO PUBLIC")
    try:
        yield "docs.page_helper"
    finally:
        admin.execute("DROP FUNCTION docs.page_helper()")


def _seeded_random(admin: psycopg.Connection[Any]) -> float:
    """What random() returns first after setseed(0.5): what the next call must not see."""
    with admin.transaction():
        admin.execute("SELECT pg_catalog.setseed(0.5)")
        row = admin.execute("SELECT pg_catalog.random()").fetchone()
    assert row is not None
    return float(row[0])


def _run(executor: Executor, sql: str) -> list[list[Any]]:
    # These tests look at the backend's own session state (pg_prepared_statements, pg_cursors),
    # which the policy's catalogue rule refuses to the model; what is tested is the executor.
    vetted = vet_sql(sql, max_rows=5, allow_catalogue=True)
    return executor.run_vetted(vetted, max_rows=5, ticket=CallTicket()).rows


def test_a_helpers_prepared_statement_seed_and_cursor_do_not_reach_the_next_call(
    one_backend: Executor, admin: psycopg.Connection[Any], helper: str
) -> None:
    # Inside the call that ran the helper, all three exist: the witness that the helper works.
    inside = _run(
        one_backend,
        f"SELECT {helper}(), pg_backend_pid(),"
        " (SELECT count(*) FROM pg_prepared_statements), random(),"
        " (SELECT count(*) FROM pg_cursors WHERE name = 'mcp_left_open')",
    )
    (_, pid, prepared, drawn, cursors) = inside[0]
    assert (prepared, cursors) == (1, 1)
    seeded = _seeded_random(admin)
    assert drawn == seeded
    after = _run(
        one_backend,
        "SELECT pg_backend_pid(), (SELECT count(*) FROM pg_prepared_statements), random(),"
        " (SELECT count(*) FROM pg_cursors WHERE name NOT IN ('', 'mcp_suite_query'))",
    )
    assert after[0][0] == pid  # the same backend
    assert after[0][1] == 0  # no prepared statement left
    assert after[0][2] != seeded  # the seed the helper set is gone
    assert after[0][3] == 0  # the held cursor went with the rollback


def test_every_reset_draws_a_new_seed(
    one_backend: Executor, admin: psycopg.Connection[Any], helper: str
) -> None:
    # Two calls after the helper, each after its own reset: neither random() repeats the seeded
    # sequence, and they differ from each other (a fixed reseed would make them equal).
    _run(one_backend, f"SELECT {helper}()")
    first = _run(one_backend, "SELECT random()")[0][0]
    _run(one_backend, f"SELECT {helper}()")
    second = _run(one_backend, "SELECT random()")[0][0]
    assert first != second
    assert _seeded_random(admin) not in (first, second)


def test_a_failed_call_resets_the_backend_too(
    one_backend: Executor, admin: psycopg.Connection[Any], helper: str
) -> None:
    # The helper runs, then the query fails (division by zero): the reset comes from
    # `Connections.restore`.
    with pytest.raises(Exception, match="division"):
        _run(one_backend, f"SELECT {helper}() / 0")
    after = _run(one_backend, "SELECT (SELECT count(*) FROM pg_prepared_statements), random()")
    assert after[0][0] == 0
    assert after[0][1] != _seeded_random(admin)


# --- search_path: a same-named aggregate in a schema before pg_catalog ------------------------------


@pytest.fixture
def shadowing_max(probe: psycopg.Connection[Any], witness_dir: Path) -> Iterator[Path]:
    """As a careless superuser would: `util.max(integer)` over a SECURITY DEFINER step that touches
    a file, and the probe role's search_path set to `util, pg_catalog, public`. Yields the witness."""
    witness = witness_dir / "shadowed"
    make_shadowing_max(probe, str(witness))
    probe.execute(SHADOWING_SEARCH_PATH.encode())
    try:
        yield witness
    finally:
        drop_shadowing_max(probe)


def test_the_shadowing_aggregate_is_real_without_the_pin(demo_cluster: Cluster, shadowing_max: Path) -> None:
    # The hazard is real: a plain session of the role runs util.max for max(x).
    with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as conn:
        conn.execute("SELECT max(words) FROM docs.pages")
    assert shadowing_max.exists()


def test_every_call_pins_pg_catalog_first_so_max_is_the_built_in(
    demo_cluster: Cluster, shadowing_max: Path
) -> None:
    executor = open_executor(probe_dsn(demo_cluster))  # the audit skipped, as layer tests do
    try:
        rows = _run(executor, "SELECT max(words) AS m, current_setting('search_path') AS p FROM docs.pages")
        assert rows[0][1] == "pg_catalog, util, pg_catalog, public"  # the role's own path, after it
        explained = executor.run_vetted(
            vet_sql("SELECT max(words) FROM docs.pages", max_rows=5),
            max_rows=5,
            ticket=CallTicket(),
            explain="analyze",
        )
        assert explained.rows
    finally:
        executor.close()
    assert not shadowing_max.exists()
    with psycopg.connect(demo_cluster.admin_dsn) as admin:
        (expected,) = admin.execute("SELECT max(words) FROM docs.pages").fetchone() or (None,)
    assert rows[0][0] == expected


def test_catalogue_reads_pin_pg_catalog_first_too(demo_cluster: Cluster, shadowing_max: Path) -> None:
    executor = open_executor(probe_dsn(demo_cluster))

    def work(conn: psycopg.Connection[Any]) -> Any:
        return conn.execute("SELECT max(words), current_setting('search_path') FROM docs.pages").fetchone()

    try:
        row = executor.read_catalogue(work, ticket=CallTicket())
    finally:
        executor.close()
    assert row is not None
    assert row[1].startswith("pg_catalog, ")
    assert not shadowing_max.exists()


def test_an_empty_role_search_path_still_pins_pg_catalog(
    demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> None:
    probe.execute(f"ALTER ROLE {PROBE_ROLE} SET search_path = ''".encode())
    executor = open_executor(probe_dsn(demo_cluster))
    try:
        rows = _run(executor, "SELECT current_setting('search_path'), max(words) FROM docs.pages")
    finally:
        executor.close()
    assert rows[0][0] == 'pg_catalog, ""'
