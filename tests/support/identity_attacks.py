"""Ways a query might read as someone else (issue 51), on top of `identity.people`: a SECURITY INVOKER
helper that calls `set_config` (granted to red), a function that reads blue's table (to be declared
with `SET role`), a superuser role to grant, and a view that filters by the claims but is no
security barrier, over a table holding a value ann must not see. For the tests and the transports'
tests alike."""

from __future__ import annotations

from typing import Any, Final

import psycopg

from tests.support.identity import BLUE, RED

SUPER: Final = "mcp_id_super"  # a NOLOGIN superuser, granted by the tests that need one
HIDDEN_VALUE: Final = "bo-secret-7f3a"

# A call of ann's that becomes bo's: the helper switches the claims first, then the notes are read.
CLAIM_AS_SQL: Final = (
    'SELECT (SELECT mcp_people.claim_as(\'{"sub": "bo"}\')) AS c,'
    " (SELECT pg_catalog.string_agg(body, ',') FROM mcp_people.notes) AS n"
)
BECOME_SQL: Final = f"SELECT mcp_people.become('{BLUE}'), current_user"
READ_AS_BLUE_SQL: Final = "mcp_people.blue_secrets()"
# The cast's condition is cheaper than the view's: PostgreSQL tests it first, on every row.
LEAKY_VIEW_SQL: Final = "SELECT owner FROM mcp_people.leaky WHERE val::int = 1"

ATTACKS: Final = (
    "CREATE FUNCTION mcp_people.claim_as(text) RETURNS text LANGUAGE sql"
    " AS $$ SELECT pg_catalog.set_config('request.jwt.claims', $1, true) $$",
    "CREATE FUNCTION mcp_people.become(text) RETURNS text LANGUAGE sql"
    " AS $$ SELECT pg_catalog.set_config('role', $1, true) $$",
    "CREATE TABLE mcp_people.blue_only (secret text)",
    "INSERT INTO mcp_people.blue_only VALUES ('blue eyes only')",
    f"GRANT SELECT ON mcp_people.blue_only TO {BLUE}",
    "CREATE FUNCTION mcp_people.blue_secrets() RETURNS text LANGUAGE sql"
    " AS $$ SELECT pg_catalog.string_agg(secret, ',') FROM mcp_people.blue_only $$",
    "CREATE TABLE mcp_people.vals (owner text, val text)",
    f"INSERT INTO mcp_people.vals VALUES ('ann', '1'), ('bo', '{HIDDEN_VALUE}')",
    "CREATE VIEW mcp_people.leaky AS SELECT owner, val FROM mcp_people.vals"
    " WHERE owner = (pg_catalog.current_setting('request.jwt.claims', true)::json ->> 'sub')",
    f"GRANT SELECT ON mcp_people.leaky TO {RED}, {BLUE}",
    f"CREATE ROLE {SUPER} NOLOGIN SUPERUSER",
    # What the audit asks of every role that may create functions (not this test's subject).
    f"ALTER DEFAULT PRIVILEGES FOR ROLE {SUPER} REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC",
    f"ALTER DEFAULT PRIVILEGES FOR ROLE {SUPER} REVOKE EXECUTE ON FUNCTIONS FROM {SUPER}",
)


def install_attacks(conn: psycopg.Connection[Any]) -> None:
    """The objects above, as the superuser of `conn`; `identity.people` drops the schema after."""
    drop_super(conn)
    for statement in ATTACKS:
        conn.execute(statement.encode())
    for function in ("claim_as(text)", "become(text)", "blue_secrets()"):
        conn.execute(f"REVOKE EXECUTE ON FUNCTION mcp_people.{function} FROM PUBLIC".encode())
        conn.execute(f"GRANT EXECUTE ON FUNCTION mcp_people.{function} TO {RED}".encode())


def drop_super(conn: psycopg.Connection[Any]) -> None:
    if conn.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (SUPER,)).fetchone():
        conn.execute(f"DROP OWNED BY {SUPER}".encode())
        conn.execute(f"DROP ROLE {SUPER}".encode())
