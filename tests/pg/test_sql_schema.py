"""`sql_schema` against the demo cluster, through the whole runtime (the in-memory harness).

The reader sees `docs.pages` and not `docs.editors`, `reports.releases` only through a column-level
grant (so `approved_by` and `internal_note` stay hidden, with the foreign key and the index that use
them), the view `reports.words_per_section`, and the comments. Every string argument is data: the
injection cases below would change the answer (or the database) if any reached the SQL text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import trio

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.jsonrpc import compact_json
from tests.support.harness import Harness, open_session
from tests.support.injections import check_framed
from tests.support.pg import sql_settings

pytestmark = pytest.mark.pg

VISIBLE = [
    ("docs", "pages", "table"),
    ("reports", "releases", "table"),
    ("reports", "words_per_section", "view"),
]


async def call(h: Harness, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = (await h.response(await h.call("sql_schema", arguments)))["result"]
    if result.get("isError"):
        problem: dict[str, Any] = json.loads(result["content"][0]["text"])
        return {"problem": problem}
    # The answer comes inside the untrusted-data frame: its JSON, without the frame's member.
    _, structured = check_framed(result)
    assert isinstance(structured, dict)
    return structured


async def answers(cluster: Cluster, *calls: dict[str, Any], **overrides: Any) -> list[dict[str, Any]]:
    """The answers to `sql_schema` calls, made in one session with the reader's settings."""
    settings = sql_settings(cluster.reader_dsn, **overrides)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            return [await call(h, arguments) for arguments in calls]


def listed(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(o["schema"], o["name"], o["kind"]) for o in answer["objects"]]


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{o['schema']}.{o['name']}": o for o in answer["objects"]}


async def test_the_role_sees_what_it_may_read_and_nothing_else(demo_cluster: Cluster) -> None:
    (answer,) = await answers(demo_cluster, {})
    assert answer["database"] == "mcp_demo"
    assert listed(answer) == VISIBLE
    assert answer["truncated"] is False
    objects = by_name(answer)
    pages = objects["docs.pages"]
    assert pages["comment"] == "One page of the documentation site."
    assert pages["estimated_rows"] == 30
    assert [c["name"] for c in pages["columns"]] == ["slug", "editor_id", "section", "words"]
    words = pages["columns"][3]
    assert words == {
        "name": "words",
        "type": "integer",
        "nullable": False,
        "default": None,
        "comment": "Words on the page, counted at publication.",
    }
    releases = objects["reports.releases"]
    # The column-level grant: only the granted columns, never approved_by or internal_note.
    assert [c["name"] for c in releases["columns"]] == ["version", "released_on", "page_slug"]
    assert releases["columns"][0]["comment"] == "Semantic version, for example 1.2.0."
    assert releases["columns"][1]["type"] == "date"
    # Readable only in part: its row count is not told (explain_sql's rule).
    assert releases["estimated_rows"] is None
    view = objects["reports.words_per_section"]
    assert view["estimated_rows"] is None
    assert [(c["name"], c["type"]) for c in view["columns"]] == [("section", "text"), ("words", "bigint")]
    assert not {"primary_key", "unique", "foreign_keys", "indexes"} & set(pages)
    text = json.dumps(answer)
    for hidden in ("editors", "approved_by", "internal_note", "ana@example.com"):
        assert hidden not in text


