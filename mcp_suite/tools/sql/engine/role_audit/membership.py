"""Memberships: the dangerous predefined roles, and any other role SET ROLE could switch to."""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["DANGEROUS_PREDEFINED_ROLES", "membership_findings", "predefined_findings"]

DANGEROUS_PREDEFINED_ROLES: Final = (
    "pg_write_all_data",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_signal_backend",
)


def predefined_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    findings: list[Finding] = []
    for predefined in DANGEROUS_PREDEFINED_ROLES:
        (member,) = conn.execute(
            "SELECT pg_catalog.pg_has_role(current_user, %s, 'MEMBER')", (predefined,)
        ).fetchone() or (False,)
        if member:
            findings.append(
                Finding(
                    predefined,
                    f"the role is a member of {predefined}",
                    f"REVOKE {predefined} FROM {subject.role};",
                )
            )
    return findings


def membership_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    others = [
        r
        for (r,) in conn.execute(
            "SELECT g.rolname FROM pg_catalog.pg_auth_members m"
            " JOIN pg_catalog.pg_roles g ON g.oid = m.roleid"
            " JOIN pg_catalog.pg_roles u ON u.oid = m.member"
            " WHERE u.rolname = current_user ORDER BY 1"
        ).fetchall()
        if r not in DANGEROUS_PREDEFINED_ROLES and r not in subject.mapped
    ]
    if not others:
        return []
    return [
        Finding(
            "membership",
            "the role is a member of other roles (SET ROLE could switch to them): " + listed(others),
            " ".join(f"REVOKE {ident(conn, r)} FROM {subject.role};" for r in others[:MAX_LISTED]),
        )
    ]
