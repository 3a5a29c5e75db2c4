"""The role audit again while serving, through the real server process and a real PostgreSQL.

The server starts with a role that passes the audit and a short re-audit interval. Then a careless
superuser grants the role EXECUTE on a SECURITY DEFINER function that runs a program (its witness is
a file the database server would touch). Within one interval every SQL surface (read_only_sql,
sql_schema, explain_sql, the schema resource) refuses with `role-refused` naming the function,
another tool still answers, nothing ran, and the log says so once; revoking the grant serves again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_suite.devdb.cluster import Cluster
from mcp_suite.problems import RoleRefusedError
from mcp_suite.tools.sql_engine.executor import Executor
from mcp_suite.tools.sql_engine.role_audit.link import AuditLink, NoVerdict
from mcp_suite.tools.sql_engine.role_audit.reaudit import AuditGate, audit_once
from mcp_suite.tools.sql_engine.ticket import CallTicket
from tests.support.client import ServerProcess, problem_of
from tests.support.pg import PROBE_ROLE, probe_dsn, sql_settings
from tests.support.reaudit import (
    COUNT,
    REAUDIT_S,
    REFUSED_LOG,
    SERVED_LOG,
    reauditing_server,
    refused,
    served,
    sql_surfaces,
    until,
)

pytestmark = pytest.mark.pg


@pytest.fixture(autouse=True)
def no_definer_left(admin: psycopg.Connection[Any]) -> Iterator[None]:
    """The superuser's function outlives the probe role's DROP OWNED BY: drop it after each test."""
    try:
        yield
    finally:
        admin.execute("DROP FUNCTION IF EXISTS docs.page_export()")


@pytest.fixture
def server(demo_cluster: Cluster, probe: psycopg.Connection[Any]) -> Iterator[ServerProcess]:
    """The real server for the probe role (a plain reader: it passes the audit at start-up)."""
    with reauditing_server(probe_dsn(demo_cluster)) as process:
        yield process


def _grant_a_definer(probe: psycopg.Connection[Any], witness: Path) -> None:
    probe.execute(
        "CREATE FUNCTION docs.page_export() RETURNS integer LANGUAGE plpgsql SECURITY DEFINER"
        " SET search_path = pg_catalog AS $body$ BEGIN"
        f" COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null'; RETURN 1; END $body$".encode()
    )
    probe.execute("REVOKE EXECUTE ON FUNCTION docs.page_export() FROM PUBLIC")
    probe.execute(f"GRANT EXECUTE ON FUNCTION docs.page_export() TO {PROBE_ROLE}".encode())


def test_a_definer_granted_after_start_up_stops_every_sql_surface_until_it_is_revoked(
    server: ServerProcess, probe: psycopg.Connection[Any], witness_dir: Path
) -> None:
    witness = witness_dir / "exported"
    assert served(server.call_tool("read_only_sql", COUNT))
    try:
        _grant_a_definer(probe, witness)
        first = until(server, refused)
        problem = problem_of(first)
        assert problem["metadata"]["findings"] == ["definer-function"]
        assert '"docs"."page_export"()' in problem["detail"]
        # Every SQL surface refuses, the call naming the function too; nothing reaches the database.
        for name, refusal in sql_surfaces(server, "SELECT docs.page_export()"):
            assert refusal.get("type", "").endswith(":role-refused"), (name, refusal)
        # Another tool still answers.
        metrics = server.call_tool("system_metrics")
        assert not metrics.get("isError"), metrics
        # Several intervals later: still refused, and the log said so once.
        time.sleep(3 * REAUDIT_S)
        assert refused(server.call_tool("read_only_sql", COUNT))
        assert server.stderr_text().count(REFUSED_LOG) == 1
        assert not witness.exists()
    finally:
        probe.execute("DROP FUNCTION IF EXISTS docs.page_export()")
    # Fixed: served again within an interval, with one log line saying so.
    again = until(server, served)
    assert served(again), again
    server.wait_for_stderr(SERVED_LOG)  # the test's reader of stderr may lag
    assert server.stderr_text().count(SERVED_LOG) == 1
    assert not witness.exists()


def test_without_the_re_audit_the_granted_definer_would_run(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], witness_dir: Path
) -> None:
    # The hazard is real: the role itself can run the function, and it runs the program.
    witness = witness_dir / "exported"
    _grant_a_definer(probe, witness)
    with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as conn:
        conn.execute("SELECT docs.page_export()")
    assert witness.exists()


def test_an_audit_deferred_to_the_first_call_refuses_through_the_gate_and_a_passing_re_audit_lifts_it(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], witness_dir: Path
) -> None:
    # The database was down at start-up, so the executor audits before its first query (no
    # `mark_audited`). Its refusal is the gate's: calls get role-refused, and nothing ran.
    witness = witness_dir / "exported"
    _grant_a_definer(probe, witness)
    dsn = probe_dsn(demo_cluster)
    settings = sql_settings(dsn)
    gate = AuditGate()
    executor = Executor(settings, dsn, gate=gate)
    executor.open()
    try:
        for _ in range(2):
            with pytest.raises(RoleRefusedError) as caught:
                executor.run("SELECT docs.page_export()", max_rows=1, ticket=CallTicket())
            assert '"docs"."page_export"()' in caught.value.detail
        assert not witness.exists()
        probe.execute("DROP FUNCTION docs.page_export()")
        # Still refused until a re-audit passes (what serve_reaudit records every interval).
        with pytest.raises(RoleRefusedError):
            executor.run("SELECT 1", max_rows=1, ticket=CallTicket())
        link = AuditLink(dsn, connect_timeout_s=2, listen=False)
        try:
            findings = audit_once(link, settings, refresh=executor.definers.refresh)
        finally:
            link.close()
        assert not isinstance(findings, NoVerdict)
        gate.record(findings)
        assert executor.run("SELECT count(*) FROM docs.pages", max_rows=1, ticket=CallTicket()).rows == [[30]]
    finally:
        executor.close()
