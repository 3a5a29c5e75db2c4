"""The role's attributes (superuser, CREATEROLE, CREATEDB, BYPASSRLS, REPLICATION)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import GUIDE_HINT, Finding

__all__ = ["Role", "attribute_findings", "read_role"]


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    database: str
    superuser: bool
    create_role: bool
    create_db: bool
    bypass_rls: bool
    replication: bool


def read_role(conn: psycopg.Connection[Any]) -> Role | None:
    """`current_user`'s row of pg_roles, with the database's name."""
    row = conn.execute(
        "SELECT current_user, current_database(), rolsuper, rolcreaterole, rolcreatedb,"
        " rolbypassrls, rolreplication FROM pg_catalog.pg_roles WHERE rolname = current_user"
    ).fetchone()
    return None if row is None else Role(*row)


def attribute_findings(role: Role, quoted_role: str) -> list[Finding]:
    # A superuser is an administrator's account, not one to strip: the fix is another role.
    dedicated = f"use a dedicated role that can only read, not {quoted_role} ({GUIDE_HINT})"
    attributes = (
        (role.superuser, "superuser", "is a superuser", dedicated),
        (role.create_role, "createrole", "can create roles", f"ALTER ROLE {quoted_role} NOCREATEROLE;"),
        (role.create_db, "createdb", "can create databases", f"ALTER ROLE {quoted_role} NOCREATEDB;"),
        (
            role.bypass_rls,
            "bypassrls",
            "bypasses row-level security",
            f"ALTER ROLE {quoted_role} NOBYPASSRLS;",
        ),
        (
            role.replication,
            "replication",
            "may start replication",
            f"ALTER ROLE {quoted_role} NOREPLICATION;",
        ),
    )
    return [
        Finding(capability, f"the role {problem}", fix)
        for flag, capability, problem, fix in attributes
        if flag
    ]
