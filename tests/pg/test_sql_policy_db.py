"""The SQL policy against the real demo database (docs/tools/read_only_sql.md).

- The denylist is audited against the catalogue: every volatile pg_catalog function `mcp_reader` may
  execute is denied or on the reviewed allow-list with a reason.
- Regeneration keeps meaning: each allowed corpus query and its executed form give the same rows.
- The whole corpus goes through the real server process; the database is unchanged afterwards (rows,
  sequences, large objects, locks, notifications, settings, catalogue).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.untrusted import FRAMED
from mcp_suite.tools.sql.engine.denylist import REVIEWED_VOLATILE, denied_reason
from mcp_suite.tools.sql.engine.policy import QueryPolicy
from tests.support.client import ServerProcess, problem_of
from tests.support.sql_corpus import CORPUS, HONEST, MAX_ROWS, Case
from tests.support.wire import without_frame

pytestmark = pytest.mark.pg


def test_reviewed_allow_list_and_denylist_do_not_overlap() -> None:
    assert [name for name in REVIEWED_VOLATILE if denied_reason(name) is not None] == []
    assert all(reason for reason in REVIEWED_VOLATILE.values())


def test_every_volatile_catalogue_function_the_reader_may_run_is_denied_or_reviewed(
    demo_cluster: Cluster,
) -> None:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT p.proname FROM pg_catalog.pg_proc AS p "
            "JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'pg_catalog' AND p.provolatile = 'v' "
            "AND has_function_privilege('mcp_reader', p.oid, 'EXECUTE') ORDER BY 1"
        ).fetchall()
    names = [str(name) for (name,) in rows]
    assert len(names) > 100, "the audit query found too few functions to be meaningful"
    unreviewed = [n for n in names if denied_reason(n) is None and n not in REVIEWED_VOLATILE]
    assert unreviewed == [], (
        "volatile functions neither denied nor reviewed; add each to DENIED_FUNCTIONS or, with a "
        "reason, to REVIEWED_VOLATILE in mcp_suite/tools/sql/engine/denylist.py"
    )


def test_no_catalogue_operator_cast_or_type_input_hides_a_volatile_function(
    demo_cluster: Cluster,
) -> None:
    """Operators, casts and type input run functions the policy never sees by name; none of
    PostgreSQL's own may be volatile unless that function is denied or reviewed."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.proname FROM pg_catalog.pg_operator AS o "
            "JOIN pg_catalog.pg_proc AS p ON p.oid = o.oprcode WHERE p.provolatile = 'v' "
            "UNION SELECT p.proname FROM pg_catalog.pg_cast AS c "
            "JOIN pg_catalog.pg_proc AS p ON p.oid = c.castfunc WHERE p.provolatile = 'v' "
            "UNION SELECT p.proname FROM pg_catalog.pg_type AS t "
            "JOIN pg_catalog.pg_proc AS p ON p.oid = t.typinput WHERE p.provolatile = 'v'"
        ).fetchall()
    hidden = [str(name) for (name,) in rows]
    assert [n for n in hidden if denied_reason(n) is None and n not in REVIEWED_VOLATILE] == []


# --- regeneration keeps meaning -------------------------------------------------------------------


@pytest.fixture(scope="module")
def reader(demo_cluster: Cluster) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(demo_cluster.reader_dsn) as conn:
        yield conn


def _rows(conn: psycopg.Connection[Any], sql: str) -> list[tuple[Any, ...]]:
    """All rows of `sql` as the reader, in a read-only transaction that is always rolled back."""
    conn.execute("BEGIN READ ONLY")
    try:
        cursor = conn.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        conn.execute("ROLLBACK")


def _key(row: tuple[Any, ...]) -> str:
    return repr(row)


@pytest.mark.parametrize("case", HONEST, ids=[case.why for case in HONEST])
def test_regeneration_keeps_the_meaning_of_an_allowed_query(
    reader: psycopg.Connection[Any], case: Case
) -> None:
    vetted = QueryPolicy(cache_size=0).vet(case.sql, max_rows=MAX_ROWS)
    original = _rows(reader, case.sql)
    executed = _rows(reader, vetted.sql)
    assert len(executed) == min(len(original), vetted.limit)
    if not case.deterministic:
        return
    if len(original) <= vetted.limit:
        assert Counter(map(_key, executed)) == Counter(map(_key, original))
        if "ORDER BY" in case.sql.upper():
            assert executed == original
    else:
        assert not Counter(map(_key, executed)) - Counter(map(_key, original))


# --- the corpus end to end, and the database afterwards --------------------------------------------


