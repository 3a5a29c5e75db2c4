"""The start-up role audit (docs/tools/read_only_sql.md): what could the DSN's role do besides reading?

`audit_connection(conn)` asks PostgreSQL (catalog functions evaluated for `current_user`, so grants
to PUBLIC and inherited memberships count) and returns one `Finding` per problem, each with its fix.
The server refuses to start (exit status 78) when there is any; `check_role(settings)` runs the
audit alone for `mcp-suite check-role`. Sync psycopg only; no trio. The DSN is never printed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Final, TextIO

import psycopg
from psycopg import sql

from mcp_suite.settings import Settings

__all__ = [
    "DANGEROUS_PREDEFINED_ROLES",
    "EXIT_REFUSED",
    "EXIT_UNAVAILABLE",
    "Finding",
    "audit_connection",
    "audit_dsn",
    "check_role",
    "format_findings",
]

EXIT_REFUSED: Final = 78  # EX_CONFIG
EXIT_UNAVAILABLE: Final = 69  # EX_UNAVAILABLE: the database could not be reached

DANGEROUS_PREDEFINED_ROLES: Final = (
    "pg_write_all_data",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_signal_backend",
)
_TABLE_WRITES: Final = ("INSERT", "UPDATE", "DELETE", "TRUNCATE")
_MAX_LISTED: Final = 10  # objects named per finding; the rest are counted


@dataclass(frozen=True, slots=True)
class Finding:
    """One capability the role must not have: `problem` says what, `fix` says the SQL to run."""

    capability: str
    problem: str
    fix: str


def _ident(conn: psycopg.Connection[Any], *names: str) -> str:
    return ".".join(sql.Identifier(name).as_string(conn) for name in names)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    more = len(names) - _MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def audit_connection(conn: psycopg.Connection[Any]) -> list[Finding]:
    """Every capability of `current_user` that docs/tools/read_only_sql.md forbids, as findings (empty: safe).

    Runs a handful of catalog queries in one read-only transaction that is rolled back.
    """
    findings: list[Finding] = []
    with conn.transaction(force_rollback=True):
        conn.execute("SET TRANSACTION READ ONLY")
        row = conn.execute(
            "SELECT current_user, current_database(), rolsuper, rolcreaterole, rolcreatedb,"
            " rolbypassrls, rolreplication FROM pg_catalog.pg_roles WHERE rolname = current_user"
        ).fetchone()
        if row is None:  # pragma: no cover  # current_user always has a pg_roles row
            return [Finding("unknown", "the role could not be found in pg_roles", "check the DSN")]
        role_name, db_name, is_super, create_role, create_db, bypass_rls, replication = row
        role = _ident(conn, role_name)
        db = _ident(conn, db_name)
        attributes = (
            (is_super, "superuser", "is a superuser", f"ALTER ROLE {role} NOSUPERUSER;"),
            (create_role, "createrole", "can create roles", f"ALTER ROLE {role} NOCREATEROLE;"),
            (create_db, "createdb", "can create databases", f"ALTER ROLE {role} NOCREATEDB;"),
            (bypass_rls, "bypassrls", "bypasses row-level security", f"ALTER ROLE {role} NOBYPASSRLS;"),
            (replication, "replication", "may start replication", f"ALTER ROLE {role} NOREPLICATION;"),
        )
        for flag, capability, problem, fix in attributes:
            if flag:
                findings.append(Finding(capability, f"the role {problem}", fix))
        if is_super:
            # A superuser passes every privilege check; the lists below would name everything.
            return findings

        for predefined in DANGEROUS_PREDEFINED_ROLES:
            (member,) = conn.execute(
                "SELECT pg_catalog.pg_has_role(current_user, %s, 'MEMBER')", (predefined,)
            ).fetchone() or (False,)
            if member:
                findings.append(
                    Finding(
                        predefined,
                        f"the role is a member of {predefined}",
                        f"REVOKE {predefined} FROM {role};",
                    )
                )

        others = [
            r
            for (r,) in conn.execute(
                "SELECT g.rolname FROM pg_catalog.pg_auth_members m"
                " JOIN pg_catalog.pg_roles g ON g.oid = m.roleid"
                " JOIN pg_catalog.pg_roles u ON u.oid = m.member"
                " WHERE u.rolname = current_user ORDER BY 1"
            ).fetchall()
            if r not in DANGEROUS_PREDEFINED_ROLES
        ]
        if others:
            findings.append(
                Finding(
                    "membership",
                    "the role is a member of other roles (SET ROLE could switch to them): " + _listed(others),
                    " ".join(f"REVOKE {_ident(conn, r)} FROM {role};" for r in others[:_MAX_LISTED]),
                )
            )

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
        if by_table:
            names = [f"{_ident(conn, s, t)} ({', '.join(p)})" for (s, t), p in by_table.items()]
            fixes = [
                f"REVOKE {', '.join(p)} ON {_ident(conn, s, t)} FROM {role}, PUBLIC;"
                for (s, t), p in list(by_table.items())[:_MAX_LISTED]
            ]
            findings.append(
                Finding(
                    "table-write",
                    "the role can write to tables: " + _listed(names),
                    " ".join(fixes) + " (or transfer ownership away from the role)",
                )
            )

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
        if column_writes:
            names = [f"{_ident(conn, s, t)} ({p})" for s, t, p in column_writes]
            findings.append(
                Finding(
                    "column-write",
                    "the role can write to columns of tables: " + _listed(names),
                    " ".join(
                        f"REVOKE {p} (<columns>) ON {_ident(conn, s, t)} FROM {role}, PUBLIC;"
                        for s, t, p in column_writes[:_MAX_LISTED]
                    ),
                )
            )

        schemas = [
            s
            for (s,) in conn.execute(
                "SELECT nspname FROM pg_catalog.pg_namespace"
                " WHERE nspname NOT LIKE 'pg\\_temp\\_%%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%%'"
                " AND pg_catalog.has_schema_privilege(oid, 'CREATE') ORDER BY 1"
            ).fetchall()
        ]
        if schemas:
            findings.append(
                Finding(
                    "schema-create",
                    "the role can create objects in schemas: " + _listed(schemas),
                    " ".join(
                        f"REVOKE CREATE ON SCHEMA {_ident(conn, s)} FROM {role}, PUBLIC;"
                        for s in schemas[:_MAX_LISTED]
                    )
                    + " (and make sure the role owns no schema)",
                )
            )

        for priv, capability in (("CREATE", "database-create"), ("TEMPORARY", "database-temp")):
            (allowed,) = conn.execute(
                "SELECT pg_catalog.has_database_privilege(current_database(), %s)", (priv,)
            ).fetchone() or (False,)
            if allowed:
                findings.append(
                    Finding(
                        capability,
                        f"the role has {priv} on the database {db}",
                        f"REVOKE {priv} ON DATABASE {db} FROM {role}, PUBLIC;"
                        " (and make sure the role does not own the database)",
                    )
                )
    return findings


def format_findings(findings: list[Finding]) -> str:
    """The refusal message: each problem with its fix, one per line (no secrets)."""
    lines = [
        "read_only_sql: refusing to serve: the database role could do more than read "
        f"({len(findings)} problem(s)). Fix them, or use a least-privilege role "
        "(docs/tools/postgres-role-guide.sql):"
    ]
    lines.extend(f"  - {f.problem}\n    fix: {f.fix}" for f in findings)
    return "\n".join(lines)


def connection_failure(exc: psycopg.Error) -> str:
    """Why a connection failed, for the operator's log: the first line of psycopg's message.

    libpq names the host and port and the server's own reason (a refused password, a database that
    does not exist, a connection limit reached), or the network's (refused, timed out); it never
    repeats the password.
    """
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def audit_dsn(dsn: str, *, connect_timeout_s: float) -> list[Finding]:
    """Connect once (autocommit, read-only session) and audit. Raises psycopg.OperationalError."""
    with psycopg.connect(
        dsn,
        autocommit=True,
        connect_timeout=max(1, int(connect_timeout_s + 0.999)),
        options="-c default_transaction_read_only=on",
        application_name="mcp-suite audit",
    ) as conn:
        return audit_connection(conn)


def check_role(settings: Settings, *, out: TextIO | None = None) -> int:
    """`mcp-suite check-role`: audit the role of MCP_SQL_DSN and print the findings.

    Returns 0 when the role is fit to serve, 78 when it is not (or no DSN is set), 69 when the
    database cannot be reached.
    """
    stream = out or sys.stdout
    if settings.sql_dsn is None:
        stream.write("check-role: MCP_SQL_DSN is not set; nothing to check.\n")
        return EXIT_REFUSED
    try:
        findings = audit_dsn(
            settings.sql_dsn.get_secret_value(), connect_timeout_s=settings.sql_connect_timeout_s
        )
    except psycopg.Error as exc:
        stream.write(f"check-role: could not audit the role: {connection_failure(exc)}\n")
        return EXIT_UNAVAILABLE
    if findings:
        stream.write(format_findings(findings) + "\n")
        return EXIT_REFUSED
    stream.write("check-role: the role can only read; read_only_sql will serve.\n")
    return 0
