"""`explain_sql` tells the model nothing about rows it could not select (docs/tools/explain_sql.md).

The oracle it closes: under a security_barrier view (the role guide's way to hide rows), a range on
an indexed column is pushed into the index scan below the view's filter, and EXPLAIN ANALYZE's
`Rows Removed by Filter` counts the hidden rows in that range; a search one character at a time
reads a hidden value. With the check bypassed (`open_sql(guard_hidden_rows=False)`) the
search below recovers the secret through the real tool; with it, every probe is refused.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.explain import OPAQUE_SCAN
from mcp_suite.tools.sql.engine.introspect.visibility import hidden_relations
from mcp_suite.tools.sql.opener import open_sql
from tests.support.harness import Harness, open_session
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

SECRET = "k7q2zx"
# The bytes a secret is made of, in the order of the column's "C" collation; "{" sorts after them all.
ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
VIEW = "mcp_vault.public_notes"
HIDDEN_ROWS = "urn:mcp-suite:problem:query-violation"

_VAULT = (
    "CREATE SCHEMA mcp_vault",
    # Visible rows start with "~", which sorts after "{": no probe range below holds any of them.
    "CREATE TABLE mcp_vault.notes "
    '(id integer PRIMARY KEY, owner text NOT NULL, body text COLLATE "C" NOT NULL)',
    "INSERT INTO mcp_vault.notes SELECT g, 'public', '~public-' || g FROM generate_series(1, 5000) AS g",
    f"INSERT INTO mcp_vault.notes VALUES (0, 'admin', '{SECRET}')",
    "CREATE INDEX notes_body_idx ON mcp_vault.notes (body)",
    "ANALYZE mcp_vault.notes",
    f"CREATE VIEW {VIEW} WITH (security_barrier) AS "
    "SELECT id, body FROM mcp_vault.notes WHERE owner <> 'admin'",
    # A table with row-level security, SELECT granted: its policy hides rows.
    "CREATE TABLE mcp_vault.tickets (id integer PRIMARY KEY, tenant text NOT NULL)",
    "INSERT INTO mcp_vault.tickets SELECT g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END "
    "FROM generate_series(1, 100) AS g",
    "ALTER TABLE mcp_vault.tickets ENABLE ROW LEVEL SECURITY",
    "CREATE POLICY tenant_a ON mcp_vault.tickets FOR SELECT USING (tenant = 'a')",
    # A partitioned table read through its parent: every row readable, so plans are shown.
    "CREATE TABLE mcp_vault.events (id integer, day date) PARTITION BY RANGE (day)",
    "CREATE TABLE mcp_vault.events_2026 PARTITION OF mcp_vault.events "
    "FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')",
    "INSERT INTO mcp_vault.events SELECT g, date '2026-01-01' + g FROM generate_series(1, 300) AS g",
    "GRANT USAGE ON SCHEMA mcp_vault TO mcp_reader",
    f"GRANT SELECT ON {VIEW}, mcp_vault.tickets, mcp_vault.events TO mcp_reader",
)


@pytest.fixture
def vault(demo_cluster: Cluster) -> Iterator[None]:
    """The hidden row and its index, made by the superuser; dropped afterwards."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS mcp_vault CASCADE")
        for statement in _VAULT:
            conn.execute(statement.encode())
    try:
        yield
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA mcp_vault CASCADE")


async def answer(h: Harness, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = (await h.response(await h.call(tool, arguments)))["result"]
    return result


def removed_by_filter(plan: Any) -> int:
    """The sum of every node's `Rows Removed by Filter`."""
    if isinstance(plan, list):
        return sum(removed_by_filter(item) for item in plan)
    if isinstance(plan, dict):
        own = int(plan.get("Rows Removed by Filter", 0))
        return own + sum(removed_by_filter(value) for value in plan.values())
    return 0


Probe = Callable[[str, str], Awaitable[int | None]]


def analyze_probe(h: Harness, refusals: list[dict[str, Any]]) -> Probe:
    """How many hidden rows hold a body in [low, high): EXPLAIN ANALYZE's count, or None (refused)."""

    async def probe(low: str, high: str) -> int | None:
        sql = f"SELECT id FROM {VIEW} WHERE body >= '{low}' AND body < '{high}'"
        result = await answer(h, "explain_sql", {"sql": sql, "analyze": True})
        if result["isError"]:
            refusals.append(json.loads(result["content"][0]["text"]))
            return None
        return removed_by_filter(result["structuredContent"]["plan"])

    return probe


async def search(probe: Probe) -> tuple[str, int]:
    """The hidden body, one character at a time (a binary search over the alphabet), and the
    number of probes it took; stops at the first probe that tells nothing."""
    found, probes = "", 0
    while len(found) < 2 * len(SECRET):
        # Is there a hidden body longer than `found`, starting with it?
        probes += 1
        if not await probe(found + ALPHABET[0], found + "{"):
            break
        low, high = 0, len(ALPHABET) - 1  # the next character is ALPHABET[low..high]
        while low < high:
            middle = (low + high + 1) // 2
            probes += 1
            if await probe(found + ALPHABET[middle], found + "{"):
                low = middle
            else:
                high = middle - 1
        found += ALPHABET[low]
    return found, probes


async def test_the_analyze_oracle_reads_a_hidden_secret_when_the_check_is_bypassed(
    demo_cluster: Cluster, vault: None
) -> None:
    unguarded = functools.partial(open_sql, guard_hidden_rows=False)
    refusals: list[dict[str, Any]] = []
    with trio.fail_after(60):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), extra_tools=[unguarded]) as h:
            await h.initialize()
            rows = await answer(h, "read_only_sql", {"sql": f"SELECT id FROM {VIEW} WHERE body = '{SECRET}'"})
            found, probes = await search(analyze_probe(h, refusals))
    assert rows["structuredContent"]["rows"] == []  # the view hides the row from a query
    assert refusals == []
    assert found == SECRET
    assert probes < 60


