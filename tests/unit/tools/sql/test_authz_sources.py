"""Scopes per source (several databases behind one server), decided without I/O: `sql:read` grants
every source, `sql:read:<source>` one; the SQL tools are listed to a holder of either, with the
`source` enum cut to what it may read; a call or a resource read of another source lacks exactly
that source's scope."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.protocol.authz import (
    ANONYMOUS,
    UNGRANTABLE,
    Grants,
    Identity,
    grants_of,
    scoped_input_schema,
    source_scope,
)

SOURCES = ("warehouse", "product")
ONE = Identity(subject="gina", scopes=frozenset({"sql:read:product"}))
ALL = Identity(subject="hal", scopes=frozenset({"sql:read"}))
NONE = Identity(subject="ivy", scopes=frozenset({"metrics:read"}))
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sql": {"type": "string"}, "source": {"enum": list(SOURCES)}},
}
PLAIN: dict[str, Any] = {"type": "object", "properties": {"sql": {"type": "string"}}}


def _served(*sources: str, tool_schema: dict[str, Any] = SCHEMA) -> Grants:
    """A SQL family over `sources` (a tool taking `source`, one taking none), and a metrics tool,
    as their specs declare them; the names are plain data here."""
    return grants_of(
        [("query", "sql:read", tool_schema), ("schema", "sql:read", PLAIN), ("stats", "metrics:read", {})],
        [(f"postgres://{name}/schema", "sql:read", name) for name in sources],
    )


GRANTS = _served(*SOURCES)


def test_the_sources_come_from_the_tool_s_source_argument_or_are_its_family_s() -> None:
    assert GRANTS.tool("query").sources == SOURCES
    # A tool that takes no `source` reads its family's sources (one in practice: `default`).
    assert GRANTS.tool("schema").sources == SOURCES
    assert _served("default", tool_schema=PLAIN).tool("query").sources == ("default",)
    assert GRANTS.tool("stats").sources == ()
    assert GRANTS.resource("postgres://product/schema").sources == ("product",)
    assert source_scope("sql:read", "product") == "sql:read:product"


def test_a_tool_s_source_argument_names_its_sources_even_where_no_resource_describes_them() -> None:
    grants = grants_of(
        [("query", "sql:read", SCHEMA)],
        [("notes://about", "sql:read", None), ("docs://x", "docs:read", None)],
    )
    assert grants.tool("query").sources == SOURCES
    # A resource that describes no source is granted by its scope alone, not by a source's.
    assert grants.resource("notes://about").sources == ()
    assert grants.resource("notes://about").lacking(ALL) is None
    assert grants.resource("notes://about").lacking(ONE) == "sql:read"
    assert grants.resource("docs://x").lacking(ONE) == "docs:read"


def test_the_family_scope_allows_every_source_and_a_source_s_scope_that_source() -> None:
    query = GRANTS.tool("query")
    assert query.sources_allowed(ALL) == SOURCES
    assert query.sources_allowed(ANONYMOUS) == SOURCES
    assert query.sources_allowed(ONE) == ("product",)
    assert query.sources_allowed(NONE) == ()


def test_a_family_s_tools_are_listed_to_a_holder_of_one_source_s_scope_and_no_other_tool_is() -> None:
    assert GRANTS.tool("query").may_see(ONE) is True
    assert GRANTS.tool("query").may_see(NONE) is False
    assert GRANTS.tool("stats").may_see(ONE) is False
    assert GRANTS.tool("stats").may_see(NONE) is True
    # A family without sources has no per-source grant: `metrics:read:x` lists nothing.
    assert GRANTS.tool("stats").may_see(Identity("kim", frozenset({"metrics:read:x"}))) is False


def test_the_source_argument_lists_only_the_sources_allowed() -> None:
    assert scoped_input_schema(SCHEMA, ("product",))["properties"]["source"] == {"enum": ["product"]}
    assert SCHEMA["properties"]["source"] == {"enum": list(SOURCES)}  # the shared schema is unchanged
    plain = {"type": "object", "properties": {"path": {"type": "string"}}}
    assert scoped_input_schema(plain, ("product",)) == plain
    # A tool that takes no arguments may advertise no properties at all.
    assert scoped_input_schema({"type": "object"}, ("product",)) == {"type": "object"}


@pytest.mark.parametrize(
    ("identity", "tool", "arguments", "uri", "lacking"),
    [
        (ALL, "query", {"source": "warehouse"}, None, None),
        (ONE, "query", {"source": "product"}, None, None),
        (ONE, "query", {"source": "warehouse"}, None, "sql:read:warehouse"),
        (ONE, "query", {}, None, "sql:read:warehouse"),  # the first source, when none is named
        # A source not served: the family's scope, never one made of the caller's value.
        (ONE, "query", {"source": "日本"}, None, "sql:read"),
        (ONE, "query", {"source": 7}, None, "sql:read"),
        (ONE, "query", {"source": ["product"]}, None, "sql:read"),
        (NONE, "stats", {}, None, None),
        (NONE, "query", {"source": "product"}, None, "sql:read"),  # no SQL scope at all
        (NONE, None, None, "postgres://product/schema", "sql:read"),
        (ONE, "stats", {}, None, "metrics:read"),
        (ONE, None, None, "postgres://product/schema", None),
        (ONE, None, None, "postgres://warehouse/schema", "sql:read:warehouse"),
        (ONE, None, None, "file:///x", UNGRANTABLE),
        (ALL, "a_tool_not_served", {}, None, UNGRANTABLE),
    ],
)
def test_the_scope_a_call_or_a_read_lacks(
    identity: Identity,
    tool: str | None,
    arguments: dict[str, str] | None,
    uri: str | None,
    lacking: str | None,
) -> None:
    grant = GRANTS.tool(tool) if tool is not None else GRANTS.resource(uri or "")
    assert grant.lacking(identity, arguments) == lacking


def test_with_the_one_source_of_mcp_sql_dsn_its_resource_is_the_default_source_s() -> None:
    default = Identity(subject="jo", scopes=frozenset({"sql:read:default"}))
    grants = grants_of(
        [("schema", "sql:read", PLAIN)], [("postgres://mcp_demo/schema", "sql:read", "default")]
    )
    assert grants.resource("postgres://mcp_demo/schema").lacking(default) is None
    assert grants.tool("schema").lacking(default, {}) is None
    assert grants.resource("postgres://mcp_demo/schema").lacking(ONE) == "sql:read:default"


def test_the_metadata_lists_every_source_scope_after_the_family_scopes_and_a_401_asks_for_the_family() -> (
    None
):
    served = _served(*SOURCES)
    assert served.scopes() == ("sql:read", "metrics:read")  # what a 401 asks a client to get
    assert served.scopes_supported() == (
        "sql:read",
        "metrics:read",
        source_scope("sql:read", "warehouse"),
        source_scope("sql:read", "product"),
    )
    assert _served(tool_schema=PLAIN).scopes_supported() == ("sql:read", "metrics:read")
