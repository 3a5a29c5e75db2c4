"""The start-up role audit: what could the DSN's role do besides reading?

`audit_connection(conn)` asks PostgreSQL (catalog functions evaluated for `current_user`, so grants
to PUBLIC and inherited memberships count) and returns one `Finding` per problem, each with its fix.
A finding is a refusal (the server refuses to start, exit status 78) or a warning (logged, the
server serves); docs/tools/read_only_sql.md says which capability is which, and why.
`check_role(settings)` runs the audit alone for `mcp-suite check-role`. Sync psycopg only; no trio.
The DSN is never printed.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import Any, Final, TextIO

import psycopg
from psycopg import sql

from mcp_suite.settings import Settings
from mcp_suite.tools.read_only_sql.defaults import creator_findings, read_creators, search_path_findings
from mcp_suite.tools.read_only_sql.finding import ACCEPT_SETTING, MAX_LISTED, Finding, refusals, warnings
from mcp_suite.tools.read_only_sql.naming import APPLICATION_NAME
from mcp_suite.tools.read_only_sql.reach import reach_findings, read_reach

__all__ = [
    "DANGEROUS_PREDEFINED_ROLES",
    "Finding",
    "TlsRefusedError",
    "audit_connection",
    "audit_dsn",
    "audit_role",
    "audit_with_settings",
    "check_role",
    "format_findings",
    "refusals",
    "warnings",
]


DANGEROUS_PREDEFINED_ROLES: Final = (
    "pg_write_all_data",
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_signal_backend",
)
_TABLE_WRITES: Final = ("INSERT", "UPDATE", "DELETE", "TRUNCATE")
_MAX_LISTED: Final = MAX_LISTED
# Extensions whose functions open connections to other servers or touch the server's files: a role
# that can EXECUTE them (PUBLIC can, by default) can write outside the read-only transaction, even
# through an innocent-looking wrapper function that the policy cannot see into.
OUTREACHING_EXTENSIONS: Final = ("dblink", "adminpack")


def _ident(conn: psycopg.Connection[Any], *names: str) -> str:
    return ".".join(sql.Identifier(name).as_string(conn) for name in names)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    more = len(names) - _MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def audit_connection(
    conn: psycopg.Connection[Any], *, accepted: Iterable[str] = (), accepted_creators: Iterable[str] = ()
) -> list[Finding]:
    """Every capability of `current_user` beyond reading, as findings (empty: safe).

    `accepted`: SECURITY DEFINER functions (`schema.name`) the operator accepts; they become warnings.
    `accepted_creators`: roles (MCP_SQL_ACCEPT_FUNCTION_CREATORS) whose new functions the operator
    accepts may be executable by PUBLIC; they become warnings.
    Runs 26 statements in 25 round trips, in one read-only transaction that is rolled back.
    """
    findings: list[Finding] = []
    with conn.transaction(force_rollback=True):
        # pg_catalog alone on the path: names the audit prints come schema-qualified, and no schema
        # of the role's own search_path can shadow what the audit calls (search_path_findings reads
        # the value sessions start with, which a SET LOCAL does not change).
        conn.execute("SET TRANSACTION READ ONLY; SET LOCAL search_path = pg_catalog, pg_temp")
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
        findings.extend(_function_findings(conn, role, frozenset(accepted)))
        # What PostgreSQL runs for the role unasked, and what it will let the role run tomorrow.
        edges = read_reach(conn, OUTREACHING_EXTENSIONS)
        findings.extend(reach_findings(edges, role=role, accepted=frozenset(accepted)))
        findings.extend(search_path_findings(conn, role=role, db=db))
        findings.extend(creator_findings(read_creators(conn), accepted=frozenset(accepted_creators)))
        findings.extend(_write_outside_findings(conn, role))
        findings.extend(_resource_findings(conn, role))
    return findings


def _function_findings(conn: psycopg.Connection[Any], role: str, accepted: frozenset[str]) -> list[Finding]:
    """SECURITY DEFINER functions, administrative functions and outreaching extensions the role can
    EXECUTE (directly, through PUBLIC or through a role it inherits from)."""
    findings: list[Finding] = []
    definers = conn.execute(
        "SELECT n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid),"
        " pg_catalog.pg_get_userbyid(p.proowner), e.extname"
        " FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
        " LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass"
        " AND d.objid = p.oid AND d.deptype = 'e'"
        " LEFT JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid"
        " WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')"
        " ORDER BY 1, 2, 3"
    ).fetchall()
    refused = 0
    for schema, name, arguments, owner, extension in definers:
        signature = f"{_ident(conn, schema, name)}({arguments})"
        where = f", part of the extension {extension}" if extension else ""
        if f"{schema}.{name}" in accepted:
            findings.append(
                Finding(
                    "definer-accepted",
                    f"the role can execute the SECURITY DEFINER function {signature} (owner "
                    f"{owner}{where}): accepted as a known risk by {ACCEPT_SETTING}",
                    f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC, {role};"
                    f" and remove {schema}.{name} from {ACCEPT_SETTING}",
                    warning=True,
                )
            )
            continue
        refused += 1
        if refused > _MAX_LISTED:
            continue
        findings.append(
            Finding(
                "definer-function",
                f"the role can execute the SECURITY DEFINER function {signature} (owner {owner}{where}),"
                " which runs with its owner's privileges: a SELECT of it can do whatever the owner may",
                f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC, {role};"
                f" (or, knowing the risk, name {schema}.{name} in {ACCEPT_SETTING})",
            )
        )
    if refused > _MAX_LISTED:
        findings.append(
            Finding(
                "definer-function",
                f"the role can execute {refused - _MAX_LISTED} more SECURITY DEFINER functions",
                "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA <schema> FROM PUBLIC, "
                f"{role}; for each schema (mcp-suite check-role lists them after the first fix)",
            )
        )

    administrative = [
        name
        for (name,) in conn.execute(
            "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc p"
            " WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proacl IS NOT NULL"
            " AND NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')"
            " AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1"
        ).fetchall()
    ]
    if administrative:
        findings.append(
            Finding(
                "admin-function",
                "the role can execute functions that PostgreSQL (or this database) withholds from "
                "PUBLIC: " + _listed(administrative),
                f"REVOKE EXECUTE ON FUNCTION {', '.join(administrative)} FROM {role};",
            )
        )

    outreaching = conn.execute(
        "SELECT e.extname, p.oid::pg_catalog.regprocedure::text"
        " FROM pg_catalog.pg_extension e"
        " JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_extension'::regclass"
        " AND d.refobjid = e.oid AND d.classid = 'pg_catalog.pg_proc'::regclass AND d.deptype = 'e'"
        " JOIN pg_catalog.pg_proc p ON p.oid = d.objid"
        " WHERE e.extname = ANY(%s) AND p.prokind IN ('f', 'p')"
        " AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1, 2",
        (list(OUTREACHING_EXTENSIONS),),
    ).fetchall()
    by_extension: dict[str, list[str]] = {}
    for extension, function in outreaching:
        by_extension.setdefault(extension, []).append(function)
    for extension, functions in by_extension.items():
        findings.append(
            Finding(
                "extension-function",
                f"the role can execute {len(functions)} functions of the extension {extension}, which"
                " open connections to other servers or touch the server's files (a wrapper function"
                " could call them): " + _listed(functions),
                f"REVOKE EXECUTE ON FUNCTION {', '.join(functions)} FROM PUBLIC, {role};"
                f" (or DROP EXTENSION {extension}; when nothing needs it)",
            )
        )
    return findings


def _write_outside_findings(conn: psycopg.Connection[Any], role: str) -> list[Finding]:
    """Writes that need no table: sequences (nextval/setval are not rolled back) and large objects."""
    findings: list[Finding] = []
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
    if by_sequence:
        names = [f"{_ident(conn, s, n)} ({', '.join(p)}; owner {o})" for (s, n, o), p in by_sequence.items()]
        findings.append(
            Finding(
                "sequence-write",
                "the role can advance or set sequences (a change no rollback undoes): " + _listed(names),
                " ".join(
                    f"REVOKE UPDATE, USAGE ON SEQUENCE {_ident(conn, s, n)} FROM {role}, PUBLIC;"
                    for (s, n, _) in list(by_sequence)[:_MAX_LISTED]
                ),
            )
        )
    (compat,) = conn.execute(
        "SELECT pg_catalog.current_setting('lo_compat_privileges')::bool"
    ).fetchone() or (False,)
    if compat:
        findings.append(
            Finding(
                "large-object-write",
                "lo_compat_privileges is on: every role may write every large object",
                "ALTER SYSTEM SET lo_compat_privileges = off; SELECT pg_reload_conf();",
            )
        )
    objects = conn.execute(
        "SELECT l.oid::int8, pg_catalog.pg_get_userbyid(l.lomowner)"
        " FROM pg_catalog.pg_largeobject_metadata l"
        " WHERE pg_catalog.pg_has_role(l.lomowner, 'USAGE') OR EXISTS ("
        " SELECT 1 FROM pg_catalog.aclexplode(l.lomacl) a WHERE a.privilege_type = 'UPDATE'"
        " AND CASE WHEN a.grantee = 0 THEN true ELSE pg_catalog.pg_has_role(a.grantee, 'USAGE') END)"
        " ORDER BY 1"
    ).fetchall()
    if objects:
        findings.append(
            Finding(
                "large-object-write",
                "the role can write large objects: "
                + _listed([f"{oid} (owner {owner})" for oid, owner in objects]),
                " ".join(
                    f"REVOKE UPDATE ON LARGE OBJECT {oid} FROM {role}, PUBLIC;"
                    for oid, _ in objects[:_MAX_LISTED]
                )
                + " (and ALTER LARGE OBJECT ... OWNER TO another role for those it owns)",
            )
        )
    return findings


def _resource_findings(conn: psycopg.Connection[Any], role: str) -> list[Finding]:
    """What one query may cost the host (temporary files), and the warnings: objects the role
    owns, and foreign servers it may use."""
    findings: list[Finding] = []
    (temp_limit,) = conn.execute("SELECT pg_catalog.current_setting('temp_file_limit')").fetchone() or ("-1",)
    if temp_limit == "-1":
        findings.append(
            Finding(
                "temp-file-limit",
                "the role has no temp_file_limit: one sort or hash of a huge intermediate result can"
                " fill the database host's disk with temporary files",
                f"ALTER ROLE {role} SET temp_file_limit = '1GB'; (as a superuser; or set it in"
                " postgresql.conf)",
            )
        )
    owned = [
        name
        for (name,) in conn.execute(
            "SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)"
            " FROM pg_catalog.pg_shdepend d"
            " WHERE d.deptype = 'o' AND d.refclassid = 'pg_catalog.pg_authid'::regclass"
            " AND d.refobjid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user)"
            " AND d.dbid IN (0, (SELECT oid FROM pg_catalog.pg_database"
            " WHERE datname = pg_catalog.current_database()))"
            " ORDER BY 1"
        ).fetchall()
    ]
    if owned:
        findings.append(
            Finding(
                "ownership",
                "the role owns objects (an owner may change them outside this server): " + _listed(owned),
                f"REASSIGN OWNED BY {role} TO <another role>;",
                warning=True,
            )
        )
    servers = [
        f"{_ident(conn, server)} ({wrapper})"
        for server, wrapper in conn.execute(
            "SELECT s.srvname, w.fdwname FROM pg_catalog.pg_foreign_server s"
            " JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = s.srvfdw"
            " WHERE pg_catalog.has_server_privilege(s.oid, 'USAGE') ORDER BY 1"
        ).fetchall()
    ]
    if servers:
        findings.append(
            Finding(
                "foreign-server",
                "the role may use foreign servers (reads through them reach other databases or"
                " files): " + _listed(servers),
                " ".join(
                    f"REVOKE USAGE ON FOREIGN SERVER {s.split(' ')[0]} FROM {role}, PUBLIC;"
                    for s in servers[:_MAX_LISTED]
                ),
                warning=True,
            )
        )
    return findings


def format_findings(findings: list[Finding]) -> str:
    """The refusal message: each problem with its fix, then the warnings (no secrets)."""
    refused = refusals(findings)
    lines = [
        "read_only_sql: refusing to serve: the database role could do more than read "
        f"({len(refused)} problem(s)). Fix them, or use a least-privilege role "
        "(docs/tools/postgres-role-guide.sql):"
    ]
    lines.extend(f"  - {f.problem}\n    fix: {f.fix}" for f in refused)
    lines.extend(format_warning(f) for f in warnings(findings))
    return "\n".join(lines)


def format_warning(finding: Finding) -> str:
    """One warning with its fix (the server serves regardless)."""
    return f"read_only_sql: warning: {finding.problem}\n    fix: {finding.fix}"


# libpq (and psycopg's resolver) quote the host, socket, user and database names they failed with,
# and write the address in parentheses and the port after "port": all of them are parts of the DSN.
_DSN_PARTS: Final = (
    (re.compile(r'"[^"]*"'), '"…"'),
    (re.compile(r"'[^']*'"), "'…'"),
    (re.compile(r"\([0-9A-Fa-f.:]+\)"), "(…)"),
    (re.compile(r"\bport \d+"), "port …"),
)


def connection_failure(exc: psycopg.Error) -> str:
    """Why a connection failed, for the operator's log: the first line of psycopg's message, with
    every part of the DSN it names (host, address, port, socket, user, database) cut out.

    What stays is the reason: the server's own (a refused password, a database that does not
    exist, a connection limit reached) or the network's (refused, timed out). libpq never repeats
    the password.
    """
    lines = str(exc).strip().splitlines()
    line = lines[0] if lines else type(exc).__name__
    for pattern, mark in _DSN_PARTS:
        line = pattern.sub(mark, line)
    return line


def audit_dsn(
    dsn: str,
    *,
    connect_timeout_s: float,
    accepted: Iterable[str] = (),
    accepted_creators: Iterable[str] = (),
) -> list[Finding]:
    """Connect once and audit (in a read-only transaction). Raises psycopg.OperationalError.

    Nothing is set in the startup packet: a transaction-pooling PgBouncer refuses `options`.
    """
    with psycopg.connect(
        dsn,
        autocommit=True,
        connect_timeout=max(1, int(connect_timeout_s + 0.999)),
        fallback_application_name=APPLICATION_NAME,
    ) as conn:
        return audit_connection(conn, accepted=accepted, accepted_creators=accepted_creators)


def audit_with_settings(conn: psycopg.Connection[Any], settings: Settings) -> list[Finding]:
    """`audit_connection` with the risks the operator accepted in the settings: the one way every
    audit (at start-up, before a late first call, and each re-audit while serving) is asked, so
    that all of them reach the same verdict."""
    return audit_connection(
        conn,
        accepted=settings.sql_accept_definer_functions,
        accepted_creators=settings.sql_accept_function_creators,
    )


class TlsRefusedError(Exception):
    """No connection because TLS verification refused the server's certificate; `str()` is the
    operator's message (the cause and the fix, no DSN part)."""


