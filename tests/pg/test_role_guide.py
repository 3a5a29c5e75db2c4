"""docs/tools/postgres-role-guide.sql runs as written and yields a role that passes the audit, and
its event trigger notifies the channel the server's audit connection listens on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.role_audit.connect import audit_dsn
from mcp_suite.tools.sql.engine.role_audit.link import CHANNEL
from tests.support.client import REPO, server_env
from tests.support.reaudit import drop_event_trigger

pytestmark = pytest.mark.pg

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "tools" / "postgres-role-guide.sql"
PASSWORD = "guide-test-password"


# The names of part 1 this module gives the guide (psql variables: the file itself is not edited).
NAMES = {"reader": "mcp_guide_reader", "views": "mcp_guide_views", "views_owner": "mcp_guide_views_owner"}
SECOND_DB = "mcp_guide_second"


def _run_guide(dsn: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """The guide as its header says to run it: psql, ON_ERROR_STOP, the names as `-v` variables."""
    from mcp_suite.demo.binaries import find_pg_bin

    argv = [str(find_pg_bin() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", str(GUIDE)]
    for name, value in {"password": PASSWORD, **variables}.items():
        argv[1:1] = ["-v", f"{name}={value}"]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


_GLOBAL_FUNCTION_DEFAULTS = (
    "SELECT defaclrole::regrole::text FROM pg_default_acl WHERE defaclnamespace = 0 AND defaclobjtype = 'f'"
)


def _restore_default_privileges(admin: psycopg.Connection[Any], before: set[str]) -> None:
    """The guide gives every role that can create functions a default privilege: take back those
    the cluster did not have before (the other tests share it), as PostgreSQL's built-in default."""
    for (role,) in admin.execute(_GLOBAL_FUNCTION_DEFAULTS).fetchall():
        if role not in before:
            admin.execute(
                f"ALTER DEFAULT PRIVILEGES FOR ROLE {role} GRANT EXECUTE ON FUNCTIONS TO PUBLIC".encode()
            )


def _dsn_in(dsn: str, database: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, dbname=database)


