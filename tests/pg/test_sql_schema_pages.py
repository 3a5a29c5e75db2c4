"""`sql_schema` keeps every object reachable: 10,000 tables the reader may read, one column comment
of 300,000 characters and a table whose commented columns alone pass the byte cap. Walking the
pages (from the schema resource, then the tool's `cursor`) reaches every object exactly once, in
order, each page within `MCP_SQL_MAX_RESULT_BYTES`; the huge comment is cut with its marker.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from tests.support.harness import Harness, open_session
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

TABLES = 10_000
MAX_BYTES = 50_000
COMMENT_CHARS = 2_000
HUGE = "é" * 300_000  # 1.8 MB of JSON as the wire escapes it
ODD_NAME = 'Ünïcode "quoted", dotted.name'
DEMO = {("docs", "pages"), ("reports", "releases"), ("reports", "words_per_section")}

# Made in batches (a transaction's locks are bounded), in one round trip each way.
CREATE = f"""
DO $$
BEGIN
    FOR i IN 1..{TABLES} LOOP
        EXECUTE format('CREATE TABLE many.%I (id integer)', 't' || lpad(i::text, 5, '0'));
        IF i % 500 = 0 THEN COMMIT; END IF;
    END LOOP;
END $$
"""
DROP = f"""
DO $$
BEGIN
    FOR i IN 1..{TABLES} LOOP
        EXECUTE format('DROP TABLE many.%I', 't' || lpad(i::text, 5, '0'));
        IF i % 500 = 0 THEN COMMIT; END IF;
    END LOOP;
END $$
"""
WIDE = "CREATE TABLE many.wide ({})".format(", ".join(f"c{n} integer" for n in range(40)))


@pytest.fixture(scope="module")
def many_tables(demo_cluster: Cluster) -> Iterator[set[tuple[str, str]]]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA many AUTHORIZATION docs_owner")
        conn.execute(CREATE)
        conn.execute(f'CREATE TABLE many."{ODD_NAME.replace(chr(34), chr(34) * 2)}" (id integer)')
        conn.execute(WIDE)
        for n in range(40):
            conn.execute(f"COMMENT ON COLUMN many.wide.c{n} IS {psycopg.sql.quote('w' * 5_000)}")
        conn.execute(f"COMMENT ON COLUMN many.t05000.id IS {psycopg.sql.quote(HUGE)}")
        conn.execute(f"COMMENT ON TABLE many.t05001 IS {psycopg.sql.quote(HUGE)}")
        conn.execute("GRANT USAGE ON SCHEMA many TO mcp_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA many TO mcp_reader")
    names = {("many", f"t{n:05d}") for n in range(1, TABLES + 1)} | {("many", ODD_NAME), ("many", "wide")}
    try:
        yield names
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute(DROP)
            conn.execute("DROP SCHEMA many CASCADE")


async def call(h: Harness, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = (await h.response(await h.call("sql_schema", arguments)))["result"]
    if result.get("isError"):
        return {"problem": json.loads(result["content"][0]["text"])}
    answer: dict[str, Any] = result["structuredContent"]
    return answer


def size(answer: dict[str, Any]) -> int:
    return len(json.dumps(answer, separators=(",", ":")))


async def test_walking_the_pages_reaches_every_table_once_within_the_byte_cap(
    demo_cluster: Cluster, many_tables: set[tuple[str, str]]
) -> None:
    settings = sql_settings(
        demo_cluster.reader_dsn,
        sql_max_result_bytes=MAX_BYTES,
        sql_schema_max_comment_chars=COMMENT_CHARS,
        sql_statement_timeout_ms=20_000,
    )
    pages: list[dict[str, Any]] = []
    with trio.fail_after(300):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            read = await h.request("resources/read", {"uri": "postgres://mcp_demo/schema"})
            pages.append(json.loads(read["result"]["contents"][0]["text"]))
            while pages[-1]["next_cursor"] is not None:
                assert len(pages) < 1_000, "the walk never ends"
                pages.append(await call(h, {"cursor": pages[-1]["next_cursor"], "max_objects": 500}))
    seen = [(o["schema"], o["name"]) for page in pages for o in page["objects"]]
    assert len(seen) == len(set(seen))  # exactly once
    assert many_tables | DEMO <= set(seen)  # every one
    assert seen == sorted(seen, key=lambda key: (key[0].encode(), key[1].encode()))  # C order
    assert all(size(page) <= MAX_BYTES for page in pages)
    assert all(page["truncated"] is (page["next_cursor"] is not None) for page in pages)
    assert len(pages) > TABLES * 100 // MAX_BYTES  # the byte cap, not max_objects, cut them
    objects = {(o["schema"], o["name"]): o for page in pages for o in page["objects"]}
    marker = f"… [cut: {len(HUGE)} characters in all]"
    (column,) = objects["many", "t05000"]["columns"]
    assert column["comment"] == HUGE[:COMMENT_CHARS] + marker
    assert objects["many", "t05001"]["comment"] == HUGE[:COMMENT_CHARS] + marker
    wide = objects["many", "wide"]  # 40 comments of 2,000 characters: more than a page holds
    assert (wide["details_omitted"], "columns" in wide) == (True, False)
    assert "details_omitted" not in objects["many", "t00001"]


async def test_a_cursor_of_another_listing_or_a_made_up_one_is_a_validation_error(
    demo_cluster: Cluster, many_tables: set[tuple[str, str]]
) -> None:
    with trio.fail_after(60):
        async with open_session(
            settings=sql_settings(demo_cluster.reader_dsn), builtins=True, test_tools=False
        ) as h:
            await h.initialize()
            first = await call(h, {"schema": "many", "detail": "names", "max_objects": 10})
            cursor = first["next_cursor"]
            following = await call(
                h, {"schema": "many", "detail": "names", "max_objects": 10, "cursor": cursor}
            )
            other = await call(h, {"detail": "names", "cursor": cursor})
            made_up = await call(h, {"cursor": "bm90IGEgY3Vyc29y"})
    assert [o["name"] for o in first["objects"]] == [f"t{n:05d}" for n in range(1, 11)]
    assert [o["name"] for o in following["objects"]] == [f"t{n:05d}" for n in range(11, 21)]
    for answer in (other, made_up):
        problem = answer["problem"]
        assert problem["type"] == "urn:mcp-suite:problem:validation-error"
        assert problem["invalid_params"] == ["cursor"]


async def test_at_the_smallest_byte_cap_a_cut_comment_gives_way_to_the_object_s_name(
    demo_cluster: Cluster, many_tables: set[tuple[str, str]]
) -> None:
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=1_024)
    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            names = await call(h, {"object": "many.t05001", "detail": "names"})
            columns = await call(h, {"object": "many.t05001"})
    # 2,000 characters of é are 12,000 bytes of JSON: the comment gives way, the object stays.
    (alone,) = names["objects"]
    assert alone["comment"] == "… [cut: longer than the reply's byte limit allows]"
    assert "details_omitted" not in alone  # names only: nothing else was left out
    (described,) = columns["objects"]
    assert (described["details_omitted"], "columns" in described) == (True, False)
    assert all(size(answer) <= 1_024 for answer in (names, columns))
