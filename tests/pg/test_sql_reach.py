"""What the role can reach: the audit refuses code PostgreSQL runs for it without checking EXECUTE,
a search_path that shadows pg_catalog, and roles whose new functions PUBLIC could execute.

Each hazard is made first as a careless superuser would; where a program could run, a temporary file
is the witness that it did (or, behind a refused start-up, did not)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.check_role import check_role
from mcp_suite.tools.sql.engine.role_audit.audit import audit_connection
from mcp_suite.tools.sql.engine.role_audit.connect import audit_dsn
from tests.support.pg import PROBE_ROLE as ROLE
from tests.support.pg import probe_dsn, sql_settings
from tests.support.reach import CREATORS, HAZARDS, REACH_SCHEMA, drop_creator, make_hazard

pytestmark = pytest.mark.pg


def _server(dsn: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    """The real server, started on this DSN with empty stdin (it audits, then serves or exits)."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_suite"],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "MCP_SQL_DSN": dsn,
            "MCP_METRICS_ENABLED": "false",
            **env,
        },
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )


def _log(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The messages of the server's log (JSON lines on stderr)."""
    return "\n".join(
        json.loads(line)["msg"] for line in proc.stderr.decode().splitlines() if line.startswith("{")
    )


@pytest.mark.parametrize("path", sorted(HAZARDS))
def test_each_path_to_a_hazard_is_refused_naming_the_path_its_owner_and_the_fix(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path], path: str
) -> None:
    admin, witness = hazards
    expected = make_hazard(admin, path, str(witness))
    findings = audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5)
    assert [(f.capability, f.warning) for f in findings] == [("reach", False)]
    (finding,) = findings
    assert expected in finding.problem
    assert "without checking EXECUTE" in finding.problem
    assert "(function owner devdb_admin" in finding.problem
    assert finding.fix.startswith(("ALTER FUNCTION", "REVOKE EXECUTE ON FUNCTION", "remove the"))
    proc = _server(probe_dsn(demo_cluster))  # the real server: refuses to start, naming the path
    assert proc.returncode == 78
    assert expected in _log(proc)
    assert not witness.exists()