def audit_role(dsn: str, settings: Settings) -> list[Finding]:
    """`audit_dsn` with the settings' connect timeout and accepted definer functions.

    Raises TlsRefusedError when the server's certificate is why no connection could be made (that
    will not fix itself), else psycopg.OperationalError when none could be made.
    """
    try:
        return audit_dsn(
            dsn,
            connect_timeout_s=settings.sql_connect_timeout_s,
            accepted=settings.sql_accept_definer_functions,
            accepted_creators=settings.sql_accept_function_creators,
        )
    except psycopg.OperationalError:
        from mcp_suite.tools.read_only_sql.tls import tls_refusal  # only on this failure path

        refusal = tls_refusal(dsn, timeout_s=settings.sql_connect_timeout_s)
        if refusal is not None:
            raise TlsRefusedError(refusal) from None
        raise


def check_role(settings: Settings, *, out: TextIO | None = None) -> int:
    """`mcp-suite check-role`: audit the role of MCP_SQL_DSN and print the findings.

    Returns EX_OK when the role is fit to serve, EX_CONFIG when it is not (or no DSN is set, or the
    server's TLS certificate is refused), EX_UNAVAILABLE when the database cannot be reached.
    """
    stream = out or sys.stdout
    if settings.sql_dsn is None:
        stream.write("check-role: MCP_SQL_DSN is not set; nothing to check.\n")
        return os.EX_CONFIG
    try:
        findings = audit_role(settings.sql_dsn.get_secret_value(), settings)
    except TlsRefusedError as exc:  # as the server itself refuses to start
        stream.write(f"check-role: {exc}\n")
        return os.EX_CONFIG
    except psycopg.Error as exc:
        stream.write(f"check-role: could not audit the role: {connection_failure(exc)}\n")
        return os.EX_UNAVAILABLE
    if refusals(findings):
        stream.write(format_findings(findings) + "\n")
        return os.EX_CONFIG
    stream.writelines(format_warning(f) + "\n" for f in findings)
    stream.write("check-role: the role can only read; read_only_sql will serve.\n")
    return os.EX_OK
