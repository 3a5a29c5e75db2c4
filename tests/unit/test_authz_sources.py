"""Scopes per source (several databases behind one server), decided without I/O: `sql:read` grants
every source, `sql:read:<source>` one; the SQL tools are listed to a holder of either, with the
`source` enum cut to what it may read; a call or a resource read of another source lacks exactly
that source's scope."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.protocol.authz import (
    ANONYMOUS,
    Identity,
    may_see,
    scope_lacking,
    scoped_input_schema,
    source_scope,
    sources_allowed,
    sql_sources,
)

SOURCES = ("warehouse", "product")
ONE = Identity(subject="gina", scopes=frozenset({"sql:read:product"}))
ALL = Identity(subject="hal", scopes=frozenset({"sql:read"}))
NONE = Identity(subject="ivy", scopes=frozenset({"metrics:read"}))
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sql": {"type": "string"}, "source": {"enum": list(SOURCES)}},
}


def test_the_sources_come_from_the_tools_source_argument_or_are_the_one_default() -> None:
    assert sql_sources([{"properties": {"sql": {}}}, SCHEMA]) == SOURCES
    assert sql_sources([{"properties": {"sql": {}}}, {}]) == ("default",)
    assert source_scope("product") == "sql:read:product"


def test_sql_read_allows_every_source_and_a_source_s_scope_that_source() -> None:
    assert sources_allowed(ALL, SOURCES) == SOURCES
    assert sources_allowed(ANONYMOUS, SOURCES) == SOURCES
    assert sources_allowed(ONE, SOURCES) == ("product",)
    assert sources_allowed(NONE, SOURCES) == ()


def test_the_sql_tools_are_listed_to_a_holder_of_one_source_s_scope_and_no_other_tool_is() -> None:
    assert may_see(ONE, "sql:read") is True
    assert may_see(NONE, "sql:read") is False
    assert may_see(ONE, "files:read") is False
    assert may_see(NONE, "metrics:read") is True


def test_the_source_argument_lists_only_the_sources_allowed() -> None:
    assert scoped_input_schema(SCHEMA, ("product",))["properties"]["source"] == {"enum": ["product"]}
    assert SCHEMA["properties"]["source"] == {"enum": list(SOURCES)}  # the shared schema is unchanged
    plain = {"type": "object", "properties": {"path": {"type": "string"}}}
    assert scoped_input_schema(plain, ("product",)) == plain


@pytest.mark.parametrize(
    ("identity", "tool", "arguments", "uri", "lacking"),
    [
        (ALL, "read_only_sql", {"source": "warehouse"}, None, None),
        (ONE, "read_only_sql", {"source": "product"}, None, None),
        (ONE, "read_only_sql", {"source": "warehouse"}, None, "sql:read:warehouse"),
        (ONE, "read_only_sql", {}, None, "sql:read:warehouse"),  # the first source, when none is named
        (NONE, "system_metrics", {}, None, None),
        (NONE, "read_only_sql", {"source": "product"}, None, "sql:read"),  # no SQL scope at all
        (NONE, None, None, "postgres://product/schema", "sql:read"),
        (ONE, "system_metrics", {}, None, "metrics:read"),
        (ONE, None, None, "postgres://product/schema", None),
        (ONE, None, None, "postgres://warehouse/schema", "sql:read:warehouse"),
        (ONE, None, None, "file:///x", "mcp-suite:unmapped"),
    ],
)
def test_the_scope_a_call_or_a_read_lacks(
    identity: Identity,
    tool: str | None,
    arguments: dict[str, str] | None,
    uri: str | None,
    lacking: str | None,
) -> None:
    assert scope_lacking(identity, SOURCES, tool=tool, arguments=arguments, resource_uri=uri) == lacking


def test_with_the_one_source_of_mcp_sql_dsn_its_resource_is_the_default_source_s() -> None:
    default = Identity(subject="jo", scopes=frozenset({"sql:read:default"}))
    assert scope_lacking(default, ("default",), resource_uri="postgres://mcp_demo/schema") is None
    assert scope_lacking(default, ("default",), tool="sql_schema", arguments={}) is None
    assert scope_lacking(ONE, ("default",), resource_uri="postgres://mcp_demo/schema") == "sql:read:default"