def _check_role(dsn: str) -> subprocess.CompletedProcess[str]:
    """`mcp-suite check-role`, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_suite", "check-role"],
        capture_output=True,
        text=True,
        env=server_env({"MCP_SQL_DSN": dsn}),
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_the_role_guide_produces_a_role_the_audit_accepts(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        before = {str(role) for (role,) in admin.execute(_GLOBAL_FUNCTION_DEFAULTS).fetchall()}
        try:
            # As on a cluster nobody hardened yet: new functions of the superuser and of the database
            # owner are PUBLIC's to execute (the demo's seed had revoked that); the guide revokes it.
            for role in ("devdb_admin", "docs_owner"):
                admin.execute(
                    f"ALTER DEFAULT PRIVILEGES FOR ROLE {role} GRANT EXECUTE ON FUNCTIONS TO PUBLIC".encode()
                )
            _run_guide(demo_cluster.admin_dsn, **NAMES)
            # Run again, unchanged: every step is idempotent (nothing fails, nothing is granted twice).
            _run_guide(demo_cluster.admin_dsn, **NAMES)
            # A curated view made as the owner, so the guide's default privileges apply to it.
            admin.execute("GRANT USAGE ON SCHEMA docs TO mcp_guide_views_owner")
            admin.execute("GRANT SELECT ON docs.pages TO mcp_guide_views_owner")
            admin.execute("SET ROLE mcp_guide_views_owner")
            admin.execute(
                "CREATE VIEW mcp_guide_views.pages WITH (security_barrier) AS"
                " SELECT slug, section, words FROM docs.pages"
            )
            # A SECURITY DEFINER function made after the guide ran: its default privileges keep
            # PUBLIC (and so the reader) from executing it, and the audit still passes.
            admin.execute(
                "CREATE FUNCTION mcp_guide_views.page_count() RETURNS bigint LANGUAGE sql"
                " SECURITY DEFINER AS 'SELECT count(*) FROM docs.pages'"
            )
            admin.execute("RESET ROLE")
            dsn = demo_cluster.dsn("mcp_guide_reader", PASSWORD)
            assert audit_dsn(dsn, connect_timeout_s=5) == []
            # Step 9's event trigger tells a listening reader connection of each DDL command (the
            # server's audit connection listens so), the command's tag as the payload.
            with psycopg.connect(dsn, autocommit=True) as listener:
                listener.execute(f"LISTEN {CHANNEL}".encode())
                admin.execute("GRANT SELECT ON docs.pages TO mcp_guide_views_owner")
                admin.execute("ALTER FUNCTION mcp_guide_views.page_count() STABLE")
                told = [n.payload for n in listener.notifies(timeout=10, stop_after=2)]
                assert told == ["GRANT", "ALTER FUNCTION"]
            with psycopg.connect(dsn, autocommit=True) as reader:
                rows = reader.execute("SELECT count(*) FROM mcp_guide_views.pages").fetchone()
                assert rows == (30,)
                assert reader.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
                assert reader.execute("SHOW temp_file_limit").fetchone() == ("1GB",)
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    reader.execute("SELECT * FROM docs.pages")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    reader.execute("SELECT mcp_guide_views.page_count()")
            accepted = _check_role(dsn)
            assert accepted.returncode == 0, accepted.stdout + accepted.stderr
            assert "can only read" in accepted.stdout
            assert PASSWORD not in accepted.stdout + accepted.stderr
            # The same role with one grant too many must be refused, with the problem named.
            admin.execute("GRANT CREATE ON SCHEMA mcp_guide_views TO mcp_guide_reader")
            refused = _check_role(dsn)
            assert refused.returncode == 78, refused.stdout + refused.stderr
            assert "CREATE" in refused.stdout
            assert "mcp_guide_views" in refused.stdout
            assert PASSWORD not in refused.stdout + refused.stderr
            # Without the guide's default privileges, the definer function is a finding.
            admin.execute("REVOKE CREATE ON SCHEMA mcp_guide_views FROM mcp_guide_reader")
            admin.execute("GRANT EXECUTE ON FUNCTION mcp_guide_views.page_count() TO PUBLIC")
            refused = _check_role(dsn)
            assert refused.returncode == 78, refused.stdout + refused.stderr
            assert "SECURITY DEFINER function" in refused.stdout
            assert '"mcp_guide_views"."page_count"()' in refused.stdout
            # Without the guide's default privilege for the superuser, its next function would be
            # PUBLIC's: a finding, with the statement that fixes it.
            admin.execute("REVOKE EXECUTE ON FUNCTION mcp_guide_views.page_count() FROM PUBLIC")
            admin.execute(
                "ALTER DEFAULT PRIVILEGES FOR ROLE devdb_admin GRANT EXECUTE ON FUNCTIONS TO PUBLIC"
            )
            refused = _check_role(dsn)
            assert refused.returncode == 78, refused.stdout + refused.stderr
            assert (
                'ALTER DEFAULT PRIVILEGES FOR ROLE "devdb_admin" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;'
                in refused.stdout
            )
        finally:
            _restore_default_privileges(admin, before)
            for role in ("devdb_admin", "docs_owner"):  # as the demo's seed leaves them
                revoke = f"ALTER DEFAULT PRIVILEGES FOR ROLE {role} REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC"
                admin.execute(revoke.encode())
            admin.execute("DROP SCHEMA IF EXISTS mcp_guide_views CASCADE")
            drop_event_trigger(admin)
            for role in ("mcp_guide_reader", "mcp_guide_views_owner"):
                if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    admin.execute(f"DROP OWNED BY {role}".encode())
                    admin.execute(f"DROP ROLE {role}".encode())


def test_the_role_guides_part_2_gives_two_people_their_own_rows_through_the_identity_map(
    demo_cluster: Cluster,
) -> None:
    import json

    from mcp_suite.tools.sql.engine.executor import Executor
    from mcp_suite.tools.sql.engine.identity import CallRole
    from mcp_suite.tools.sql.engine.policy import QueryPolicy, vet_sql
    from mcp_suite.tools.sql.engine.ticket import CallTicket
    from tests.support.pg import sql_settings

    roles = ("mcp_sales", "mcp_support")
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        before = {str(role) for (role,) in admin.execute(_GLOBAL_FUNCTION_DEFAULTS).fetchall()}
        try:
            _run_guide(demo_cluster.admin_dsn, part1="off", part2="on")
            _run_guide(demo_cluster.admin_dsn, part1="off", part2="on")  # again: idempotent
            dsn = demo_cluster.dsn("mcp_login", PASSWORD)
            assert audit_dsn(dsn, connect_timeout_s=5, roles=roles) == []
            executor = Executor(sql_settings(dsn), dsn, roles=roles)
            executor.open()
            executor.mark_audited()
            vetted = QueryPolicy(cache_size=4, vet=vet_sql).vet(
                "SELECT body FROM mcp_notes.notes", max_rows=10
            )
            try:
                seen = {}
                for subject, role in (("ann@example.com", "mcp_sales"), ("bo@example.com", "mcp_support")):
                    as_role = CallRole(role, json.dumps({"sub": subject}), f"mcp-suite/{subject}")
                    ticket = CallTicket(cancel_timeout_s=2)
                    seen[subject] = executor.run_vetted(vetted, max_rows=10, ticket=ticket, role=as_role).rows
            finally:
                executor.close()
            assert seen == {
                "ann@example.com": [["Call the Lisbon customer back"]],
                "bo@example.com": [["Ticket 4312 waits for a log"]],
            }
            # A membership the map does not name is the login role's refusal.
            admin.execute("GRANT mcp_notes_owner TO mcp_login")
            refused = audit_dsn(dsn, connect_timeout_s=5, roles=roles)
            assert "membership" in {f.capability for f in refused}
            assert {f.role for f in refused} == {""}  # the login role's: every call stops
        finally:
            _restore_default_privileges(admin, before)
            admin.execute("DROP SCHEMA IF EXISTS mcp_notes CASCADE")
            for role in ("mcp_login", *roles, "mcp_notes_owner"):
                if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    admin.execute(f"DROP OWNED BY {role}".encode())
                    admin.execute(f"DROP ROLE {role}".encode())


def test_the_role_guide_runs_again_for_a_second_database_and_another_reader_without_editing(
    demo_cluster: Cluster,
) -> None:
    """Issue 53: a second database of the same cluster used to stop at `role "mcp_reader" already
    exists`, and four kinds of placeholders were edited by hand."""
    other = {"reader": "mcp_guide_other", "views": "mcp_guide_views", "views_owner": "mcp_guide_views_owner"}
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        before = {str(role) for (role,) in admin.execute(_GLOBAL_FUNCTION_DEFAULTS).fetchall()}
        admin.execute(f"DROP DATABASE IF EXISTS {SECOND_DB}".encode())
        admin.execute(f"CREATE DATABASE {SECOND_DB}".encode())
        try:
            _run_guide(demo_cluster.admin_dsn, **NAMES)
            second = _dsn_in(demo_cluster.admin_dsn, SECOND_DB)
            _run_guide(second, **NAMES)  # the same reader, the roles already there
            _run_guide(second, **other)  # another reader in it
            for reader, database in (
                (NAMES["reader"], "mcp_demo"),
                (NAMES["reader"], SECOND_DB),
                (other["reader"], SECOND_DB),
            ):
                dsn = _dsn_in(demo_cluster.dsn(reader, PASSWORD), database)
                assert audit_dsn(dsn, connect_timeout_s=5) == [], (reader, database)
            # A creator that appears later: the audit's fix names the database to run it in.
            admin.execute("CREATE ROLE mcp_guide_late_creator NOLOGIN")
            with psycopg.connect(second, autocommit=True) as there:
                there.execute(f"GRANT CREATE ON SCHEMA {NAMES['views']} TO mcp_guide_late_creator".encode())
            refused = _check_role(_dsn_in(demo_cluster.dsn(NAMES["reader"], PASSWORD), SECOND_DB))
            assert refused.returncode == 78, refused.stdout + refused.stderr
            assert f'connected to the database "{SECOND_DB}" (psql -d "{SECOND_DB}")' in refused.stdout
            # Running the guide again in that database gives the new creator its default privilege.
            _run_guide(second, **NAMES)
            passed = _check_role(_dsn_in(demo_cluster.dsn(NAMES["reader"], PASSWORD), SECOND_DB))
            assert passed.returncode == 0, passed.stdout + passed.stderr
        finally:
            _restore_default_privileges(admin, before)
            admin.execute(f"DROP DATABASE IF EXISTS {SECOND_DB} WITH (FORCE)".encode())
            admin.execute("DROP SCHEMA IF EXISTS mcp_guide_views CASCADE")
            drop_event_trigger(admin)
            for role in ("devdb_admin", "docs_owner"):  # as the demo's seed leaves them
                revoke = f"ALTER DEFAULT PRIVILEGES FOR ROLE {role} REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC"
                admin.execute(revoke.encode())
            for role in (NAMES["reader"], other["reader"], NAMES["views_owner"], "mcp_guide_late_creator"):
                if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    admin.execute(f"DROP OWNED BY {role}".encode())
                    admin.execute(f"DROP ROLE {role}".encode())
