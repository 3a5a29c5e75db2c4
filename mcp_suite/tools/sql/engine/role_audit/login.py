"""The login role of an identity map (issue 42): it holds nothing and reaches exactly the mapped roles.

With identity mapping on, every call switches to a mapped role (`SET LOCAL ROLE`), so the DSN's own
role must be able to do nothing by itself: NOINHERIT (none of the mapped roles' privileges are its
own), no relation it can read itself, and every mapped role reachable by `SET ROLE`. A membership
of any other role is `membership.py`'s refusal; each mapped role is audited in its own right
(`audit.audit_with_settings`). Runs inside the audit's transaction, as the login role.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["login_findings", "reachable_roles"]

# Relations outside PostgreSQL's own schemas that `current_user` can read by its own grants (or
# PUBLIC's): under NOINHERIT, what a mapped role may read does not count.
_READABLE_SQL = (
    "SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c"
    " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relkind = ANY (ARRAY['r', 'v', 'm', 'f', 'p']::\"char\"[])"
    " AND n.nspname <> ALL (ARRAY['pg_catalog', 'information_schema'])"
    " AND NOT pg_catalog.starts_with(n.nspname::text, 'pg_')"
    " AND (pg_catalog.has_table_privilege(c.oid, 'SELECT')"
    " OR pg_catalog.has_any_column_privilege(c.oid, 'SELECT'))"
    " ORDER BY 1, 2"
)


# PostgreSQL 16 gave each membership its own INHERIT and SET options (a grant WITH INHERIT TRUE
# inherits whatever the member's NOINHERIT says; one WITH SET FALSE cannot be switched to).
_PG16: Final = 160000


def reachable_roles(conn: psycopg.Connection[Any], roles: frozenset[str]) -> frozenset[str]:
    """The roles among `roles` that exist and `current_user` may switch to (`SET ROLE`)."""
    privilege = "SET" if conn.info.server_version >= _PG16 else "MEMBER"
    rows = conn.execute(
        "SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = ANY(%s)"
        " AND pg_catalog.pg_has_role(current_user, oid, %s)",
        (sorted(roles), privilege),
    ).fetchall()
    return frozenset(name for (name,) in rows)


def login_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """The login role's own refusals: INHERIT, a relation it can read itself, a mapped role it
    cannot switch to (that role's finding: its calls alone stop)."""
    findings: list[Finding] = []
    (inherit,) = conn.execute(
        "SELECT rolinherit FROM pg_catalog.pg_roles WHERE rolname = current_user"
    ).fetchone() or (True,)
    if not inherit and conn.info.server_version >= _PG16:
        inherit = bool(
            conn.execute(
                "SELECT 1 FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles u"
                " ON u.oid = m.member WHERE u.rolname = current_user AND m.inherit_option"
            ).fetchone()
        )
    if inherit:
        findings.append(
            Finding(
                "inherit",
                "the login role of an identity map inherits its roles' privileges (it must be NOINHERIT,"
                " and on PostgreSQL 16+ no grant to it WITH INHERIT TRUE: a call runs as a mapped role,"
                " never as the login role)",
                f"ALTER ROLE {subject.role} NOINHERIT; (PostgreSQL 16+: GRANT <role> TO {subject.role}"
                " WITH INHERIT FALSE for each of its roles)",
            )
        )
    readable = [ident(conn, schema, name) for schema, name in conn.execute(_READABLE_SQL).fetchall()]
    if readable:
        findings.append(
            Finding(
                "login-reads",
                "the login role of an identity map can read relations itself: " + listed(readable),
                " ".join(
                    f"REVOKE SELECT ON {name} FROM {subject.role}, PUBLIC;"  # noqa: S608  # printed, never run
                    for name in readable[:MAX_LISTED]
                ),
            )
        )
    reachable = reachable_roles(conn, subject.mapped)
    findings.extend(
        Finding(
            "mapped-role",
            f"the mapped role {role} does not exist, or the login role cannot switch to it (SET ROLE)",
            f"GRANT {ident(conn, role)} TO {subject.role};"
            + (
                " (WITH INHERIT FALSE, SET TRUE on PostgreSQL 16+)"
                if conn.info.server_version >= _PG16
                else ""
            ),
            role=role,
        )
        for role in sorted(subject.mapped - reachable)
    )
    return findings