async def test_full_detail_shows_keys_and_indexes_over_visible_columns_only(demo_cluster: Cluster) -> None:
    (answer,) = await answers(demo_cluster, {"detail": "full"})
    objects = by_name(answer)
    pages = objects["docs.pages"]
    assert pages["primary_key"] == ["slug"]
    assert pages["unique"] == []
    assert pages["foreign_keys"] == []  # its key points at docs.editors, which the role cannot see
    assert [(i["name"], i["unique"]) for i in pages["indexes"]] == [
        ("pages_pkey", True),
        ("pages_section_idx", False),
    ]
    assert pages["indexes"][1]["definition"] == (
        "CREATE INDEX pages_section_idx ON docs.pages USING btree (section)"
    )
    releases = objects["reports.releases"]
    assert releases["primary_key"] == ["version"]
    assert releases["unique"] == [["released_on", "version"]]
    assert releases["foreign_keys"] == [
        {"columns": ["page_slug"], "references": "docs.pages", "referenced_columns": ["slug"]}
    ]
    assert [i["name"] for i in releases["indexes"]] == ["releases_pkey", "releases_released_on_version_key"]
    view = objects["reports.words_per_section"]
    assert (view["primary_key"], view["indexes"]) == ([], [])
    text = json.dumps(answer)
    for hidden in ("editors", "approved_by", "internal_note"):
        assert hidden not in text


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"detail": "names"}, VISIBLE),
        ({"schema": "reports"}, VISIBLE[1:]),
        ({"schema": "docs"}, VISIBLE[:1]),
        ({"schema": "Docs"}, []),  # exact: schema names are case-sensitive
        ({"name_like": "PAGES"}, VISIBLE[:1]),
        ({"name_like": "%e%"}, VISIBLE),
        ({"name_like": "%s"}, VISIBLE[:2]),
        ({"name_like": "pag_s"}, VISIBLE[:1]),  # `_` is one character, as documented
        ({"name_like": "words\\_per%"}, VISIBLE[2:]),  # an escaped `_` is an underscore
        ({"name_like": "words\\%"}, []),  # an escaped `%` is a percent sign
        ({"name_like": "edit%"}, []),  # the hidden table does not match anything
        ({"object": "docs.pages"}, VISIBLE[:1]),
        ({"object": "Docs.PAGES"}, VISIBLE[:1]),  # unquoted names fold to lower case
        ({"object": '"docs"."pages"'}, VISIBLE[:1]),
        ({"object": '"Docs"."pages"'}, []),  # quoted names keep their case
        ({"object": "docs.editors"}, []),
        ({"object": "reports.words_per_section", "detail": "names"}, VISIBLE[2:]),
        ({"schema": "docs", "name_like": "releases"}, []),
        # Injection attempts through every string argument: data, never SQL.
        ({"schema": "docs' OR '1'='1"}, []),
        ({"schema": "docs'; DROP TABLE docs.pages; --"}, []),
        ({"schema": 'docs" OR "1"="1'}, []),
        ({"schema": "docs\\"}, []),
        ({"name_like": "%' OR '1'='1"}, []),
        ({"name_like": "x') OR true --"}, []),
        ({"name_like": "pages'; SELECT pg_sleep(5); --"}, []),
        ({"name_like": "%\\\\%"}, []),  # an escaped backslash: names with a backslash in them
        ({"object": "docs.pages' OR '1'='1"}, []),
        ({"object": 'docs."pages\'; DROP TABLE docs.pages; --"'}, []),
        ({"object": '"docs"".pages"."x"'}, []),
        ({"object": "docs.pa%"}, []),  # no pattern in `object`
        ({"object": "docs.pag_s"}, []),
        ({"object": "docs\\.pages\\"}, []),
    ],
)
async def test_filters_and_injection_attempts(
    demo_cluster: Cluster, arguments: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    (answer,) = await answers(demo_cluster, arguments)
    assert "problem" not in answer, answer
    assert listed(answer) == expected
    if arguments.get("detail") == "names":
        assert all("columns" not in o for o in answer["objects"])
    with psycopg.connect(demo_cluster.admin_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM docs.pages").fetchone() == (30,)


@pytest.mark.parametrize(
    ("arguments", "param"),
    [
        ({"name_like": "pages\\"}, "name_like"),  # a lone trailing escape
        ({"object": "pages"}, "object"),
        ({"object": "a.b.c"}, "object"),
        ({"object": 'docs."pages'}, "object"),
        ({"object": "docs."}, "object"),
        ({"detail": "everything"}, "detail"),
        ({"max_objects": 0}, "max_objects"),
        ({"max_objects": 501}, "max_objects"),
        ({"max_objects": "5"}, "max_objects"),
        ({"schema": ""}, "schema"),
        ({"table": "pages"}, "table"),
    ],
)
async def test_bad_arguments_are_validation_errors(
    demo_cluster: Cluster, arguments: dict[str, Any], param: str
) -> None:
    (answer,) = await answers(demo_cluster, arguments)
    problem = answer["problem"]
    assert problem["type"] == "urn:mcp-suite:problem:validation-error"
    assert problem["invalid_params"] == [param]


async def test_max_objects_and_the_byte_cap_say_truncated(demo_cluster: Cluster) -> None:
    first, capped, names = await answers(
        demo_cluster,
        {"max_objects": 1, "detail": "names"},
        {"detail": "full"},
        {"detail": "names"},
        sql_max_result_bytes=1_500,
    )
    assert (listed(first), first["truncated"]) == (VISIBLE[:1], True)
    assert capped["truncated"] is True
    assert 0 < len(capped["objects"]) < len(VISIBLE)
    assert len(json.dumps(capped, separators=(",", ":"))) <= 1_500
    assert (listed(names), names["truncated"]) == (VISIBLE, False)


async def test_the_schema_resource_is_the_tool_s_answer(demo_cluster: Cluster) -> None:
    with trio.fail_after(30):
        async with open_session(
            settings=sql_settings(demo_cluster.reader_dsn), builtins=True, test_tools=False
        ) as h:
            await h.initialize()
            read = await h.request("resources/read", {"uri": "postgres://mcp_demo/schema"})
            answer = await call(h, {"max_objects": 500})
    (content,) = read["result"]["contents"]
    assert json.loads(content["text"]) == answer


async def test_it_is_listed_before_the_query_tool_with_all_annotations(demo_cluster: Cluster) -> None:
    with trio.fail_after(30):
        async with open_session(
            settings=sql_settings(demo_cluster.reader_dsn), builtins=True, test_tools=False
        ) as h:
            await h.initialize()
            tools = (await h.request("tools/list"))["result"]["tools"]
    names = [t["name"] for t in tools]
    assert names.index("sql_schema") < names.index("read_only_sql")
    (tool,) = [t for t in tools if t["name"] == "sql_schema"]
    hints = tool["annotations"]
    assert (hints["readOnlyHint"], hints["idempotentHint"]) == (True, True)
    assert (hints["destructiveHint"], hints["openWorldHint"]) == (False, False)
    arguments = {"schema", "name_like", "object", "detail", "max_objects", "cursor"}
    assert set(tool["inputSchema"]["properties"]) == arguments
    assert tool["inputSchema"]["additionalProperties"] is False
    assert set(tool["outputSchema"]["properties"]) == {
        "database",
        "objects",
        "truncated",
        "next_cursor",
        "untrusted_data",
    }


@pytest.fixture
def forty_tables(demo_cluster: Cluster) -> Iterator[None]:
    """A schema of 40 small tables the reader may read, dropped afterwards."""
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA bulk AUTHORIZATION docs_owner")
        for n in range(40):
            conn.execute(f"CREATE TABLE bulk.t{n:02d} (id integer PRIMARY KEY)")
        conn.execute("GRANT USAGE ON SCHEMA bulk TO mcp_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA bulk TO mcp_reader")
    try:
        yield
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA bulk CASCADE")


async def test_a_large_catalogue_is_cut_to_the_byte_cap_in_order(
    demo_cluster: Cluster, forty_tables: None
) -> None:
    small, whole = await answers(
        demo_cluster,
        {"schema": "bulk", "detail": "names", "max_objects": 500},
        {"object": "bulk.t39", "detail": "names"},
        sql_max_result_bytes=1_024,
    )
    assert small["truncated"] is True
    names = [o["name"] for o in small["objects"]]
    assert names == [f"t{n:02d}" for n in range(len(names))]  # the first ones, in name order
    assert 5 <= len(names) < 40
    assert len(json.dumps(small, separators=(",", ":"))) <= 1_024
    assert ([o["name"] for o in whole["objects"]], whole["truncated"]) == (["t39"], False)


async def test_a_page_at_the_cap_holds_the_object_that_fits_exactly_one_byte_under_the_next_page_does(
    demo_cluster: Cluster, forty_tables: None
) -> None:
    names = {"schema": "bulk", "detail": "names", "max_objects": 500}
    whole, ten = await answers(demo_cluster, names, {**names, "max_objects": 10})
    assert (len(whole["objects"]), whole["truncated"]) == (40, False)  # the default cap holds them
    # What a page counts (introspect/objects.py): 256 bytes of envelope, the database's name, each
    # object's JSON as sent and a comma, and the cursor that names the last one listed.
    needed = (
        256
        + len(compact_json(whole["database"]))
        + sum(len(compact_json(o)) + 1 for o in whole["objects"][:10])
        + len(compact_json(ten["next_cursor"]))
    )
    (at_cap,) = await answers(demo_cluster, names, sql_max_result_bytes=needed)
    (under,) = await answers(demo_cluster, names, sql_max_result_bytes=needed - 1)
    assert [o["name"] for o in at_cap["objects"]] == [f"t{n:02d}" for n in range(10)]
    assert at_cap["truncated"] is True
    assert [o["name"] for o in under["objects"]] == [f"t{n:02d}" for n in range(9)]
    (following,) = await answers(
        demo_cluster, {**names, "cursor": under["next_cursor"]}, sql_max_result_bytes=needed - 1
    )
    assert following["objects"][0]["name"] == "t09"  # nothing lost: it opens the next page


@pytest.fixture
def unwieldy_name(demo_cluster: Cluster) -> Iterator[str]:
    """A readable table whose name is 63 control characters: 378 bytes of JSON as sent, and more
    again in the cursor that would name it."""
    name = "\x01" * 63
    escaped = "\\0001" * 63
    with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA odd AUTHORIZATION docs_owner")
        conn.execute(f'CREATE TABLE odd.U&"{escaped}" (id integer)')
        conn.execute("GRANT USAGE ON SCHEMA odd TO mcp_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA odd TO mcp_reader")
    try:
        yield name
    finally:
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as conn:
            conn.execute("DROP SCHEMA odd CASCADE")


async def test_an_object_whose_name_alone_does_not_fit_the_cap_is_refused(
    demo_cluster: Cluster, unwieldy_name: str
) -> None:
    (fits,) = await answers(demo_cluster, {"schema": "odd", "detail": "names"})
    assert [o["name"] for o in fits["objects"]] == [unwieldy_name]  # at the default cap
    settings = sql_settings(demo_cluster.reader_dsn, sql_max_result_bytes=1_024)
    with trio.fail_after(30):
        async with open_session(settings=settings, builtins=True, test_tools=False) as h:
            await h.initialize()
            answer = (await h.request("tools/call", {"name": "sql_schema", "arguments": {"schema": "odd"}}))[
                "result"
            ]
    assert answer["isError"] is True
    document = json.loads(answer["content"][0]["text"])
    assert document["type"] == "urn:mcp-suite:problem:result-too-large"
    assert document["metadata"] == {"max_result_bytes": 1_024}
