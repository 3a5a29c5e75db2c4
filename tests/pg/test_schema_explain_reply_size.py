"""sql_schema's pages, the schema resource and explain_sql's plans stay within their stated bounds at
the configured maximum of MCP_SQL_MAX_RESULT_BYTES (docs/tools/sql_schema.md and explain_sql.md,
"Reply size"). Each counts its result's JSON as sent against the cap; a tool's frame repeats it,
escaped, in the text block (at most three times the cap plus a constant), the resource sends it once,
escaped, as its text (at most twice). The content is the worst there is: quotes and backslashes,
which JSON writes in two bytes and the text block in four. The frame the server wrote is measured in
bytes; the figures go to stderr (`-s` shows them)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, Final

import psycopg
import pytest
import trio
from psycopg import sql

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.tools.sql.engine.introspect.lookup import Lookup, encode_cursor
from tests.support.harness import Harness, open_session
from tests.support.pg import sql_settings
from tests.support.session_core import META
from tests.support.wire import check_line

pytestmark = pytest.mark.pg

MAX_RESULT_BYTES: Final = 16_777_216  # the largest MCP_SQL_MAX_RESULT_BYTES settings accept
COMMENT_CHARS: Final = 100_000  # the largest MCP_SQL_SCHEMA_MAX_COMMENT_CHARS settings accept
# The stated bounds, for a request id of at most 20 bytes as sent.
TOOL_MULTIPLE: Final = 3
RESOURCE_MULTIPLE: Final = 2
CONSTANT: Final = 1_000

# A schema that sorts before every other (0x22 in C order), so the resource's first page is its.
SCHEMA: Final = '"bounds\\'
# Each object: a 63-byte name, a table comment and a column comment of the most characters a comment
# may keep, all quotes and backslashes (2 bytes each as sent): about 400 kB of JSON, so 41 fit in a
# page. The 42nd (the filler) has a column comment as long as the rest of the page takes, so the page
# is full to within a few dozen bytes; the 43rd is on the next page.
OBJECTS: Final = 43
FILLER: Final = 41
WORST: Final = '"\\' * (COMMENT_CHARS // 2)
COLUMN: Final = '"\\' * 31 + "c"
DATABASE: Final = "mcp_demo"
# A page keeps this much for its envelope ({"database":…,"objects":[],"truncated":…,"next_cursor":…},
# the cursor aside), and the filler leaves this much more unused.
ENVELOPE: Final = 256
SLACK: Final = 64


def _table(n: int) -> str:
    return '"\\' * 30 + f"{n:03d}"


def _object(name: str, column_comment: str) -> dict[str, Any]:
    """An object as a page at detail "columns" lists it."""
    column = {"name": COLUMN, "type": "integer", "nullable": True, "default": None, "comment": column_comment}
    return {
        "schema": SCHEMA,
        "name": name,
        "kind": "table",
        "comment": WORST,
        "estimated_rows": None,
        "columns": [column],
    }


def _filler_comment(names: list[str]) -> str:
    """The filler's column comment: what is left of a page after the objects before it."""
    left = MAX_RESULT_BYTES - ENVELOPE - len(compact_json(DATABASE))
    left -= sum(len(compact_json(_object(name, WORST))) + 1 for name in names[:FILLER])
    cursor = len(compact_json(encode_cursor(Lookup(SCHEMA, None, None, None), SCHEMA, names[FILLER])))
    left -= len(compact_json(_object(names[FILLER], ""))) + 1 + cursor + SLACK
    return WORST[: left // 2]


@pytest.fixture(scope="module")
def worst_objects(demo_cluster: Cluster) -> Iterator[list[str]]:
    names = [_table(n) for n in range(OBJECTS)]
    schema = sql.Identifier(SCHEMA)
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION docs_owner").format(schema))
        for n, name in enumerate(names):
            table = sql.Identifier(SCHEMA, name)
            conn.execute(sql.SQL("CREATE TABLE {} ({} integer)").format(table, sql.Identifier(COLUMN)))
            conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(table, sql.Literal(WORST)))
            comment = _filler_comment(names) if n == FILLER else WORST
            column = sql.Identifier(SCHEMA, name, COLUMN)
            conn.execute(sql.SQL("COMMENT ON COLUMN {} IS {}").format(column, sql.Literal(comment)))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO mcp_reader").format(schema))
        conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO mcp_reader").format(schema))
    try:
        yield names
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))


