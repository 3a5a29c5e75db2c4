"""A per-person setup on the demo database (issue 42), for the tests and the bench: a login role that
holds nothing (NOINHERIT, CONNECT only) and may switch to two NOLOGIN roles, `red` and `blue`; one
table, `mcp_people.notes`, whose row-level security policy shows each person their own rows by the
subject of `request.jwt.claims`; and the configuration file that maps `groups` to those roles."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import psycopg
from psycopg import sql

from mcp_suite.demo.cluster import Cluster

LOGIN: Final = "mcp_id_login"
LOGIN_PASSWORD: Final = "identity-login-not-secret"
RED: Final = "mcp_id_red"
BLUE: Final = "mcp_id_blue"
OTHER: Final = "mcp_id_other"  # a role the map does not name
PASSWORD_ENV: Final = "TEST_IDENTITY_PASSWORD"  # not MCP_*: the server warns of those
# Who owns which note: ann and bo read as red and blue; the policy decides by the subject alone.
NOTES: Final = (("ann", "ann: first"), ("ann", "ann: second"), ("bo", "bo: only"))
NOTES_SQL: Final = "SELECT owner, body FROM mcp_people.notes ORDER BY body"
DEFINER: Final = "mcp_people.leak"

SETUP: Final = (
    "CREATE ROLE {login} LOGIN NOINHERIT PASSWORD {password}",
    "ALTER ROLE {login} SET temp_file_limit = '64MB'",
    "GRANT CONNECT ON DATABASE mcp_demo TO {login}",
    "CREATE SCHEMA mcp_people",
    "CREATE TABLE mcp_people.notes (owner text NOT NULL, body text NOT NULL)",
    "ALTER TABLE mcp_people.notes ENABLE ROW LEVEL SECURITY",
    # PostgREST's convention: the subject is the `sub` of the claims the transaction was given.
    "CREATE POLICY own_notes ON mcp_people.notes FOR SELECT"
    " USING (owner = pg_catalog.current_setting('request.jwt.claims', true)::json ->> 'sub')",
)


def _drop(conn: psycopg.Connection[Any], roles: Sequence[str]) -> None:
    conn.execute("DROP SCHEMA IF EXISTS mcp_people CASCADE")
    for role in (*roles, OTHER, LOGIN):
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@contextlib.contextmanager
def people(cluster: Cluster, roles: Sequence[str] = (RED, BLUE)) -> Iterator[psycopg.Connection[Any]]:
    """The setup above, with the mapped `roles` (each may read the table); yields the superuser's
    connection, which drops it all afterwards."""
    with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
        _drop(conn, roles)
        names = {"login": sql.Identifier(LOGIN), "password": sql.Literal(LOGIN_PASSWORD)}
        for statement in SETUP:
            conn.execute(sql.SQL(statement).format(**names))
        conn.cursor().executemany("INSERT INTO mcp_people.notes VALUES (%s, %s)", NOTES)
        for role in roles:
            ident = sql.Identifier(role)
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(ident))
            conn.execute(sql.SQL("GRANT {} TO {}").format(ident, sql.Identifier(LOGIN)))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA mcp_people TO {}").format(ident))
            conn.execute(sql.SQL("GRANT SELECT ON mcp_people.notes TO {}").format(ident))
        try:
            yield conn
        finally:
            _drop(conn, roles)


def login_dsn(cluster: Cluster) -> str:
    return cluster.dsn(LOGIN, None)


def sources_file(
    path: Path,
    dsn: str,
    *,
    rules: Sequence[tuple[str, str]] = (("red", RED), ("blue", BLUE)),
    extra: str = "",
    identity_extra: str = "",
) -> Path:
    """A configuration file: one source on `dsn` (its password in `PASSWORD_ENV`), each group of
    `rules` mapped to its role."""
    text = (
        "[[sources]]\nname = 'people'\ndescription = 'Notes, each person their own'\n"
        f"dsn = {json.dumps(dsn)}\npassword_env = '{PASSWORD_ENV}'\n{extra}\n"
        f"[sources.identity]\nclaims = ['team']\n{identity_extra}\n"
    )
    text += "".join(
        f"[[sources.identity.rules]]\ngroup = '{group}'\nrole = '{role}'\n" for group, role in rules
    )
    path.write_text(text)
    return path
