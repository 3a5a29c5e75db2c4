"""Schemas the role may create objects in."""

from __future__ import annotations

from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["schema_findings"]


def schema_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    schemas = [
        s
        for (s,) in conn.execute(
            "SELECT nspname FROM pg_catalog.pg_namespace"
            " WHERE nspname NOT LIKE 'pg\\_temp\\_%%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%%'"
            " AND pg_catalog.has_schema_privilege(oid, 'CREATE') ORDER BY 1"
        ).fetchall()
    ]
    if not schemas:
        return []
    return [
        Finding(
            "schema-create",
            "the role can create objects in schemas: " + listed(schemas),
            " ".join(
                f"REVOKE CREATE ON SCHEMA {ident(conn, s)} FROM {subject.role}, PUBLIC;"
                for s in schemas[:MAX_LISTED]
            )
            + " (and make sure the role owns no schema)",
        )
    ]