async def _frame(h: Harness, method: str, params: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    """The raw frame of one request's answer, and its `result`."""
    request_id = await h.send_request(method, {**params, "_meta": META})
    line = await h.recv_line()
    assert line is not None
    assert check_line(line)["id"] == request_id
    result: dict[str, Any] = json.loads(line)["result"]
    return line, result


def _report(what: str, frame: bytes, bound: int, extra: str) -> None:
    sys.stderr.write(
        f"reply-size {what}: {len(frame)} bytes, {len(frame) / MAX_RESULT_BYTES:.3f} x cap, bound {bound}; "
        f"{extra}\n"
    )


def _settings(demo_cluster: Cluster) -> Any:
    return sql_settings(
        demo_cluster.reader_dsn,
        sql_max_result_bytes=MAX_RESULT_BYTES,
        sql_schema_max_comment_chars=COMMENT_CHARS,
    )


async def test_a_schema_page_at_the_configured_maximum_stays_within_three_times_the_cap(
    demo_cluster: Cluster, worst_objects: list[str]
) -> None:
    bound = TOOL_MULTIPLE * MAX_RESULT_BYTES + CONSTANT
    arguments = {"schema": SCHEMA, "max_objects": 500}
    with trio.fail_after(60):
        async with open_session(settings=_settings(demo_cluster), builtins=True, test_tools=False) as h:
            await h.initialize()
            frame, result = await _frame(h, "tools/call", {"name": "sql_schema", "arguments": arguments})
            page = result["structuredContent"]
            cursor = page["next_cursor"]
            rest, rest_result = await _frame(
                h, "tools/call", {"name": "sql_schema", "arguments": {**arguments, "cursor": cursor}}
            )
    last = rest_result["structuredContent"]
    _report(
        "sql_schema quotes-and-backslashes",
        frame,
        bound,
        f"{len(page['objects'])} objects, {len(compact_json(page))} bytes of JSON; "
        f"the next page: {len(rest)} bytes",
    )
    assert result["isError"] is False
    assert len(frame) <= bound
    assert all(o["comment"] == WORST for o in page["objects"])  # not cut: the worst content, whole
    assert [o["name"] for o in page["objects"]] == worst_objects[: FILLER + 1]
    assert len(compact_json(page)) > MAX_RESULT_BYTES - 1_000  # the page is full
    # What did not fit is on the next page, whose frame is as small as what it holds.
    assert page["truncated"] is True
    assert [o["name"] for o in page["objects"] + last["objects"]] == worst_objects
    assert last["next_cursor"] is None
    assert len(rest) <= TOOL_MULTIPLE * len(compact_json(last)) + CONSTANT


async def test_the_schema_resource_at_the_configured_maximum_stays_within_twice_the_cap(
    demo_cluster: Cluster, worst_objects: list[str]
) -> None:
    bound = RESOURCE_MULTIPLE * MAX_RESULT_BYTES + CONSTANT
    with trio.fail_after(60):
        async with open_session(settings=_settings(demo_cluster), builtins=True, test_tools=False) as h:
            await h.initialize()
            frame, result = await _frame(h, "resources/read", {"uri": "postgres://mcp_demo/schema"})
    text = result["contents"][0]["text"]
    page = json.loads(text)
    _report(
        "schema resource quotes-and-backslashes",
        frame,
        bound,
        f"{len(page['objects'])} objects, {len(text)} bytes of JSON",
    )
    assert len(frame) <= bound
    assert [(o["schema"], o["name"]) for o in page["objects"]] == [
        (SCHEMA, n) for n in worst_objects[: FILLER + 1]
    ]
    assert len(text) > MAX_RESULT_BYTES - 1_000  # the page is full
    # The rest is paged: the resource's cursor continues the listing through sql_schema.
    assert page["truncated"] is True
    assert page["next_cursor"] is not None


# explain_sql: a plan whose filter holds one long literal, folded by the planner from pieces (the
# policy refuses one repeat() longer than 1,000,000): (SQL character, the bytes one character takes
# in the plan's JSON as sent, analyze or not).
EXPLAIN_CASES: Final = {
    "quotes": ("'\"'", 2, False),  # \" in structuredContent, \\\" in the text block: the worst there is
    "four-byte-characters": ("chr(128512)", 12, False),
    # With analyze the answer adds four figures, and the cap counts EXPLAIN's own (its timings).
    "quotes-analyze": ("'\"'", 2, True),
}
# What the cap counts of an analyze beyond its answer is EXPLAIN's own "Planning" buffers and
# timings (about 600 bytes): an analyze's answer is made this much shorter than the cap.
ANALYZE_ROOM: Final = 1_000


def _explain_sql(char: str, length: int) -> str:
    return (
        "SELECT 1 AS v WHERE current_user::text = "
        f"repeat(repeat({char}, 1000), {length // 1000}) || repeat({char}, {length % 1000})"
    )


def _counted(plan: dict[str, Any]) -> int:
    """What the cap counts of a plan: EXPLAIN's one row and column (result.json_rows)."""
    return (
        len(compact_json([[[{"Plan": plan}]]]))
        + len(compact_json([{"name": "QUERY PLAN", "type": "json"}]))
        + 64
    )


@pytest.mark.parametrize("case", list(EXPLAIN_CASES))
async def test_a_plan_at_the_configured_maximum_stays_within_three_times_the_cap(
    demo_cluster: Cluster, case: str
) -> None:
    char, sent, analyze = EXPLAIN_CASES[case]
    bound = TOOL_MULTIPLE * MAX_RESULT_BYTES + CONSTANT
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=MAX_RESULT_BYTES)

    async def explain(h: Harness, length: int) -> tuple[bytes, dict[str, Any]]:
        arguments = {"sql": _explain_sql(char, length), "analyze": analyze}
        return await _frame(h, "tools/call", {"name": "explain_sql", "arguments": arguments})

    with trio.fail_after(60):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            # A small plain plan of the same shape tells what the cap counts besides the literal.
            probe = 1_000
            _, small = await _frame(
                h, "tools/call", {"name": "explain_sql", "arguments": {"sql": _explain_sql(char, probe)}}
            )
            assert small["isError"] is False, small["content"][0]["text"]
            fixed = _counted(small["structuredContent"]["plan"]) - sent * probe
            longest = (MAX_RESULT_BYTES - fixed) // sent  # the longest plain plan within the cap
            length = longest
            if analyze:  # an analyze's answer, ANALYZE_ROOM short of the cap
                _, small = await explain(h, probe)
                fixed = len(compact_json(small["structuredContent"])) - sent * probe
                length = (MAX_RESULT_BYTES - ANALYZE_ROOM - fixed) // sent
            frame, result = await explain(h, length)
            # One character more than the longest plain plan is over the cap, analyze or not.
            over, refused = await explain(h, longest + 1)
    _report(
        f"explain_sql {case}",
        frame,
        bound,
        f"a literal of {length} characters; of {longest + 1}, refused in {len(over)} bytes",
    )
    assert result["isError"] is False, result["content"][0]["text"]
    assert ("actual_rows" in result["structuredContent"]) is analyze
    assert len(compact_json(result["structuredContent"])) > MAX_RESULT_BYTES - 2_000  # at the cap
    assert len(frame) <= bound
    # Over the cap: refused, and the refusal is small.
    assert refused["isError"] is True
    assert json.loads(refused["content"][0]["text"])["type"].endswith("result-too-large")
    assert len(over) <= CONSTANT
