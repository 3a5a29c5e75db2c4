"""Tables, views and foreign tables the role may INSERT into, UPDATE, DELETE from or TRUNCATE."""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["table_write_findings"]

_TABLE_WRITES: Final = ("INSERT", "UPDATE", "DELETE", "TRUNCATE")


def table_write_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    writable = conn.execute(
        "SELECT n.nspname, c.relname, p.priv"
        " FROM pg_catalog.pg_class c"
        " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " CROSS JOIN unnest(%s::text[]) AS p(priv)"
        " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        " AND n.nspname NOT LIKE 'pg\\_temp\\_%%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%%'"
        " AND pg_catalog.has_table_privilege(c.oid, p.priv)"
        # pg_settings is UPDATE-able by PUBLIC by design: it is SET in view form, and a SET
        # made inside our read-only transaction is rolled back with it.
        " AND c.oid <> 'pg_catalog.pg_settings'::regclass"
        " ORDER BY 1, 2, 3",
        (list(_TABLE_WRITES),),
    ).fetchall()
    by_table: dict[tuple[str, str], list[str]] = {}
    for schema, table, priv in writable:
        by_table.setdefault((schema, table), []).append(priv)
    if not by_table:
        return []
    names = [f"{ident(conn, s, t)} ({', '.join(p)})" for (s, t), p in by_table.items()]
    fixes = [
        f"REVOKE {', '.join(p)} ON {ident(conn, s, t)} FROM {subject.role}, PUBLIC;"
        for (s, t), p in list(by_table.items())[:MAX_LISTED]
    ]
    return [
        Finding(
            "table-write",
            "the role can write to tables: " + listed(names),
            " ".join(fixes) + " (or transfer ownership away from the role)",
        )
    ]
