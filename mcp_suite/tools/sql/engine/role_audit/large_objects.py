"""Large objects the role may write: every one when lo_compat_privileges is on, else those it owns
or has UPDATE on (a write that needs no table)."""

from __future__ import annotations

from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject

__all__ = ["large_object_findings"]


def large_object_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    findings: list[Finding] = []
    (compat,) = conn.execute(
        "SELECT pg_catalog.current_setting('lo_compat_privileges')::bool"
    ).fetchone() or (False,)
    if compat:
        findings.append(
            Finding(
                "large-object-write",
                "lo_compat_privileges is on: every role may write every large object",
                "ALTER SYSTEM SET lo_compat_privileges = off; SELECT pg_reload_conf();",
            )
        )
    objects = conn.execute(
        "SELECT l.oid::int8, pg_catalog.pg_get_userbyid(l.lomowner)"
        " FROM pg_catalog.pg_largeobject_metadata l"
        " WHERE pg_catalog.pg_has_role(l.lomowner, 'USAGE') OR EXISTS ("
        " SELECT 1 FROM pg_catalog.aclexplode(l.lomacl) a WHERE a.privilege_type = 'UPDATE'"
        " AND CASE WHEN a.grantee = 0 THEN true ELSE pg_catalog.pg_has_role(a.grantee, 'USAGE') END)"
        " ORDER BY 1"
    ).fetchall()
    if objects:
        findings.append(
            Finding(
                "large-object-write",
                "the role can write large objects: "
                + listed([f"{oid} (owner {owner})" for oid, owner in objects]),
                " ".join(
                    f"REVOKE UPDATE ON LARGE OBJECT {oid} FROM {subject.role}, PUBLIC;"
                    for oid, _ in objects[:MAX_LISTED]
                )
                + " (and ALTER LARGE OBJECT ... OWNER TO another role for those it owns)",
            )
        )
    return findings
