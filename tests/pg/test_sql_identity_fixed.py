"""An identity nothing can change, and an error channel that shows no more than the result channel
(issue 51), against the real cluster below the transports: a helper that calls `set_config`, a
function declared with `SET role`, `ALTER ROLE <login> SET role`, a login role that reaches a
superuser or `pg_read_all_data` through a mapped role, and a hidden row's value quoted by a cast's
error through a view that is not a security barrier (read_only_sql's and explain_sql's path)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import (
    IdentityChangedError,
    InvalidArgumentsError,
    ProblemError,
    ResultTooLargeError,
)
from mcp_suite.tools.sql.engine.error_values import WITHHELD
from mcp_suite.tools.sql.engine.executor import Executor, ExplainMode
from mcp_suite.tools.sql.engine.identity import CallRole
from mcp_suite.tools.sql.engine.policy import QueryPolicy, vet_sql
from mcp_suite.tools.sql.engine.role_audit.connect import audit_dsn
from mcp_suite.tools.sql.engine.role_audit.finding import Finding, refusals
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.devdb.pgbouncer import open_pgbouncer
from tests.support.identity import BLUE, LOGIN, LOGIN_PASSWORD, NOTES_SQL, RED, login_dsn, people
from tests.support.identity_attacks import (
    BECOME_SQL,
    CLAIM_AS_SQL,
    HIDDEN_VALUE,
    LEAKY_VIEW_SQL,
    READ_AS_BLUE_SQL,
    SUPER,
    drop_super,
    install_attacks,
)
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

ANN = CallRole(role=RED, claims=json.dumps({"sub": "ann"}), application_name="mcp-suite/ann")


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with people(demo_cluster) as conn:
        install_attacks(conn)
        try:
            yield conn
        finally:
            conn.execute(f"ALTER ROLE {LOGIN} RESET ALL".encode())
            drop_super(conn)


def _dsn(cluster: Cluster) -> str:
    return make_conninfo(login_dsn(cluster), password=LOGIN_PASSWORD)


@pytest.fixture(params=["none", "transaction"], ids=["direct", "as-behind-a-pooler"])
def pooler(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def executor(pooler: str, demo_cluster: Cluster, admin: Any) -> Iterator[Executor]:
    dsn = _dsn(demo_cluster)
    made = Executor(sql_settings(dsn, sql_pooler=pooler), dsn, roles=(RED, BLUE))
    made.open()
    made.mark_audited()
    try:
        yield made
    finally:
        made.close()


def _run(
    executor: Executor,
    sql: str,
    role: CallRole | None,
    explain: ExplainMode | None = None,
    *,
    max_rows: int = 50,
) -> list[list[Any]]:
    vetted = QueryPolicy(cache_size=16, vet=vet_sql).vet(sql, max_rows=max_rows)
    ticket = CallTicket(cancel_timeout_s=2)
    return executor.run_vetted(vetted, max_rows=max_rows, ticket=ticket, role=role, explain=explain).rows


def _findings(demo_cluster: Cluster) -> list[Finding]:
    """Every refusal of the audit: the login role's and each mapped role's (`role` names it)."""
    return refusals(audit_dsn(_dsn(demo_cluster), connect_timeout_s=5, roles=(RED, BLUE)))


def _config_findings(demo_cluster: Cluster) -> list[Finding]:
    """The audit's refusals of functions declared with a SET that changes who a call is."""
    return [f for f in _findings(demo_cluster) if f.capability == "function-config"]


def _login_findings(demo_cluster: Cluster) -> list[Finding]:
    """The refusals that stop every call (the login role's), not one mapped role's."""
    return [f for f in _findings(demo_cluster) if not f.role]


# --- what runs cannot change who the call is -------------------------------------------------


