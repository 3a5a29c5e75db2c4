"""What the role's functions and views do is judged (issue 51), through the real server over stdio and
a real PostgreSQL.

The server starts with a role that passes the audit and a short re-audit interval. Then a superuser
gives the role a function or a view that would change who a call is, or leak the rows it hides: a
SECURITY INVOKER helper calling `set_config`, a SQL-standard body doing the same, a plpgsql body
running dynamic SQL, a function declared `SET role = ...`, a view calling `set_config`, and a view
filtering a table the role may not read without `security_barrier`, and a row-level security
policy (run as the caller in every read of its table) calling `set_config`. Each stops every SQL surface at
the next re-audit (`role-refused`, naming the object and the finding's kind), and is served again
once fixed; `check-role` prints the fix. On the code before issue 51 every re-audit passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Final

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.role_audit.audit import audit_connection
from tests.support.client import REPO, ServerProcess, problem_of, server_env
from tests.support.pg import PROBE_ROLE, probe_dsn
from tests.support.reaudit import reauditing_server, refused, served, sql_surfaces, until

pytestmark = pytest.mark.pg

SCHEMA: Final = "mcp_bodies"
# A re-audit every 1.5 s, not the harness's 0.3 s: on a loaded machine an audit may outlast two short
# intervals, and the gate then answers role-unaudited instead (as test_http_identity says).
INTERVAL_S: Final = "1.5"
# (name, the superuser's statements making it, the finding's kind, the object the problem names,
# the statement that fixes it)
HAZARDS: Final = (
    (
        "invoker-helper-set-config",
        f"CREATE FUNCTION {SCHEMA}.become(who text) RETURNS text LANGUAGE sql"
        " AS $$ SELECT pg_catalog.set_config('role', who, true) $$",
        "function-body",
        f"{SCHEMA}.become(text)",
        f"REVOKE EXECUTE ON FUNCTION {SCHEMA}.become(text) FROM {PROBE_ROLE}",
    ),
    (
        "standard-body-rewrites-claims",
        f"CREATE FUNCTION {SCHEMA}.claims(c text) RETURNS text LANGUAGE sql"
        " RETURN pg_catalog.set_config('request.jwt.claims', c, true)",
        "function-body",
        f"{SCHEMA}.claims(text)",
        f"DROP FUNCTION {SCHEMA}.claims(text)",
    ),
    (
        "plpgsql-dynamic-sql",
        f"CREATE FUNCTION {SCHEMA}.run(q text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE q; END $$",
        "function-body",
        f"{SCHEMA}.run(text)",
        f"REVOKE EXECUTE ON FUNCTION {SCHEMA}.run(text) FROM {PROBE_ROLE}",
    ),
    (
        "function-set-role",
        "SET check_function_bodies = off;"
        f" CREATE FUNCTION {SCHEMA}.as_admin() RETURNS text LANGUAGE sql SET role = pg_monitor"
        " AS $$ SELECT current_user::text $$",
        "function-config",
        f"{SCHEMA}.as_admin()",
        f"ALTER FUNCTION {SCHEMA}.as_admin() RESET role",
    ),
    (
        "argument-default-set-config",
        f"CREATE FUNCTION {SCHEMA}.page(n int, who text DEFAULT pg_catalog.set_config('role', 'x', true))"
        " RETURNS int LANGUAGE sql AS $$ SELECT n $$",
        "function-body",
        f"{SCHEMA}.page(integer,text)",
        f"DROP FUNCTION {SCHEMA}.page(integer, text)",
    ),
    (
        "view-calls-set-config",
        f"CREATE VIEW {SCHEMA}.pages AS SELECT slug,"
        " pg_catalog.set_config('request.jwt.claims', '{\"sub\":\"x\"}', true) AS c FROM docs.pages",
        "view-body",
        f"{SCHEMA}.pages",
        f"DROP VIEW {SCHEMA}.pages",
    ),
    (
        "policy-calls-set-config",
        f"CREATE TABLE {SCHEMA}.notes (owner text, body text);"
        f" ALTER TABLE {SCHEMA}.notes ENABLE ROW LEVEL SECURITY;"
        f" CREATE POLICY mine ON {SCHEMA}.notes FOR SELECT"
        " USING (pg_catalog.set_config('request.jwt.claims', '{\"sub\":\"ann\"}', true) IS NOT NULL)",
        "policy-body",
        f"{SCHEMA}.notes",
        f"DROP POLICY mine ON {SCHEMA}.notes",
    ),
    (
        "view-without-barrier",
        f"CREATE VIEW {SCHEMA}.first_editor AS SELECT editor_id FROM docs.editors WHERE editor_id = 'e-1'",
        "view-barrier",
        f"{SCHEMA}.first_editor",
        f"ALTER VIEW {SCHEMA}.first_editor SET (security_barrier = true)",
    ),
)


@pytest.fixture
def schema(probe: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """A schema the probe role may use, dropped afterwards; yields the superuser's connection."""
    probe.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE".encode())
    probe.execute(f"CREATE SCHEMA {SCHEMA}".encode())
    probe.execute(f"GRANT USAGE ON SCHEMA {SCHEMA} TO {PROBE_ROLE}".encode())
    try:
        yield probe
    finally:
        probe.execute("RESET check_function_bodies")
        probe.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE".encode())


