"""The role audit's pipeline: one read-only transaction, then every check in `CHECKS`, in order.

`audit_connection(conn)` asks PostgreSQL (catalog functions evaluated for `current_user`, so grants
to PUBLIC and inherited memberships count) and returns one `Finding` per problem, each with its fix.
A finding is a refusal (the server refuses to start, exit status 78) or a warning (logged, the
server serves); docs/tools/read_only_sql.md says which capability is which, and why.
Sync psycopg only; no trio. The DSN is never printed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Final

import psycopg
from psycopg import sql

from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.role_audit.attributes import attribute_findings, read_role
from mcp_suite.tools.sql.engine.role_audit.bodies import function_body_findings
from mcp_suite.tools.sql.engine.role_audit.column_write import column_write_findings
from mcp_suite.tools.sql.engine.role_audit.database import database_findings
from mcp_suite.tools.sql.engine.role_audit.defaults import (
    creator_findings,
    read_creators,
    search_path_findings,
)
from mcp_suite.tools.sql.engine.role_audit.finding import Finding
from mcp_suite.tools.sql.engine.role_audit.functions import (
    OUTREACHING_EXTENSIONS,
    admin_function_findings,
    definer_findings,
    extension_findings,
)
from mcp_suite.tools.sql.engine.role_audit.large_objects import large_object_findings
from mcp_suite.tools.sql.engine.role_audit.login import login_findings, reachable_roles, session_findings
from mcp_suite.tools.sql.engine.role_audit.membership import membership_findings, predefined_findings
from mcp_suite.tools.sql.engine.role_audit.reach import reach_findings, read_reach
from mcp_suite.tools.sql.engine.role_audit.resources import (
    foreign_server_findings,
    ownership_findings,
    temp_file_findings,
)
from mcp_suite.tools.sql.engine.role_audit.schema import schema_findings
from mcp_suite.tools.sql.engine.role_audit.sequences import sequence_findings
from mcp_suite.tools.sql.engine.role_audit.subject import Check, Subject, ident
from mcp_suite.tools.sql.engine.role_audit.table_write import table_write_findings
from mcp_suite.tools.sql.engine.role_audit.trigger import event_trigger_findings
from mcp_suite.tools.sql.engine.role_audit.views import policy_findings, view_findings

__all__ = ["CHECKS", "audit_connection", "audit_mapped", "audit_with_settings"]


def _reach(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """What PostgreSQL runs for the role unasked."""
    return reach_findings(
        read_reach(conn, OUTREACHING_EXTENSIONS), role=subject.role, accepted=subject.accepted
    )


def _search_path(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    return search_path_findings(conn, role=subject.role, db=subject.db)


def _creators(conn: psycopg.Connection[Any], subject: Subject) -> list[Finding]:
    """What PostgreSQL will let the role run tomorrow."""
    return creator_findings(read_creators(conn), accepted=subject.accepted_creators, db=subject.db)


# Every check after the role's attributes, in the order its findings are reported.
CHECKS: Final[tuple[Check, ...]] = (
    predefined_findings,
    membership_findings,
    table_write_findings,
    column_write_findings,
    schema_findings,
    database_findings,
    definer_findings,
    admin_function_findings,
    extension_findings,
    _reach,
    _search_path,
    _creators,
    sequence_findings,
    large_object_findings,
    temp_file_findings,
    ownership_findings,
    foreign_server_findings,
    function_body_findings,
    view_findings,
    policy_findings,
)


def audit_connection(
    conn: psycopg.Connection[Any],
    *,
    accepted: Iterable[str] = (),
    accepted_creators: Iterable[str] = (),
    mapped: Iterable[str] = (),
    as_role: str | None = None,
    checks: Sequence[Check] = CHECKS,
) -> list[Finding]:
    """Every capability of `current_user` beyond reading, as findings (empty: safe).

    `accepted`: SECURITY DEFINER functions (`schema.name`) the operator accepts; they become warnings.
    `accepted_creators`: roles (MCP_SQL_ACCEPT_FUNCTION_CREATORS) whose new functions the operator
    accepts may be executable by PUBLIC; they become warnings.
    `mapped`: the roles of an identity map; the login role must reach exactly them and hold
    nothing itself (`login.login_findings`). `as_role`: audit that role instead, switched to in
    the transaction (`SET LOCAL ROLE`: `current_user` is then that role). `checks`: the list run
    after the role's attributes (`CHECKS`; a bench passes another to measure a check's share).
    Runs 32 statements in 30 round trips (an identity map's login role: 2 more), in one read-only
    transaction that is rolled back.
    """
    with conn.transaction(force_rollback=True):
        # pg_catalog alone on the path: names the audit prints come schema-qualified, and no schema
        # of the role's own search_path can shadow what the audit calls (search_path_findings reads
        # the value sessions start with, which a SET LOCAL does not change).
        # Without `as_role`: the login role itself, whatever the session started as (ALTER ROLE
        # <login> SET role makes it start as another: `session_findings` names that), so every
        # finding and fix names the role of the DSN (issue 51). In the same round trip.
        conn.execute(
            "SET TRANSACTION READ ONLY; SET LOCAL search_path = pg_catalog, pg_temp"
            + ("; SET LOCAL ROLE NONE" if as_role is None else "")
        )
        if as_role is not None:
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(as_role)))
        role = read_role(conn)
        if role is None:  # pragma: no cover  # current_user always has a pg_roles row
            return [Finding("unknown", "the role could not be found in pg_roles", "check the DSN")]
        subject = Subject(
            role=ident(conn, role.name),
            db=ident(conn, role.database),
            accepted=frozenset(accepted),
            accepted_creators=frozenset(accepted_creators),
            mapped=frozenset(mapped),
        )
        findings = attribute_findings(role, subject.role)
        if as_role is None:
            findings.extend(event_trigger_findings(conn))
            findings.extend(session_findings(conn, subject))
        if role.superuser:
            # A superuser passes every privilege check; the lists below would name everything.
            return findings
        for check in checks:
            findings.extend(check(conn, subject))
        if subject.mapped:
            findings.extend(login_findings(conn, subject))
    return findings


def audit_with_settings(
    conn: psycopg.Connection[Any], settings: Settings, roles: Sequence[str] = ()
) -> list[Finding]:
    """`audit_connection` with the risks the operator accepted in the settings: the one way every
    audit (at start-up, before a late first call, and each re-audit while serving) is asked, so
    that all of them reach the same verdict.

    `roles`: an identity map's roles (issue 42). The login role is audited as the holder of
    nothing (`login.py`), then each role it reaches as the reader role is, after `SET LOCAL ROLE`;
    each of its findings names it and carries it (`Finding.role`: its calls alone stop). One
    transaction per role: a re-audit's time grows with the number of roles (bench_identity).
    """
    return audit_mapped(
        conn,
        accepted=settings.sql_accept_definer_functions,
        accepted_creators=settings.sql_accept_function_creators,
        roles=roles,
    )


def audit_mapped(
    conn: psycopg.Connection[Any],
    *,
    accepted: Iterable[str] = (),
    accepted_creators: Iterable[str] = (),
    roles: Sequence[str] = (),
    checks: Sequence[Check] = CHECKS,
) -> list[Finding]:
    """The login role (`audit_connection`), then each of `roles` it reaches (see `audit_with_settings`)."""
    accepted, creators = tuple(accepted), tuple(accepted_creators)
    findings = audit_connection(
        conn, accepted=accepted, accepted_creators=creators, mapped=roles, checks=checks
    )
    if not roles:
        return findings
    with conn.transaction(force_rollback=True):
        reachable = reachable_roles(conn, frozenset(roles))
    for role in roles:
        if role not in reachable:
            continue  # login_findings named it already
        own = audit_connection(
            conn, accepted=accepted, accepted_creators=creators, as_role=role, checks=checks
        )
        findings.extend(
            dataclasses.replace(f, problem=f"the mapped role {role}: {f.problem}", role=role) for f in own
        )
    return findings
