"""The role audit again while serving, through the real server process and a real PostgreSQL.

The server starts with a role that passes the audit and a short re-audit interval. Then a careless
superuser grants the role EXECUTE on a SECURITY DEFINER function that runs a program (its witness is
a file the database server would touch). Within one interval every SQL surface (read_only_sql,
sql_schema, explain_sql, the schema resource) refuses with `role-refused` naming the function,
another tool still answers, nothing ran, and the log says so once; revoking the grant serves again.

Issue 40: the role's CONNECTION LIMIT filled by other sessions no longer keeps the last verdict (the
audit has its own connection, and when that is lost and cannot be opened again the SQL tools stop
after two intervals, `role-unaudited`, until an audit passes); and with the role guide's event
trigger a change (`ALTER FUNCTION ... SECURITY DEFINER`) is refused long before the interval ends.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import ADMIN_USER
from mcp_suite.problems import RoleRefusedError
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.role_audit.link import AUDIT_APPLICATION_NAME, AuditLink, NoVerdict
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate, audit_once
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.client import ServerProcess, problem_of
from tests.support.pg import PROBE_ROLE, probe_dsn, run_unvetted, sql_settings
from tests.support.reaudit import (
    COUNT,
    REAUDIT_S,
    REFUSED_LOG,
    SERVED_LOG,
    UNAUDITED_LOG,
    drop_event_trigger,
    install_event_trigger,
    reauditing_server,
    refused,
    served,
    sql_surfaces,
    unaudited,
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
                run_unvetted(executor, "SELECT docs.page_export()", max_rows=1, ticket=CallTicket())
            assert '"docs"."page_export"()' in caught.value.detail
        assert not witness.exists()
        probe.execute("DROP FUNCTION docs.page_export()")
        # Still refused until a re-audit passes (what serve_reaudit records every interval).
        with pytest.raises(RoleRefusedError):
            run_unvetted(executor, "SELECT 1", max_rows=1, ticket=CallTicket())
        link = AuditLink(dsn, connect_timeout_s=2, listen=False)
        try:
            findings = audit_once(link, settings, refresh=executor.definers.refresh)
        finally:
            link.close()
        assert not isinstance(findings, NoVerdict)
        gate.record(findings)
        assert run_unvetted(
            executor, "SELECT count(*) FROM docs.pages", max_rows=1, ticket=CallTicket()
        ).rows == [[30]]
    finally:
        executor.close()


# --- issue 40: the role's connection slots filled by other sessions ---------------------------------

POOL_SIZE = 2  # the server's pool for these tests; the role's limit is this plus one for the audit


def _connection_limit(admin: psycopg.Connection[Any]) -> int:
    row = admin.execute("SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (PROBE_ROLE,)).fetchone()
    assert row is not None
    return int(row[0])


@contextlib.contextmanager
def _slots_filled(cluster: Cluster, admin: psycopg.Connection[Any]) -> Iterator[None]:
    """Sessions of the probe role opened until PostgreSQL refuses one more (its CONNECTION LIMIT):
    what a second session of the role and parallel calls do to a role hardened by the guide."""
    sessions: list[psycopg.Connection[Any]] = []
    try:
        for _ in range(20):
            try:
                sessions.append(psycopg.connect(probe_dsn(cluster), autocommit=True))
            except psycopg.OperationalError:  # libpq gives a refused login no SQLSTATE: counted below
                break
        # The hazard of the issue: every slot of the role is taken, so a fresh connection (a
        # re-audit's own, before issue 40) is refused ("too many connections for role").
        assert sessions
        assert _sessions_of_the_role(admin) == _connection_limit(admin)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(probe_dsn(cluster), autocommit=True)
        yield
    finally:
        for session in sessions:
            session.close()


def _audit_backend(admin: psycopg.Connection[Any]) -> int:
    row = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE usename = %s AND application_name = %s",
        (PROBE_ROLE, AUDIT_APPLICATION_NAME),
    ).fetchone()
    assert row is not None, "the server holds no audit connection of its own"
    return int(row[0])


def _sessions_of_the_role(admin: psycopg.Connection[Any]) -> int:
    row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (PROBE_ROLE,)).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def limited_server(demo_cluster: Cluster, probe: psycopg.Connection[Any]) -> Iterator[ServerProcess]:
    """The real server for the probe role, whose CONNECTION LIMIT is the guide's arithmetic: the
    pool's size plus one for the audit, plus one for a second session of the role."""
    probe.execute(f"ALTER ROLE {PROBE_ROLE} CONNECTION LIMIT {POOL_SIZE + 2}".encode())
    with reauditing_server(probe_dsn(demo_cluster), MCP_SQL_POOL_MAX_SIZE=str(POOL_SIZE)) as process:
        yield process


