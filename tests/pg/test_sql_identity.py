"""The role switch of an identity map (issue 42) against the real cluster, below the HTTP layer: the
call's transaction runs as the mapped role with the caller's claims and `application_name`, all of
them gone after the call; the catalogue reads (sql_schema, the hidden-rows check) and the name guard
judge by the mapped role; no query can change the role or the claims; and the audit names the
login role's and each mapped role's findings apart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.problems import ProblemError, QueryViolationError
from mcp_suite.tools.sql.engine.engine import SqlEngine
from mcp_suite.tools.sql.engine.executor import Executor
from mcp_suite.tools.sql.engine.identity import CallRole
from mcp_suite.tools.sql.engine.names import NameGuard
from mcp_suite.tools.sql.engine.policy import QueryPolicy, vet_sql
from mcp_suite.tools.sql.engine.role_audit.connect import audit_dsn
from mcp_suite.tools.sql.engine.role_audit.finding import refusals
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate
from mcp_suite.tools.sql.engine.ticket import CallTicket
from tests.support.identity import BLUE, LOGIN, LOGIN_PASSWORD, NOTES_SQL, OTHER, RED, login_dsn, people
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

ANN = CallRole(role=RED, claims=json.dumps({"sub": "ann", "team": "north"}), application_name="mcp-suite/ann")
BO = CallRole(role=BLUE, claims=json.dumps({"sub": "bo"}), application_name="mcp-suite/~0123456789abcdef")
WHO = "SELECT current_user, session_user, pg_catalog.current_setting('application_name') AS app"


@pytest.fixture
def admin(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with people(demo_cluster) as conn:
        yield conn


def _dsn(cluster: Cluster) -> str:
    return make_conninfo(login_dsn(cluster), password=LOGIN_PASSWORD)


@pytest.fixture(params=["none", "transaction"], ids=["direct", "as-behind-a-pooler"])
def executor(request: pytest.FixtureRequest, demo_cluster: Cluster, admin: Any) -> Iterator[Executor]:
    # "transaction": the settings go into every call's transaction (what PgBouncer needs); the
    # switch must work on both paths.
    dsn = _dsn(demo_cluster)
    made = Executor(sql_settings(dsn, sql_pooler=request.param), dsn, roles=(RED, BLUE))
    made.open()
    made.mark_audited()
    try:
        yield made
    finally:
        made.close()


def _policy() -> QueryPolicy:
    return QueryPolicy(cache_size=16, vet=vet_sql)


def _run(executor: Executor, sql: str, role: CallRole | None) -> list[list[Any]]:
    vetted = _policy().vet(sql, max_rows=50)
    return executor.run_vetted(vetted, max_rows=50, ticket=CallTicket(cancel_timeout_s=2), role=role).rows


def test_each_call_runs_as_its_role_with_its_claims_and_nothing_stays(executor: Executor) -> None:
    assert _run(executor, NOTES_SQL, ANN) == [["ann", "ann: first"], ["ann", "ann: second"]]
    assert _run(executor, NOTES_SQL, BO) == [["bo", "bo: only"]]
    assert _run(executor, WHO, ANN) == [[RED, LOGIN, "mcp-suite/ann"]]
    assert _run(executor, WHO, BO) == [[BLUE, LOGIN, "mcp-suite/~0123456789abcdef"]]
    # Without a role (stdio): the login role, which reads nothing, and no claim is left behind.
    with pytest.raises(ProblemError) as caught:
        _run(executor, NOTES_SQL, None)
    assert (caught.value.slug, caught.value.metadata.get("sqlstate")) == ("access-denied", "42501")
    assert _run(executor, "SELECT current_user", None) == [[LOGIN]]


def test_a_mapped_roles_gate_stops_its_calls_only(demo_cluster: Cluster, admin: Any) -> None:
    from mcp_suite.tools.sql.engine.role_audit.finding import Finding

    gate = AuditGate()
    dsn = _dsn(demo_cluster)
    executor = Executor(sql_settings(dsn), dsn, roles=(RED, BLUE), gate=gate)
    executor.open()
    executor.mark_audited()
    try:
        gate.record([Finding("definer", f"the mapped role {BLUE}: a definer", "REVOKE", role=BLUE)])
        with pytest.raises(ProblemError) as caught:
            _run(executor, NOTES_SQL, BO)
        assert caught.value.slug == "role-refused"
        assert repr(BLUE) in str(caught.value)
        assert len(_run(executor, NOTES_SQL, ANN)) == 2
        gate.record([Finding("inherit", "the login role inherits", "ALTER ROLE")])  # the login role's
        for role in (ANN, BO, None):
            with pytest.raises(ProblemError) as refused:
                _run(executor, NOTES_SQL, role)
            assert refused.value.slug == "role-refused"
    finally:
        executor.close()


def test_the_schema_and_the_hidden_rows_check_judge_by_the_mapped_role(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    from mcp_suite.tools.sql.engine.availability import Availability

    admin.execute("CREATE TABLE mcp_people.red_only (x int)")
    admin.execute(f"GRANT SELECT ON mcp_people.red_only TO {RED}".encode())
    engine = SqlEngine(
        sql_settings(_dsn(demo_cluster)),
        _dsn(demo_cluster),
        audited=True,
        availability=Availability(max_backoff_s=1),
    )
    try:

        def names(role: CallRole) -> list[str]:
            page = (
                engine.run_sync_for_test(role)
                if False
                else engine.schema_page(CallTicket(cancel_timeout_s=2), max_objects=50, role=role)
            )
            return sorted(o["name"] for o in page["objects"])

        assert names(ANN) == ["notes", "red_only"]
        assert names(BO) == ["notes"]
        relations = ["red_only"]  # as EXPLAIN names them: no schema
        assert engine.hidden_relations(relations, CallTicket(cancel_timeout_s=2), ANN) == []
        assert engine.hidden_relations(relations, CallTicket(cancel_timeout_s=2), BO) == relations
    finally:
        engine.close()


def test_the_name_guard_reads_and_caches_each_roles_catalogue_as_that_role(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    admin.execute("CREATE FUNCTION mcp_people.red_helper() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    admin.execute("REVOKE EXECUTE ON FUNCTION mcp_people.red_helper() FROM PUBLIC")
    admin.execute(f"GRANT EXECUTE ON FUNCTION mcp_people.red_helper() TO {RED}".encode())
    guard = NameGuard(cache_s=60)
    called = frozenset({("mcp_people", "red_helper")})
    with psycopg.connect(_dsn(demo_cluster), autocommit=True) as conn:
        guard.check(conn, called, frozenset(), role=RED)
        with pytest.raises(QueryViolationError):
            guard.check(conn, called, frozenset(), role=BLUE)
        with pytest.raises(QueryViolationError):
            guard.check(conn, called, frozenset())  # the login role's own: nothing
        guard.check(conn, called, frozenset(), role=RED)  # cached: no read
        assert guard.statistics().catalogue_reads == 3
        guard.refresh(conn, BLUE)
        assert guard.statistics().catalogue_reads == 4
        (user,) = conn.execute("SELECT current_user").fetchone() or ("",)
        assert user == LOGIN  # each read's SET LOCAL ROLE ended with its transaction


# Every way a query might change the role, the claims or the name PostgreSQL shows.
CHANGES = (
    "SET ROLE mcp_id_blue",
    "SET LOCAL ROLE mcp_id_blue",
    "SET SESSION AUTHORIZATION mcp_id_blue",
    "RESET ROLE",
    "RESET ALL",
    'SET request.jwt.claims = \'{"sub": "bo"}\'',
    "SET application_name = 'someone-else'",
    "SELECT set_config('role', 'mcp_id_blue', true)",
    "SELECT pg_catalog.set_config('request.jwt.claims', '{\"sub\": \"bo\"}', true)",
    "SELECT * FROM mcp_people.notes WHERE set_config('request.jwt.claims', '{\"sub\":\"bo\"}', true) <> ''",
    "WITH c AS (SELECT set_config('role', 'mcp_id_blue', false)) SELECT * FROM c",
    "SELECT (SELECT set_config('application_name', 'x', true))",
    "SELECT set_config(name, 'x', true) FROM (VALUES ('role')) AS v(name)",
    "DISCARD ALL",
    "BEGIN; SET ROLE mcp_id_blue; SELECT 1",
)


@pytest.mark.parametrize("sql", CHANGES)
def test_no_query_can_change_the_role_or_the_claims(sql: str, executor: Executor) -> None:
    with pytest.raises(ProblemError) as caught:
        _run(executor, sql, ANN)
    assert caught.value.status in (400, 403, 422), caught.value
    # And the next call still runs as its own role, with its own claims.
    assert _run(executor, NOTES_SQL, ANN) == [["ann", "ann: first"], ["ann", "ann: second"]]


def test_the_audit_refuses_an_inheriting_login_role_and_an_extra_membership_as_the_login_roles(
    demo_cluster: Cluster, admin: psycopg.Connection[Any]
) -> None:
    dsn = _dsn(demo_cluster)
    assert audit_dsn(dsn, connect_timeout_s=5, roles=(RED, BLUE)) == []
    admin.execute(f"ALTER ROLE {LOGIN} INHERIT".encode())
    admin.execute(f"CREATE ROLE {OTHER} NOLOGIN".encode())
    admin.execute(f"GRANT {OTHER} TO {LOGIN}".encode())
    admin.execute(f"GRANT SELECT ON mcp_people.notes TO {LOGIN}".encode())
    findings = refusals(audit_dsn(dsn, connect_timeout_s=5, roles=(RED, BLUE, "mcp_id_missing")))
    login = {f.capability for f in findings if not f.role}
    assert {"inherit", "membership", "login-reads"} <= login
    assert [(f.capability, f.role) for f in findings if f.role] == [("mapped-role", "mcp_id_missing")]


def test_a_mapped_roles_own_finding_is_its_own(demo_cluster: Cluster, admin: psycopg.Connection[Any]) -> None:
    admin.execute(f"GRANT INSERT ON mcp_people.notes TO {BLUE}".encode())
    findings = refusals(audit_dsn(_dsn(demo_cluster), connect_timeout_s=5, roles=(RED, BLUE)))
    assert findings, "the write was not found"
    assert {f.role for f in findings} == {BLUE}
    assert all(f.problem.startswith(f"the mapped role {BLUE}: ") for f in findings)
