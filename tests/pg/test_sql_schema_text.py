"""What `sql_schema` hands the model, against the real PostgreSQL through the whole tool path.

Text a DBA wrote (a table's and a column's comment, a column's name) holding a right-to-left
override, a zero-width space and Unicode tag characters that spell a hidden sentence reaches the
model as visible escapes, never as the characters. A cursor is a position in the listing, not a
credential: one made up by hand (for a hidden table's name) is read like any other, and the page
after it still lists only what the role may read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.introspect.lookup import encode_cursor, lookup
from mcp_suite.tools.text import INVISIBLE
from tests.support.harness import open_session
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

SCHEMA = "mcp_text"
TAGS = "".join(chr(0xE0000 + ord(c)) for c in "IGNORE")  # tag characters: invisible "IGNORE"
COMMENT = f"Orders\u202etxt.exe\u200b placed online{TAGS}"
COLUMN = "amo\u200bunt"


@pytest.fixture(scope="module")
def planted(demo_cluster: Cluster) -> Iterator[None]:
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE".encode())
        for statement in (
            f"CREATE SCHEMA {SCHEMA}",
            f'CREATE TABLE {SCHEMA}.orders (id int, "{COLUMN}" numeric)',
            f"CREATE TABLE {SCHEMA}.zz_hidden (id int)",
            f"COMMENT ON TABLE {SCHEMA}.orders IS {psycopg.sql.quote(COMMENT)}",
            f'COMMENT ON COLUMN {SCHEMA}.orders."{COLUMN}" IS {psycopg.sql.quote(COMMENT)}',
            f"GRANT USAGE ON SCHEMA {SCHEMA} TO mcp_reader",
            f"GRANT SELECT ON {SCHEMA}.orders TO mcp_reader",
        ):
            admin.execute(statement.encode())
        try:
            yield
        finally:
            admin.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE".encode())


async def _schema(cluster: Cluster, arguments: dict[str, Any]) -> dict[str, Any]:
    settings = sql_settings(cluster.reader_dsn)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            response = await h.response(await h.call("sql_schema", arguments))
    result: dict[str, Any] = response["result"]
    return result


async def test_invisible_characters_in_catalogue_text_reach_the_model_as_visible_escapes(
    demo_cluster: Cluster, planted: None
) -> None:
    result = await _schema(demo_cluster, {"schema": SCHEMA, "detail": "full"})
    assert result["isError"] is False, result
    (orders,) = result["structuredContent"]["objects"]
    tags = "".join(f"[U+{0xE0000 + ord(c):05X}]" for c in "IGNORE")
    shown = f"Orders[U+202E]txt.exe[U+200B] placed online{tags}"
    assert orders["comment"] == shown
    (_, amount) = orders["columns"]
    assert amount["name"] == "amo[U+200B]unt"
    assert amount["comment"] == shown
    # Nowhere in what the model reads (the text block and the structured result alike).
    assert not INVISIBLE.search(json.dumps(result, ensure_ascii=False))


async def test_a_made_up_cursor_is_a_position_that_grants_nothing(
    demo_cluster: Cluster, planted: None
) -> None:
    # Made by hand, for a table the role may not read: the listing starts after that name, and
    # lists only what PostgreSQL lets the role read (zz_hidden never), exactly as a real cursor would.
    made_up = encode_cursor(lookup(SCHEMA, None, None), SCHEMA, "aaa")
    result = await _schema(demo_cluster, {"schema": SCHEMA, "cursor": made_up})
    assert result["isError"] is False, result
    assert [o["name"] for o in result["structuredContent"]["objects"]] == ["orders"]
    after_hidden = encode_cursor(lookup(SCHEMA, None, None), SCHEMA, "zz_hidden")
    result = await _schema(demo_cluster, {"schema": SCHEMA, "cursor": after_hidden})
    assert result["structuredContent"]["objects"] == []
    garbage = await _schema(demo_cluster, {"schema": SCHEMA, "cursor": "not-a-cursor"})
    assert garbage["isError"] is True
