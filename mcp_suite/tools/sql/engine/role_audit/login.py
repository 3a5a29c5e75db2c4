"""The login role of an identity map (issue 42): it holds nothing and reaches exactly the mapped roles.

And who a session is (issue 51): no setting makes a new session start as another role
(`session_findings`, for every login role); the login role's reach, followed through every
membership, holds mapped roles only and none that is privileged (`reach_closure_findings`). Each
is the login role's finding (every call stops): any call's code can switch to whatever the login
role reaches (an invoker helper calling `set_config('role', ...)`), so none stops one role only. A
function declared to switch the role or the claims while it runs is `bodies.py`'s finding
(`function-config`), for every audited role that may execute it.

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

__all__ = [
    "login_findings",
    "reach_closure_findings",
    "reachable_roles",
    "session_findings",
]

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
    findings.extend(reach_closure_findings(conn, subject))
    return findings


# The settings that make a session start as someone else than its login role, however it was set
# (ALTER ROLE <login> [IN DATABASE ...] SET, ALTER DATABASE ... SET). `search_path` is the search
# path check's (`defaults.py`; calls put pg_catalog first anyway); `request.jwt.*` is set by every
# mapped call itself, and an unmapped call claims no one (docs/tools/read_only_sql.md).
_SESSION_SETTINGS_SQL: Final = (
    "SELECT CASE WHEN s.setrole = 0 THEN 'database' WHEN s.setdatabase = 0 THEN 'role'"
    " ELSE 'role in database' END, pg_catalog.split_part(c, '=', 1), c"
    " FROM pg_catalog.pg_db_role_setting s CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS c"
    " WHERE pg_catalog.split_part(c, '=', 1) = ANY (ARRAY['role', 'session_authorization'])"
    " AND s.setrole IN (0, (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = session_user))"
    " AND s.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database"
    " WHERE datname = pg_catalog.current_database()))"
    " ORDER BY 1, 2"
)


def session_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """A setting that makes every new session of the login role start as another role: calls
    would read as it, and a re-audit on an older connection would not see it."""
    findings: list[Finding] = []
    for scope, name, setting in conn.execute(_SESSION_SETTINGS_SQL).fetchall():
        fix = {
            "database": f"ALTER DATABASE {subject.db} RESET {name};",
            "role": f"ALTER ROLE {subject.role} RESET {name};",
            "role in database": f"ALTER ROLE {subject.role} IN DATABASE {subject.db} RESET {name};",
        }[scope]
        findings.append(
            Finding(
                "session-role",
                f"a new session of the login role starts as another role: the {scope} setting"
                f" {setting!r} (calls would read as it)",
                fix,
            )
        )
    return findings


# Every role the login role reaches, through any chain of memberships: one it may switch to (SET
# ROLE; PostgreSQL 16's SET option) or whose privileges it holds (INHERIT), with what makes it
# privileged and who holds it directly (for the fix). PostgreSQL's predefined roles are those below
# the first normal object id; each of them grants more than reading the caller's rows (reading or
# writing every table, the server's files or programs, other sessions' queries and settings).
_REACH_SQL: Final = """
WITH reach AS (
  SELECT r.oid, r.rolname FROM pg_catalog.pg_roles r
  WHERE {reaches}
)
SELECT g.rolname::text, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolreplication,
       g.oid < 16384 AS predefined,
       ARRAY(SELECT u.rolname::text FROM pg_catalog.pg_auth_members m JOIN reach u ON u.oid = m.member
             WHERE m.roleid = g.oid ORDER BY 1) AS via,
       current_user::text AS login
FROM reach g JOIN pg_catalog.pg_roles r ON r.oid = g.oid
WHERE g.rolname <> current_user ORDER BY 1
"""
_REACHES_PG16: Final = " OR ".join(
    f"pg_catalog.pg_has_role(current_user, r.oid, '{option}')" for option in ("SET", "USAGE")
)
_REACHES_OLDER: Final = "pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER')"


def reach_closure_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """The login role's reach, closed: every role it reaches is a mapped role, and none is
    privileged (superuser, BYPASSRLS, CREATEROLE, REPLICATION, or a predefined pg_* role) whatever
    the map says. Direct memberships of unmapped roles are `membership.py`'s findings already."""
    reaches = _REACHES_PG16 if conn.info.server_version >= _PG16 else _REACHES_OLDER
    rows = conn.execute(_REACH_SQL.format(reaches=reaches)).fetchall()
    findings: list[Finding] = []
    for name, superuser, bypass, createrole, replication, predefined, via, login in rows:
        direct = login in via
        what = [
            label
            for flag, label in (
                (superuser, "is a superuser"),
                (bypass, "bypasses row-level security"),
                (createrole, "can create roles"),
                (replication, "may start replication"),
                (predefined, "is a predefined role"),
            )
            if flag
        ]
        role = ident(conn, name)
        holders = [h for h in via if h != name] or [subject.role]
        fix = " ".join(f"REVOKE {role} FROM {ident(conn, h)};" for h in holders[:MAX_LISTED])
        path = "directly" if direct else "through " + listed(holders)
        if what and (name in subject.mapped or not direct):
            findings.append(
                Finding(
                    "reach-privileged",
                    f"the login role reaches {role} ({path}), which {' and '.join(what)}: code any call"
                    " runs could switch to it (set_config('role', ...)), whatever role the map gives",
                    fix,
                )
            )
        elif name not in subject.mapped and not direct:
            findings.append(
                Finding(
                    "reach-role",
                    f"the login role reaches {role} ({path}), which the identity map does not name:"
                    " code any call runs could switch to it (set_config('role', ...))",
                    fix,
                )
            )
    return findings