def test_with_the_roles_connection_slots_full_a_definer_granted_later_is_still_refused(
    limited_server: ServerProcess, demo_cluster: Cluster, probe: psycopg.Connection[Any], witness_dir: Path
) -> None:
    # Before issue 40 every re-audit then failed with "too many connections for role" and the last
    # passing verdict stood: the definer stayed callable for as long as the slots stayed full.
    server = limited_server
    witness = witness_dir / "exported"
    assert _audit_backend(probe)  # opened at start-up, outside the pool
    with _slots_filled(demo_cluster, probe):
        _grant_a_definer(probe, witness)
        problem = problem_of(until(server, refused))
        assert problem["metadata"]["findings"] == ["definer-function"]
        assert '"docs"."page_export"()' in problem["detail"]
        assert refused(server.call_tool("read_only_sql", {"sql": "SELECT docs.page_export()"}))
        assert not witness.exists()
        probe.execute("DROP FUNCTION docs.page_export()")
        # Fixed while the slots are still full: the audit's own connection sees that too.
        assert served(until(server, served))
    assert UNAUDITED_LOG not in server.stderr_text()


# Long enough that a reopening attempt ends (refused by the role's limit) before the gate's deadline
# of two intervals even on a loaded machine, so the log's reason is that refusal, not an attempt
# cut short at the deadline.
LOST_INTERVAL_S: Final = 1.5


@pytest.fixture
def slower_limited_server(demo_cluster: Cluster, probe: psycopg.Connection[Any]) -> Iterator[ServerProcess]:
    """`limited_server`, re-auditing every LOST_INTERVAL_S."""
    probe.execute(f"ALTER ROLE {PROBE_ROLE} CONNECTION LIMIT {POOL_SIZE + 2}".encode())
    with reauditing_server(
        probe_dsn(demo_cluster),
        MCP_SQL_POOL_MAX_SIZE=str(POOL_SIZE),
        MCP_SQL_REAUDIT_INTERVAL_S=str(LOST_INTERVAL_S),
    ) as process:
        yield process


def test_an_audit_connection_lost_that_cannot_be_reopened_stops_the_sql_tools_until_an_audit_passes(
    slower_limited_server: ServerProcess, demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> None:
    server = slower_limited_server
    with _slots_filled(demo_cluster, probe):
        # The audit's slot must not be free once its backend is gone: the limit comes down to what
        # the role holds without it (a DBA lowering the limit, or another session taking the slot).
        probe.execute(f"ALTER ROLE {PROBE_ROLE} CONNECTION LIMIT {_sessions_of_the_role(probe) - 1}".encode())
        probe.execute("SELECT pg_terminate_backend(%s)", (_audit_backend(probe),))
        first = until(server, unaudited)
        problem = problem_of(first)
        assert unaudited(first), first
        # Which source it is, even the one of MCP_SQL_DSN (issue 53: the same document everywhere).
        assert problem["metadata"] == {"retryable": True, "source": "default"}
        for name, refusal in sql_surfaces(server, COUNT["sql"]):
            assert refusal.get("type", "").endswith(":role-unaudited"), (name, refusal)
        assert served(server.call_tool("system_metrics"))  # the other tools keep serving
        # Several intervals later: still refused (no stale verdict), and the log said so once.
        time.sleep(3 * LOST_INTERVAL_S)
        assert unaudited(server.call_tool("read_only_sql", COUNT))
        server.wait_for_stderr(UNAUDITED_LOG)
        assert server.stderr_text().count(UNAUDITED_LOG) == 1
        stopped = [line for line in server.stderr_text().splitlines() if UNAUDITED_LOG in line]
        assert "too many connections for role" in server.stderr_text(), stopped  # why, in the log
        probe.execute(f"ALTER ROLE {PROBE_ROLE} CONNECTION LIMIT {POOL_SIZE + 2}".encode())
        # A slot for the audit again (the other sessions still open): it reopens, passes, and
        # the SQL tools serve again, one line saying so.
        assert served(until(server, served))
    server.wait_for_stderr(SERVED_LOG)
    assert server.stderr_text().count(SERVED_LOG) == 1
    assert server.stderr_text().count(UNAUDITED_LOG) == 1
    assert _audit_backend(probe)


# --- issue 40: the event trigger ---------------------------------------------------------------------

EVENT_INTERVAL_S = "60"  # the longest interval: a refusal within `until`'s bound is the trigger's


@pytest.fixture
def event_trigger(admin: psycopg.Connection[Any]) -> Iterator[None]:
    install_event_trigger(admin)
    try:
        yield
    finally:
        drop_event_trigger(admin)
        admin.execute("DROP FUNCTION IF EXISTS docs.fmt_ticket(text)")


def _a_public_helper(admin: psycopg.Connection[Any]) -> None:
    """An ordinary (SECURITY INVOKER) helper PUBLIC may execute, made by the superuser: the audit
    passes it. It says whose privileges it runs with."""
    admin.execute(
        "CREATE FUNCTION docs.fmt_ticket(t text) RETURNS text LANGUAGE sql"
        " SET search_path = pg_catalog AS $$ SELECT t || ' by ' || current_user $$"
    )
    admin.execute("GRANT EXECUTE ON FUNCTION docs.fmt_ticket(text) TO PUBLIC")


def test_with_the_event_trigger_alter_function_security_definer_is_refused_long_before_the_interval(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], event_trigger: None
) -> None:
    _a_public_helper(probe)
    helper = {"sql": "SELECT docs.fmt_ticket('T-1') AS t"}
    with reauditing_server(probe_dsn(demo_cluster), MCP_SQL_REAUDIT_INTERVAL_S=EVENT_INTERVAL_S) as server:
        answer = server.call_tool("read_only_sql", helper)
        assert answer["structuredContent"]["rows"] == [[f"T-1 by {PROBE_ROLE}"]]
        probe.execute("ALTER FUNCTION docs.fmt_ticket(text) SECURITY DEFINER")
        # The hazard: a plain session of the role now runs the helper as the superuser.
        with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as conn:
            row = conn.execute("SELECT docs.fmt_ticket('T-2')").fetchone()
            assert row == (f"T-2 by {ADMIN_USER}",)
        # `until` gives up after a few seconds, far inside the 60 s interval: only the
        # notification can have made the server audit again by then.
        problem = problem_of(until(server, refused))
        assert problem["metadata"]["findings"] == ["definer-function"]
        assert '"docs"."fmt_ticket"(t text)' in problem["detail"]
        assert refused(server.call_tool("read_only_sql", helper))
        # The fix is seen the same way.
        probe.execute("ALTER FUNCTION docs.fmt_ticket(text) SECURITY INVOKER")
        assert served(until(server, served))


