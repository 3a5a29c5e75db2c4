"""Sequences the role may advance or set: nextval/setval are not rolled back with the transaction."""

from __future__ import annotations

from typing import Any

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["sequence_findings"]


def sequence_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    sequences = conn.execute(
        "SELECT n.nspname, c.relname, pg_catalog.pg_get_userbyid(c.relowner), p.priv"
        " FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " CROSS JOIN unnest(ARRAY['UPDATE', 'USAGE']) AS p(priv)"
        " WHERE c.relkind = 'S' AND pg_catalog.has_sequence_privilege(c.oid, p.priv)"
        " ORDER BY 1, 2, 4"
    ).fetchall()
    by_sequence: dict[tuple[str, str, str], list[str]] = {}
    for schema, name, owner, priv in sequences:
        by_sequence.setdefault((schema, name, owner), []).append(priv)
    if not by_sequence:
        return []
    names = [f"{ident(conn, s, n)} ({', '.join(p)}; owner {o})" for (s, n, o), p in by_sequence.items()]
    return [
        Finding(
            "sequence-write",
            "the role can advance or set sequences (a change no rollback undoes): " + listed(names),
            " ".join(
                f"REVOKE UPDATE, USAGE ON SEQUENCE {ident(conn, s, n)} FROM {subject.role}, PUBLIC;"
                for (s, n, _) in list(by_sequence)[:MAX_LISTED]
            ),
        )
    ]
