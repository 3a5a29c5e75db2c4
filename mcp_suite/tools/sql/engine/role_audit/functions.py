"""Functions the role can EXECUTE (directly, through PUBLIC or through a role it inherits from):
SECURITY DEFINER functions, administrative functions, and functions of outreaching extensions."""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import ACCEPT_SETTING, MAX_LISTED, Finding, listed
from mcp_suite.tools.sql.engine.role_audit.subject import Subject, ident

__all__ = ["OUTREACHING_EXTENSIONS", "admin_function_findings", "definer_findings", "extension_findings"]

# Extensions whose functions open connections to other servers or touch the server's files: a role
# that can EXECUTE them (PUBLIC can, by default) can write outside the read-only transaction, even
# through an innocent-looking wrapper function that the policy cannot see into.
OUTREACHING_EXTENSIONS: Final = ("dblink", "adminpack")


def definer_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    findings: list[Finding] = []
    role = subject.role
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
        signature = f"{ident(conn, schema, name)}({arguments})"
        where = f", part of the extension {extension}" if extension else ""
        if f"{schema}.{name}" in subject.accepted:
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
        if refused > MAX_LISTED:
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
    if refused > MAX_LISTED:
        findings.append(
            Finding(
                "definer-function",
                f"the role can execute {refused - MAX_LISTED} more SECURITY DEFINER functions",
                "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA <schema> FROM PUBLIC, "
                f"{role}; for each schema (mcp-suite check-role lists them after the first fix)",
            )
        )
    return findings


def admin_function_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    administrative = [
        name
        for (name,) in conn.execute(
            "SELECT p.oid::pg_catalog.regprocedure::text FROM pg_catalog.pg_proc p"
            " WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proacl IS NOT NULL"
            " AND NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')"
            " AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1"
        ).fetchall()
    ]
    if not administrative:
        return []
    return [
        Finding(
            "admin-function",
            "the role can execute functions that PostgreSQL (or this database) withholds from "
            "PUBLIC: " + listed(administrative),
            f"REVOKE EXECUTE ON FUNCTION {', '.join(administrative)} FROM {subject.role};",
        )
    ]


def extension_findings(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
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
    return [
        Finding(
            "extension-function",
            f"the role can execute {len(functions)} functions of the extension {extension}, which"
            " open connections to other servers or touch the server's files (a wrapper function"
            " could call them): " + listed(functions),
            f"REVOKE EXECUTE ON FUNCTION {', '.join(functions)} FROM PUBLIC, {subject.role};"
            f" (or DROP EXTENSION {extension}; when nothing needs it)",
        )
        for extension, functions in by_extension.items()
    ]
