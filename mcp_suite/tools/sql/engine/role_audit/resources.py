"""What one query may cost the host (temporary files), and the warnings: objects the role owns, and
foreign servers it may use."""

from __future__ import annotations

from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["foreign_server_findings", "ownership_findings", "temp_file_findings"]


def temp_file_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    (temp_limit,) = conn.execute("SELECT pg_catalog.current_setting('temp_file_limit')").fetchone() or ("-1",)
    if temp_limit != "-1":
        return []
    return [
        Finding(
            "temp-file-limit",
            "the role has no temp_file_limit: one sort or hash of a huge intermediate result can"
            " fill the database host's disk with temporary files",
            f"ALTER ROLE {subject.role} SET temp_file_limit = '1GB'; (as a superuser; or set it in"
            " postgresql.conf)",
        )
    ]


def ownership_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    owned = [
        name
        for (name,) in conn.execute(
            "SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)"
            " FROM pg_catalog.pg_shdepend d"
            " WHERE d.deptype = 'o' AND d.refclassid = 'pg_catalog.pg_authid'::regclass"
            " AND d.refobjid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user)"
            " AND d.dbid IN (0, (SELECT oid FROM pg_catalog.pg_database"
            " WHERE datname = pg_catalog.current_database()))"
            " ORDER BY 1"
        ).fetchall()
    ]
    if not owned:
        return []
    return [
        Finding(
            "ownership",
            "the role owns objects (an owner may change them outside this server): " + listed(owned),
            f"REASSIGN OWNED BY {subject.role} TO <another role>;",
            warning=True,
        )
    ]


def foreign_server_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    servers = [
        f"{ident(conn, server)} ({wrapper})"
        for server, wrapper in conn.execute(
            "SELECT s.srvname, w.fdwname FROM pg_catalog.pg_foreign_server s"
            " JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw"
            " WHERE pg_catalog.has_server_privilege(s.oid, 'USAGE') ORDER BY 1"
        ).fetchall()
    ]
    if not servers:
        return []
    return [
        Finding(
            "foreign-server",
            "the role may use foreign servers (reads through them reach other databases or"
            " files): " + listed(servers),
            " ".join(
                f"REVOKE USAGE ON FOREIGN SERVER {s.split(' ')[0]} FROM {subject.role}, PUBLIC;"
                for s in servers[:MAX_LISTED]
            ),
            warning=True,
        )
    ]