async def test_with_the_check_every_probe_is_refused_and_the_search_learns_nothing(
    demo_cluster: Cluster, vault: None
) -> None:
    refusals: list[dict[str, Any]] = []
    with trio.fail_after(60):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            found, probes = await search(analyze_probe(h, refusals))
            plain = await answer(h, "explain_sql", {"sql": f"SELECT id FROM {VIEW} WHERE body >= 'k'"})
            after = await answer(h, "read_only_sql", {"sql": f"SELECT count(*) AS n FROM {VIEW}"})
    assert (found, probes) == ("", 1)
    [refusal] = refusals
    assert refusal["type"] == HIDDEN_ROWS
    assert refusal["metadata"] == {"rule": "explain-hidden-rows"}
    assert refusal["invalid_params"] == ["sql"]
    assert "read_only_sql" in refusal["detail"]
    # A plain plan is refused too: its estimates come from statistics over every row.
    assert plain["isError"] is True
    assert "structuredContent" not in plain
    assert json.loads(plain["content"][0]["text"])["metadata"]["rule"] == "explain-hidden-rows"
    assert "notes" not in plain["content"][0]["text"]  # nor does it name the hidden table
    assert after["structuredContent"]["rows"] == [[5000]]  # and the session goes on


@pytest.mark.parametrize("analyze", [False, True])
@pytest.mark.parametrize(
    ("why", "sql"),
    [
        ("row-level security", "SELECT id FROM mcp_vault.tickets WHERE id < 50"),
        ("only some columns granted", "SELECT version FROM reports.releases"),
        ("a hidden table in a subquery", f"SELECT (SELECT count(*) FROM {VIEW}) AS n"),
        ("a hidden table in a CTE", f"WITH n AS MATERIALIZED (SELECT id FROM {VIEW}) SELECT id FROM n"),
        (
            "the catalogue behind information_schema",
            "SELECT table_name FROM information_schema.tables WHERE table_name >= 'n'",
        ),
    ],
)
async def test_a_plan_over_rows_the_role_cannot_select_is_refused(
    demo_cluster: Cluster, vault: None, why: str, sql: str, analyze: bool
) -> None:
    with trio.fail_after(30):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            query = await answer(h, "read_only_sql", {"sql": sql})
            explained = await answer(h, "explain_sql", {"sql": sql, "analyze": analyze})
    assert query["isError"] is False, why  # the role may run the query itself
    assert explained["isError"] is True, why
    assert json.loads(explained["content"][0]["text"])["metadata"]["rule"] == "explain-hidden-rows"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM mcp_vault.events WHERE day > date '2026-06-01'",  # partitions via their parent
        "SELECT * FROM reports.words_per_section",  # a view over a table the role may read whole
        "SELECT slug FROM docs.pages WHERE section = 'guides'",
    ],
)
async def test_a_plan_over_rows_the_role_may_read_whole_is_shown(
    demo_cluster: Cluster, vault: None, sql: str
) -> None:
    with trio.fail_after(30):
        async with open_session(settings=sql_settings(demo_cluster.reader_dsn), builtins=True) as h:
            await h.initialize()
            explained = await answer(h, "explain_sql", {"sql": sql, "analyze": True})
    assert explained["isError"] is False, explained
    assert explained["structuredContent"]["actual_rows"] >= 1


def test_the_catalogue_check_tells_each_relation_the_role_may_not_read_whole(
    demo_cluster: Cluster, vault: None
) -> None:
    readable = ["pages", "pages_pkey", "events", "events_2026", "tally"]
    hidden = {
        "notes": "read only through a security_barrier view",
        "notes_body_idx": "an index of that table",
        "tickets": "row-level security",
        "releases": "only some columns granted",
        "releases_internal_note_idx": "an index of that table",
        "editors": "no grant at all",
        "no_such_relation": "matches nothing",
        OPAQUE_SCAN: "a scan that names no relation",
        "pg_class": "a system catalogue table (information_schema filters its rows)",
    }
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute("CREATE TABLE mcp_vault.tally (n integer)")
        admin.execute("GRANT SELECT ON mcp_vault.tally TO mcp_reader")
        with psycopg.connect(demo_cluster.reader_dsn, autocommit=True) as conn:
            assert hidden_relations(conn, []) == []
            assert hidden_relations(conn, readable) == []
            assert hidden_relations(conn, [*readable, *hidden]) == sorted(hidden)
            # A hidden namesake in another schema makes a readable table's name hidden too.
            admin.execute("CREATE TABLE mcp_vault.pages (secret text)")
            assert hidden_relations(conn, ["pages"]) == ["pages"]
