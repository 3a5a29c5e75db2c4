"""The start-up role audit: one role per forbidden capability, each with exactly that capability."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import psycopg
import pytest

from mcp_suite.cli import main
from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.base import StartupRefusedError
from mcp_suite.tools.sql.check_role import CheckRoleRefusedError, check_role
from mcp_suite.tools.sql.engine.role_audit.connect import audit_dsn
from mcp_suite.tools.sql.opener import open_sql
from tests.support.pg import PROBE_PASSWORD as PASSWORD
from tests.support.pg import PROBE_ROLE as ROLE
from tests.support.pg import probe_dsn, sql_settings

pytestmark = pytest.mark.pg

# capability -> statements (with {role}) that give the probe role exactly that capability
CAPABILITIES: dict[str, list[str]] = {
    "superuser": ["ALTER ROLE {role} SUPERUSER"],
    "createrole": ["ALTER ROLE {role} CREATEROLE"],
    "createdb": ["ALTER ROLE {role} CREATEDB"],
    "bypassrls": ["ALTER ROLE {role} BYPASSRLS"],
    "replication": ["ALTER ROLE {role} REPLICATION"],
    "pg_write_all_data": ["GRANT pg_write_all_data TO {role}"],
    "pg_read_server_files": ["GRANT pg_read_server_files TO {role}"],
    "pg_write_server_files": ["GRANT pg_write_server_files TO {role}"],
    "pg_execute_server_program": ["GRANT pg_execute_server_program TO {role}"],
    "pg_signal_backend": ["GRANT pg_signal_backend TO {role}"],
    "membership": ["CREATE ROLE mcp_audit_group NOLOGIN", "GRANT mcp_audit_group TO {role}"],
    "table-insert": ["GRANT INSERT ON docs.pages TO {role}"],
    "table-update": ["GRANT UPDATE ON docs.pages TO {role}"],
    "table-delete": ["GRANT DELETE ON docs.pages TO {role}"],
    "table-truncate": ["GRANT TRUNCATE ON docs.pages TO {role}"],
    "column-insert": ["GRANT INSERT (words) ON docs.pages TO {role}"],
    "column-update": ["GRANT UPDATE (words) ON docs.pages TO {role}"],
    "schema-create": ["GRANT CREATE ON SCHEMA docs TO {role}"],
    "database-create": ["GRANT CREATE ON DATABASE mcp_demo TO {role}"],
    "database-temp": ["GRANT TEMPORARY ON DATABASE mcp_demo TO {role}"],
    "definer-function": [
        "CREATE FUNCTION docs.mcp_probe_definer() RETURNS integer LANGUAGE sql SECURITY DEFINER"
        " AS 'SELECT 1'",
        # the demo's default privileges keep new functions from PUBLIC: a careless DBA grants it
        "GRANT EXECUTE ON FUNCTION docs.mcp_probe_definer() TO PUBLIC",
    ],
    "admin-function": ["GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_file(text) TO {role}"],
    "extension-function": [
        "CREATE EXTENSION dblink SCHEMA public",
        "GRANT EXECUTE ON FUNCTION public.dblink_exec(text) TO {role}",
    ],
    "sequence-usage": [
        "CREATE SEQUENCE docs.mcp_probe_seq",
        "GRANT USAGE ON SEQUENCE docs.mcp_probe_seq TO {role}",
    ],
    "sequence-update": [
        "CREATE SEQUENCE docs.mcp_probe_seq",
        "GRANT UPDATE ON SEQUENCE docs.mcp_probe_seq TO {role}",
    ],
    "large-object-write": [
        "SELECT lo_from_bytea(424242, 'x')",
        "GRANT UPDATE ON LARGE OBJECT 424242 TO {role}",
    ],
    "large-object-owner": ["SELECT lo_from_bytea(424242, 'x')", "ALTER LARGE OBJECT 424242 OWNER TO {role}"],
    "temp-file-limit": ["ALTER ROLE {role} RESET temp_file_limit"],
    # warnings: logged, the server serves
    "ownership": [
        "CREATE FUNCTION docs.mcp_probe_owned() RETURNS integer LANGUAGE sql AS 'SELECT 1'",
        "ALTER FUNCTION docs.mcp_probe_owned() OWNER TO {role}",
    ],
    "foreign-server": [
        "CREATE FOREIGN DATA WRAPPER mcp_probe_fdw",
        "CREATE SERVER mcp_probe_server FOREIGN DATA WRAPPER mcp_probe_fdw",
        "GRANT USAGE ON FOREIGN SERVER mcp_probe_server TO {role}",
    ],
}

# capability -> the finding(s) the audit must report
EXPECTED: dict[str, set[str]] = {
    "table-insert": {"table-write"},
    "table-update": {"table-write"},
    "table-delete": {"table-write"},
    "table-truncate": {"table-write"},
    "column-insert": {"column-write"},
    "column-update": {"column-write"},
    "sequence-usage": {"sequence-write"},
    "sequence-update": {"sequence-write"},
    # an owner may write its large object, and owns it (a warning on top)
    "large-object-owner": {"large-object-write", "ownership"},
}
WARNINGS = {"ownership", "foreign-server"}


def test_the_seeded_reader_passes_the_audit(demo_cluster: Cluster) -> None:
    assert audit_dsn(demo_cluster.reader_dsn, connect_timeout_s=5) == []


def test_a_plain_reader_like_role_passes_the_audit(
    demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> None:
    assert audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5) == []


@pytest.mark.parametrize("capability", sorted(CAPABILITIES))
def test_each_forbidden_capability_is_found_with_its_fix(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], capability: str
) -> None:
    for statement in CAPABILITIES[capability]:
        probe.execute(statement.format(role=ROLE).encode())
    findings = audit_dsn(probe_dsn(demo_cluster), connect_timeout_s=5)
    assert {f.capability for f in findings} == EXPECTED.get(capability, {capability})
    for finding in findings:
        assert finding.fix.startswith(("ALTER ROLE", "REVOKE", "REASSIGN", "use a dedicated role"))
        assert finding.warning == (finding.capability in WARNINGS)
        assert PASSWORD not in finding.problem + finding.fix


def test_the_tool_refuses_to_start_naming_each_problem_and_fix(
    demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> None:
    probe.execute(f"GRANT DELETE ON docs.pages TO {ROLE}".encode())
    probe.execute(f"GRANT TEMPORARY ON DATABASE mcp_demo TO {ROLE}".encode())
    settings = sql_settings(probe_dsn(demo_cluster))
    with pytest.raises(StartupRefusedError) as caught, open_sql(settings):
        pass
    message = str(caught.value)
    assert '"docs"."pages" (DELETE)' in message
    assert "REVOKE DELETE ON" in message
    assert "TEMPORARY on the database" in message
    assert "REVOKE TEMPORARY ON DATABASE" in message
    assert PASSWORD not in message


def test_check_role_prints_findings_and_returns_78(
    demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> None:
    probe.execute(f"ALTER ROLE {ROLE} CREATEDB".encode())
    out = io.StringIO()
    assert check_role(sql_settings(probe_dsn(demo_cluster)), out=out) == 78
    assert "can create databases" in out.getvalue()
    assert PASSWORD not in out.getvalue()
    out = io.StringIO()
    assert check_role(sql_settings(demo_cluster.reader_dsn), out=out) == 0
    assert "can only read" in out.getvalue()


def test_check_role_reports_an_unreachable_database_as_json_on_stderr(
    demo_cluster: Cluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = psycopg.conninfo.make_conninfo(demo_cluster.reader_dsn, port=1)
    out = io.StringIO()
    with pytest.raises(CheckRoleRefusedError) as refused:
        check_role(sql_settings(dsn), out=out)
    assert refused.value.status == 69
    assert out.getvalue() == ""  # the output is the findings; a failure to audit is a refusal
    # The command says the refusal as the CLI says every other: one JSON line on stderr.
    monkeypatch.delenv("MCP_CONFIG", raising=False)
    monkeypatch.setenv("MCP_SQL_DSN", dsn)
    assert main(["check-role"]) == 69
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = (json.loads(text) for text in captured.err.splitlines())
    assert line["level"] == "critical"
    assert line["exit_status"] == 69
    assert line["msg"].startswith("check-role: could not audit the role: ")
    assert "127.0.0.1" not in line["msg"]  # the reason, not the DSN


def test_the_server_process_exits_78_for_a_superuser_dsn(demo_cluster: Cluster) -> None:
    password = demo_cluster.admin_dsn.split("password=")[1].split()[0]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "MCP_SQL_DSN": demo_cluster.admin_dsn,
        "MCP_METRICS_ENABLED": "false",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_suite"],
        env=env,
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 78
    stderr = proc.stderr.decode()
    assert "is a superuser" in stderr
    assert "fix: use a dedicated role that can only read" in stderr  # not ALTER ROLE … NOSUPERUSER
    assert "`mcp-suite role-guide` prints its SQL" in stderr
    assert password not in stderr
    assert proc.stdout == b""


def test_check_role_prints_warnings_and_still_returns_0(
    demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> None:
    for statement in CAPABILITIES["ownership"]:
        probe.execute(statement.format(role=ROLE).encode())
    out = io.StringIO()
    assert check_role(sql_settings(probe_dsn(demo_cluster)), out=out) == 0
    text = out.getvalue()
    assert "warning: the role owns objects" in text
    assert "function docs.mcp_probe_owned()" in text
    assert f"REASSIGN OWNED BY {ROLE}" in text or f'REASSIGN OWNED BY "{ROLE}"' in text
    assert "can only read" in text