def test_without_the_event_trigger_the_same_change_waits_for_the_interval(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], admin: psycopg.Connection[Any]
) -> None:
    # The control: with no trigger installed, nothing tells the server, and within the same bound
    # the helper is still served (bench_reaudit measures both windows).
    drop_event_trigger(admin)
    try:
        _a_public_helper(probe)
        with reauditing_server(
            probe_dsn(demo_cluster), MCP_SQL_REAUDIT_INTERVAL_S=EVENT_INTERVAL_S
        ) as server:
            probe.execute("ALTER FUNCTION docs.fmt_ticket(text) SECURITY DEFINER")
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                assert served(server.call_tool("read_only_sql", COUNT))
                time.sleep(REAUDIT_S)
    finally:
        probe.execute("DROP FUNCTION IF EXISTS docs.fmt_ticket(text)")


# --- the audit's connection itself -------------------------------------------------------------------


def _until_true(condition: Any) -> bool:
    """`condition()` polled for a few seconds; what it last said (the test asserts it)."""
    deadline = time.monotonic() + 5
    while not (answer := condition()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(answer)


def _backend_pid(conn: psycopg.Connection[Any]) -> int:
    return conn.info.backend_pid


def test_the_audit_connection_hears_a_notification_and_reopens_when_lost(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    link = AuditLink(demo_cluster.reader_dsn, connect_timeout_s=2, listen=True)
    try:
        link.open()
        first = link.run(_backend_pid)
        assert isinstance(first, int)
        assert not link.drain()  # nothing came
        assert link.fileno() is not None  # idle and listening: the loop waits on this socket
        # A burst: one migration's commands, delivered together when it commits.
        admin.execute(
            "BEGIN; NOTIFY mcp_suite_role_audit, 'GRANT'; NOTIFY mcp_suite_role_audit, 'REVOKE';"
            " NOTIFY mcp_suite_role_audit, 'ALTER FUNCTION'; COMMIT"
        )
        assert _until_true(link.drain)
        assert not link.drain()  # the whole burst was taken at once
        # Lost (a DBA's pg_terminate_backend, a restart): drain says so and closes it (the loop then
        # waits for the interval alone), and the next run reopens it.
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        assert _until_true(lambda: link.drain() and link.fileno() is None)
        second = link.run(_backend_pid)
        assert isinstance(second, int)
        assert second != first
    finally:
        link.close()


def test_the_audit_connection_is_one_re_audits_at_a_time(demo_cluster: Cluster) -> None:
    link = AuditLink(demo_cluster.reader_dsn, connect_timeout_s=0.5, listen=True)
    entered, release = threading.Event(), threading.Event()

    def slow(conn: psycopg.Connection[Any]) -> int:
        entered.set()
        release.wait(10)
        return _backend_pid(conn)

    worker = threading.Thread(target=link.run, args=(slow,))
    try:
        worker.start()
        assert entered.wait(10)
        # An abandoned re-audit still holds it: the next is no verdict, and nothing waits on it.
        assert link.run(_backend_pid) == NoVerdict("the previous re-audit has not finished")
        assert not link.drain()
        assert link.fileno() is None
        link.close()  # at shutdown: returns after a bounded wait, the connection left to its thread
        assert worker.is_alive()
    finally:
        release.set()
        worker.join(10)
        link.close()
    assert not worker.is_alive()