def test_a_call_whose_helper_switches_the_claims_returns_no_row_and_is_refused(executor: Executor) -> None:
    # The helper is SECURITY INVOKER, granted to red: the audit has nothing against it, the
    # policy sees no set_config in the text; by the end of the call the claims are bo's.
    with pytest.raises(IdentityChangedError) as caught:
        _run(executor, CLAIM_AS_SQL, ANN)
    assert caught.value.metadata == {"finding": "identity-changed"}
    assert "bo: only" not in str(caught.value)
    # The connection went back clean: the next call is ann's again.
    assert _run(executor, NOTES_SQL, ANN) == [["ann", "ann: first"], ["ann", "ann: second"]]


def test_a_call_whose_helper_switches_the_role_returns_no_row_and_is_refused(executor: Executor) -> None:
    with pytest.raises(IdentityChangedError):
        _run(executor, BECOME_SQL, ANN)
    with pytest.raises(IdentityChangedError):  # explain_sql's analyze runs the same code
        _run(executor, BECOME_SQL, ANN, explain="analyze")
    assert _run(executor, "SELECT current_user", ANN) == [[RED]]


def test_a_mapped_call_whose_rows_pass_the_byte_limit_before_the_check_returns_none(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # The pipeline is cut amid the rows (the connection closed): the end check never ran.
    dsn = _dsn(demo_cluster)
    executor = Executor(sql_settings(dsn, sql_max_result_bytes=1_024), dsn, roles=(RED, BLUE))
    executor.open()
    executor.mark_audited()
    # Rows that fit one by one, more of them than the wire allows before the cut.
    big = "SELECT pg_catalog.repeat('x', 500) FROM pg_catalog.generate_series(1, 1000)"
    try:
        with pytest.raises(ResultTooLargeError) as caught:
            _run(executor, big, ANN, max_rows=1000)
        assert "none is returned" in caught.value.detail
        assert _run(executor, big, None, max_rows=1000)  # without a map's role: the rows that fit
    finally:
        executor.close()


def test_a_session_that_starts_as_another_role_serves_no_call(
    pooler: str, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # ALTER ROLE <login> SET role: every new session starts as red; a stdio call (no role of its
    # own) would read as red.
    admin.execute(f"ALTER ROLE {LOGIN} SET role = {RED}".encode())
    dsn = _dsn(demo_cluster)
    executor = Executor(sql_settings(dsn, sql_pooler=pooler), dsn, roles=(RED, BLUE))
    executor.open()
    executor.mark_audited()
    try:
        with pytest.raises(IdentityChangedError) as caught:
            _run(executor, NOTES_SQL, None)
        assert caught.value.metadata == {"finding": "session-role"}
    finally:
        executor.close()


def test_behind_pgbouncer_a_backend_that_starts_as_another_role_is_refused_before_the_query(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # PgBouncer in transaction mode: the pool's connection was checked when it was made, on the
    # backend of then; a later backend starts as red, and RESET ALL restores red on it.
    with open_pgbouncer(demo_cluster, {LOGIN: LOGIN_PASSWORD}, pool_size=1) as bouncer:
        dsn = bouncer.dsn(LOGIN, LOGIN_PASSWORD, demo_cluster.dbname)
        executor = Executor(sql_settings(dsn, sql_pooler="transaction"), dsn, roles=(RED, BLUE))
        executor.open()
        executor.mark_audited()
        try:
            assert _run(executor, "SELECT current_user", None) == [[LOGIN]]
            admin.execute(f"ALTER ROLE {LOGIN} SET role = {RED}".encode())
            with psycopg.connect(bouncer.admin_dsn, autocommit=True) as console:
                console.execute("RECONNECT")  # each backend is closed once released, then made anew
            with pytest.raises(IdentityChangedError) as caught:
                _run(executor, NOTES_SQL, None)
            assert caught.value.metadata == {"finding": "session-role"}
            # A mapped call too: the session is not what the audit saw, whatever the call switches to.
            with pytest.raises(IdentityChangedError):
                _run(executor, NOTES_SQL, ANN)
        finally:
            executor.close()


# --- the audit: the login role's reach is closed, and nothing changes who a session is ---------


def test_the_audit_names_a_role_setting_of_the_login_role_and_names_the_login_role(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    assert _login_findings(demo_cluster) == []
    admin.execute(f"ALTER ROLE {LOGIN} SET role = {RED}".encode())
    findings = _login_findings(demo_cluster)
    assert [f.capability for f in findings] == ["session-role"]
    assert findings[0].fix == f'ALTER ROLE "{LOGIN}" RESET role;'


def test_the_audit_refuses_a_function_declared_with_set_role_for_the_mapped_role_that_may_execute_it(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # red may execute blue_secrets(); declared SET role = blue, a call of red's would read as blue.
    # (The other planted helpers, which call set_config, are red's findings already.)
    assert _config_findings(demo_cluster) == []
    admin.execute(f"ALTER FUNCTION {READ_AS_BLUE_SQL} SET role = {BLUE}".encode())
    findings = _config_findings(demo_cluster)
    assert [f.role for f in findings] == [RED]
    assert "mcp_people.blue_secrets()" in findings[0].problem
    admin.execute(f"ALTER FUNCTION {READ_AS_BLUE_SQL} RESET role".encode())
    admin.execute(f'ALTER FUNCTION {READ_AS_BLUE_SQL} SET request.jwt.claims = \'{{"sub": "bo"}}\''.encode())
    assert [f.role for f in _config_findings(demo_cluster)] == [RED]


@pytest.mark.parametrize("granted", [SUPER, "pg_read_all_data", "pg_read_all_stats"])
def test_the_audit_refuses_every_call_when_a_mapped_role_reaches_a_privileged_role(
    granted: str, demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    # Not only red's calls: any call's code could switch to red, then to the superuser.
    admin.execute(f"GRANT {granted} TO {RED}".encode())
    findings = _login_findings(demo_cluster)
    assert [f.capability for f in findings] == ["reach-privileged"]
    assert f'"{granted}"' in findings[0].problem
    assert findings[0].fix == f'REVOKE "{granted}" FROM "{RED}";'


def test_the_audit_refuses_a_role_reached_through_a_mapped_role(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute("CREATE ROLE mcp_id_other NOLOGIN")
    admin.execute(f"GRANT mcp_id_other TO {BLUE}".encode())
    findings = _login_findings(demo_cluster)
    assert [f.capability for f in findings] == ["reach-role"]
    assert "mcp_id_other" in findings[0].problem


def test_the_audit_refuses_a_login_role_that_is_itself_a_mapped_superuser(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute(f"GRANT {SUPER} TO {LOGIN}".encode())
    found = refusals(audit_dsn(_dsn(demo_cluster), connect_timeout_s=5, roles=(RED, BLUE, SUPER)))
    assert "reach-privileged" in {f.capability for f in found if not f.role}


# --- the error channel shows no more than the result channel --------------------------------


@pytest.mark.parametrize("explain", [None, "analyze"])
def test_a_cast_error_on_a_hidden_row_does_not_show_its_value(
    explain: ExplainMode | None, executor: Executor
) -> None:
    # The view filters by the claims, but is no security barrier: the cast runs on bo's row first.
    with pytest.raises(InvalidArgumentsError) as caught:
        _run(executor, LEAKY_VIEW_SQL, ANN, explain=explain)
    assert caught.value.metadata["sqlstate"] == "22P02"
    assert HIDDEN_VALUE not in caught.value.detail
    assert f"invalid input syntax for type integer: {WITHHELD}" in caught.value.detail


def test_a_cast_error_on_the_callers_own_literal_still_shows_it(executor: Executor) -> None:
    with pytest.raises(ProblemError) as caught:
        _run(executor, "SELECT 'twelve'::int", ANN)
    assert 'invalid input syntax for type integer: "twelve"' in caught.value.detail
