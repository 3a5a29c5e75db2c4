"""CREATE and TEMPORARY on the database."""

from __future__ import annotations

from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import Finding
from mcp_suite.tools.sql.engine.role_audit.subject import Subject

__all__ = ["database_findings"]


def database_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    findings: list[Finding] = []
    for priv, capability in (("CREATE", "database-create"), ("TEMPORARY", "database-temp")):
        (allowed,) = conn.execute(
            "SELECT pg_catalog.has_database_privilege(current_database(), %s)", (priv,)
        ).fetchone() or (False,)
        if allowed:
            findings.append(
                Finding(
                    capability,
                    f"the role has {priv} on the database {subject.db}",
                    f"REVOKE {priv} ON DATABASE {subject.db} FROM {subject.role}, PUBLIC;"
                    " (and make sure the role does not own the database)",
                )
            )
    return findings