def _make(admin: psycopg.Connection[Any], statements: str) -> None:
    admin.execute(statements.encode())
    admin.execute(f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} TO {PROBE_ROLE}".encode())
    admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {SCHEMA} TO {PROBE_ROLE}".encode())


@pytest.mark.parametrize(
    ("make", "kind", "named", "fix"), [h[1:] for h in HAZARDS], ids=[h[0] for h in HAZARDS]
)
def test_a_function_or_view_that_could_change_identity_stops_every_sql_surface_until_fixed(
    demo_cluster: Cluster, schema: psycopg.Connection[Any], make: str, kind: str, named: str, fix: str
) -> None:
    server: ServerProcess
    with reauditing_server(probe_dsn(demo_cluster), MCP_SQL_REAUDIT_INTERVAL_S=INTERVAL_S) as server:
        _make(schema, make)
        problem = problem_of(until(server, refused))
        assert problem["metadata"]["findings"] == [kind], problem
        assert named in problem["detail"], problem["detail"]
        for surface, refusal in sql_surfaces(server, "SELECT 1"):
            assert refusal.get("type", "").endswith(":role-refused"), (surface, refusal)
        schema.execute(fix.encode())
        assert served(until(server, served))


def test_check_role_prints_each_finding_with_its_fix(
    demo_cluster: Cluster, schema: psycopg.Connection[Any]
) -> None:
    for _name, make, _kind, _named, _fix in HAZARDS:
        _make(schema, make)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "check-role"],
        env=server_env({"MCP_SQL_DSN": probe_dsn(demo_cluster), "PYTHONPATH": str(REPO)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == os.EX_CONFIG, done.stderr
    for fix in (
        f'REVOKE EXECUTE ON FUNCTION {SCHEMA}.become(text) FROM PUBLIC, "{PROBE_ROLE}";',
        f"ALTER FUNCTION {SCHEMA}.as_admin() RESET role;",
        f'REVOKE SELECT ON {SCHEMA}.pages FROM PUBLIC, "{PROBE_ROLE}";',
        f"ALTER VIEW {SCHEMA}.first_editor SET (security_barrier = true);",
    ):
        assert fix in done.stdout, done.stdout


def test_a_view_with_security_barrier_or_over_readable_rows_passes(
    demo_cluster: Cluster, schema: psycopg.Connection[Any]
) -> None:
    # The guide's own shapes: a barrier view over a hidden table, a filter over a table the role
    # reads in full, a clean helper. None of them is a finding.
    _make(
        schema,
        f"CREATE VIEW {SCHEMA}.e1 WITH (security_barrier) AS SELECT editor_id FROM docs.editors"
        " WHERE editor_id = 'e-1';"
        f" CREATE VIEW {SCHEMA}.long_pages AS SELECT slug FROM docs.pages WHERE words > 100;"
        f" CREATE FUNCTION {SCHEMA}.shout(t text) RETURNS text LANGUAGE sql AS $$ SELECT upper(t) $$;"
        f" CREATE FUNCTION {SCHEMA}.twice(n int) RETURNS int LANGUAGE plpgsql"
        " AS $$ BEGIN RETURN n * 2; END $$;"
        # The identity map's own kind of policy: it reads the claims, it does not write them.
        f" CREATE TABLE {SCHEMA}.notes (owner text, body text);"
        f" ALTER TABLE {SCHEMA}.notes ENABLE ROW LEVEL SECURITY;"
        f" CREATE POLICY own ON {SCHEMA}.notes FOR SELECT"
        " USING (owner = pg_catalog.current_setting('request.jwt.claims', true)::json ->> 'sub')",
    )
    with psycopg.connect(probe_dsn(demo_cluster)) as conn:
        assert audit_connection(conn) == []
