"""Columns the role may INSERT into or UPDATE where it may not write the whole table."""

from __future__ import annotations

from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["column_write_findings"]


def column_write_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    column_writes = conn.execute(
        "SELECT n.nspname, c.relname, p.priv"
        " FROM pg_catalog.pg_class c"
        " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE']) AS p(priv)"
        " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        " AND n.nspname NOT LIKE 'pg\\_temp\\_%%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%%'"
        " AND NOT pg_catalog.has_table_privilege(c.oid, p.priv)"
        " AND c.oid <> 'pg_catalog.pg_settings'::regclass"
        " AND pg_catalog.has_any_column_privilege(c.oid, p.priv)"
        " ORDER BY 1, 2, 3"
    ).fetchall()
    if not column_writes:
        return []
    names = [f"{ident(conn, s, t)} ({p})" for s, t, p in column_writes]
    return [
        Finding(
            "column-write",
            "the role can write to columns of tables: " + listed(names),
            " ".join(
                f"REVOKE {p} (<columns>) ON {ident(conn, s, t)} FROM {subject.role}, PUBLIC;"
                for s, t, p in column_writes[:MAX_LISTED]
            ),
        )
    ]