def _snapshot(admin_dsn: str) -> dict[str, Any]:
    """Everything a query might have changed, as the superuser sees it."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:

        def one(sql: str) -> Any:
            row = conn.execute(sql).fetchone()
            assert row is not None
            return row[0]

        return {
            "pages": one("SELECT md5(string_agg(p::text, '|' ORDER BY slug)) FROM docs.pages AS p"),
            "editors": one("SELECT md5(string_agg(e::text, '|' ORDER BY editor_id)) FROM docs.editors AS e"),
            "sequences": conn.execute(
                "SELECT schemaname, sequencename, last_value FROM pg_sequences ORDER BY 1, 2"
            ).fetchall(),
            "large_objects": one("SELECT count(*) FROM pg_largeobject_metadata"),
            "locks": conn.execute(
                "SELECT locktype, mode FROM pg_locks WHERE pid <> pg_backend_pid() "
                "AND locktype NOT IN ('virtualxid') ORDER BY 1, 2"
            ).fetchall(),
            "settings": conn.execute(
                "SELECT name, setting FROM pg_settings WHERE source NOT IN ('default', 'session', "
                "'client') ORDER BY 1"
            ).fetchall(),
            "file_settings": conn.execute(
                "SELECT sourcefile IS NOT NULL, name, setting FROM pg_file_settings ORDER BY 2, 3"
            ).fetchall(),
            "role_settings": conn.execute(
                "SELECT setdatabase, setrole, setconfig FROM pg_db_role_setting ORDER BY 1, 2"
            ).fetchall(),
            "relations": one("SELECT count(*) FROM pg_class"),
            "functions": one("SELECT count(*) FROM pg_proc"),
            "roles": conn.execute("SELECT rolname FROM pg_roles ORDER BY 1").fetchall(),
            "prepared_xacts": one("SELECT count(*) FROM pg_prepared_xacts"),
            "replication_slots": one("SELECT count(*) FROM pg_replication_slots"),
            "reader_sessions": one("SELECT count(*) FROM pg_stat_activity WHERE usename = 'mcp_reader'"),
        }


def _expected_slug(case: Case) -> str:
    return "validation-error" if case.problem.slug == "validation-error" else "query-violation"


@pytest.mark.e2e
def test_the_corpus_through_the_real_server_leaves_the_database_unchanged(
    demo_cluster: Cluster,
) -> None:
    before = _snapshot(demo_cluster.admin_dsn)
    listener = psycopg.connect(demo_cluster.admin_dsn, autocommit=True)
    try:
        for channel in ("channel", "c", "mcp"):
            listener.execute(f"LISTEN {channel}")
        outcomes: list[str] = []
        checked = 0
        with ServerProcess(env={"MCP_SQL_DSN": demo_cluster.reader_dsn}) as server:
            server.initialize()
            for case in CORPUS:
                result = server.call_tool("read_only_sql", {"sql": case.sql, "max_rows": MAX_ROWS})
                checked += 1
                if case.allowed:
                    if result.get("isError"):
                        outcomes.append(f"refused an honest query: {case.why}: {problem_of(result)}")
                        continue
                    structured = result["structuredContent"]
                    if structured["row_count"] > MAX_ROWS:
                        outcomes.append(f"too many rows: {case.why}")
                    found = FRAMED.fullmatch(result["content"][0]["text"])
                    if found is None or json.loads(found["body"]) != without_frame(structured):
                        outcomes.append(f"the text is not structured content in its frame: {case.why}")
                else:
                    if not result.get("isError"):
                        outcomes.append(f"accepted an attack: {case.why}")
                        continue
                    problem = problem_of(result)
                    slug = problem["type"].rsplit(":", 1)[-1]
                    if slug != _expected_slug(case):
                        outcomes.append(f"{case.why}: {slug} instead of {_expected_slug(case)}")
            server.stop()
        notes = list(listener.notifies(timeout=0.5, stop_after=1))
    finally:
        listener.close()
    after = _snapshot(demo_cluster.admin_dsn)
    assert checked == len(CORPUS)
    assert outcomes == []
    assert notes == []
    assert after == before


def test_the_snapshot_sees_a_change(demo_cluster: Cluster) -> None:
    before = _snapshot(demo_cluster.admin_dsn)
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT lo_create(0)").fetchone()
        assert row is not None
        try:
            assert _snapshot(demo_cluster.admin_dsn) != before
        finally:
            conn.execute("SELECT lo_unlink(%s)", (row[0],))
    assert _snapshot(demo_cluster.admin_dsn) == before