def test_an_aggregate_runs_its_definer_step_for_the_role_so_the_server_refuses_to_start(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, witness = hazards
    make_hazard(admin, "aggregate-transition", str(witness))
    admin.execute(f"GRANT USAGE ON SCHEMA {REACH_SCHEMA} TO {ROLE}".encode())
    proc = _server(probe_dsn(demo_cluster))
    assert proc.returncode == 78
    stderr = _log(proc)
    assert (
        "aggregate mcp_reach.export_agg(text) → transition function mcp_reach.export_step(text,text)"
        in stderr
    )
    assert "REVOKE EXECUTE ON FUNCTION mcp_reach.export_agg(text)" in stderr
    assert not witness.exists()  # nothing ran
    # The hazard is real: the role, which may not EXECUTE the step, runs a program through the aggregate.
    with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT mcp_reach.export_step('a', 'b')")
        conn.execute("SELECT mcp_reach.export_agg(slug) FROM docs.pages")
    assert witness.exists()


def test_array_equality_runs_an_operator_familys_definer_function_for_the_role_so_the_server_refuses(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, witness = hazards
    make_hazard(admin, "operator-family-operator", str(witness))
    admin.execute(f"GRANT USAGE ON SCHEMA {REACH_SCHEMA} TO {ROLE}".encode())
    proc = _server(probe_dsn(demo_cluster))
    assert proc.returncode == 78
    assert "whose function is mcp_reach.mood_eq(mcp_reach.mood,mcp_reach.mood)" in _log(proc)
    assert not witness.exists()
    with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # named, the operator is checked
            conn.execute("SELECT 'ok'::mcp_reach.mood OPERATOR(mcp_reach.=) 'ok'")
        # unnamed, through the type cache, it is not
        conn.execute("SELECT ARRAY['ok'::mcp_reach.mood] = ARRAY['ok'::mcp_reach.mood]")
    assert witness.exists()


def test_an_accepted_definer_function_reached_by_an_aggregate_is_a_logged_warning(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, witness = hazards
    make_hazard(admin, "aggregate-transition", str(witness))
    findings = audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5, accepted=("mcp_reach.export_step",))
    assert [(f.capability, f.warning) for f in findings] == [("reach-accepted", True)]
    assert "MCP_SQL_ACCEPT_DEFINER_FUNCTIONS" in findings[0].problem


def test_a_search_path_before_pg_catalog_is_refused_because_a_schema_shadows_max(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, _ = hazards
    admin.execute(f"CREATE SCHEMA {REACH_SCHEMA}".encode())
    admin.execute(f"GRANT USAGE ON SCHEMA {REACH_SCHEMA} TO {ROLE}".encode())
    # Not a maximum at all: a sum, under the built-in's name.
    admin.execute(
        f"CREATE AGGREGATE {REACH_SCHEMA}.max(integer) (SFUNC = pg_catalog.int4pl, STYPE = integer)".encode()
    )
    admin.execute(f"GRANT EXECUTE ON FUNCTION {REACH_SCHEMA}.max(integer) TO PUBLIC".encode())
    admin.execute(f"ALTER ROLE {ROLE} SET search_path = {REACH_SCHEMA}, pg_catalog, public".encode())
    with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as conn:
        shadowed = conn.execute("SELECT max(words), pg_catalog.max(words) FROM docs.pages").fetchone()
    assert shadowed is not None
    assert shadowed[0] != shadowed[1]  # the shadow ran
    findings = audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5)
    assert [f.capability for f in findings] == ["search-path"]
    assert "mcp_reach come before pg_catalog" in findings[0].problem
    assert "SET search_path = pg_catalog, " in findings[0].fix
    proc = _server(probe_dsn(demo_cluster))
    assert proc.returncode == 78
    assert "before pg_catalog" in _log(proc)
    out = io.StringIO()
    assert check_role(sql_settings(probe_dsn(demo_cluster)), out=out) == 78
    assert "come before pg_catalog" in out.getvalue()
    # pg_catalog named first, the same schemas after it: the audit passes.
    admin.execute(f"ALTER ROLE {ROLE} SET search_path = pg_catalog, {REACH_SCHEMA}, public".encode())
    assert audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5) == []


def test_a_search_path_set_after_a_session_started_is_refused_on_that_session_too(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, _ = hazards
    admin.execute(f"CREATE SCHEMA {REACH_SCHEMA}".encode())
    with psycopg.connect(probe_dsn(demo_cluster), autocommit=True) as pooled:  # started before the change
        assert audit_connection(pooled) == []
        admin.execute(f"ALTER ROLE {ROLE} SET search_path = {REACH_SCHEMA}, pg_catalog".encode())
        assert [f.capability for f in audit_connection(pooled)] == ["search-path"]
        # The role-and-database setting wins over the role's, as in PostgreSQL.
        admin.execute(
            f"ALTER ROLE {ROLE} IN DATABASE mcp_demo SET search_path = pg_catalog, {REACH_SCHEMA}".encode()
        )
        assert audit_connection(pooled) == []
    assert audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5) == []


@pytest.mark.parametrize("case", sorted(CREATORS))
def test_a_role_that_can_create_functions_the_reader_could_run_is_refused_with_the_default_privilege_fix(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path], case: str
) -> None:
    admin, _ = hazards
    statements, fix = CREATORS[case]
    try:
        for statement in statements:
            admin.execute(statement.encode())
        findings = audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5)
        assert [(f.capability, f.warning) for f in findings] == [("function-creator", False)]
        assert "mcp_reach_creator" in findings[0].problem
        # Default privileges are per database: the fix names the one to run it in.
        where = (
            'connected to the database "mcp_demo" (psql -d "mcp_demo") as a superuser or'
            ' "mcp_reach_creator", run: '
        )
        assert findings[0].fix.startswith(where + fix)
        assert "MCP_SQL_ACCEPT_FUNCTION_CREATORS" in findings[0].fix
        # The printed fix is the whole fix.
        admin.execute(fix.encode())
        assert audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5) == []
    finally:
        drop_creator(admin)


def test_a_creator_named_in_the_setting_is_a_logged_risk_and_the_server_serves(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, _ = hazards
    try:
        admin.execute("CREATE ROLE mcp_reach_creator NOLOGIN")
        admin.execute("GRANT CREATE ON SCHEMA docs TO mcp_reach_creator")
        proc = _server(probe_dsn(demo_cluster))
        assert proc.returncode == 78
        assert 'ALTER DEFAULT PRIVILEGES FOR ROLE "mcp_reach_creator"' in _log(proc)
        findings = audit_dsn(
            probe_dsn(demo_cluster), connect_timeout_s=5, accepted_creators=("mcp_reach_creator",)
        )
        assert [(f.capability, f.warning) for f in findings] == [("function-creator-accepted", True)]
        assert "accepted as a known risk by MCP_SQL_ACCEPT_FUNCTION_CREATORS" in findings[0].problem
        out = io.StringIO()
        settings = sql_settings(probe_dsn(demo_cluster), sql_accept_function_creators=("mcp_reach_creator",))
        assert check_role(settings, out=out) == 0
        assert "warning: the role mcp_reach_creator" in out.getvalue()
        proc = _server(probe_dsn(demo_cluster), MCP_SQL_ACCEPT_FUNCTION_CREATORS="mcp_reach_creator")
        assert proc.returncode == 0
        assert "accepted as a known risk by MCP_SQL_ACCEPT_FUNCTION_CREATORS" in _log(proc)
    finally:
        drop_creator(admin)


def test_check_role_reports_a_reach_path_and_returns_78(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, witness = hazards
    make_hazard(admin, "operator-family-support", str(witness))
    out = io.StringIO()
    assert check_role(sql_settings(probe_dsn(demo_cluster)), out=out) == 78
    assert "operator family mcp_reach.odd_ops (btree) → support function 1" in out.getvalue()
    assert not witness.exists()
