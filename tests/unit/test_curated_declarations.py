"""Curated tools' declarations in the configuration file (issue 55): each problem is a start-up
error naming the file, the source and the tool (exit 78), and a good declaration becomes the tool
it says: its name prefixed by its source's, its parameters in order, the source's limits as ceilings,
the text the SQL policy judges (each $n a NULL of its type), and the schema it advertises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.bench_tokens import measure
from mcp_suite.problems import AccessDeniedError
from mcp_suite.settings import Settings, SettingsError
from mcp_suite.tools.sql.curated.policy import bound_values, input_schema, judged_text, placeholders
from mcp_suite.tools.sql.sources import load_sources

ENV = {"PW": "secret"}
SOURCE = (
    "[[sources]]\nname = 'shop'\ndescription = 'The shop'\n"
    "dsn = 'host=/tmp dbname=shop user=r'\npassword_env = 'PW'\n"
)
GOOD = """
[[sources.tools]]
name = "orders"
description = "The caller's orders of a status."
statement = "SELECT id FROM shop.orders WHERE customer = $1 AND status = $2 AND '$3' <> $$ $4 $$ -- $5"
max_rows = 10

[[sources.tools.parameters]]
name = "customer"
type = "text"
bind = "claim:customer_id"

[[sources.tools.parameters]]
name = "status"
type = "text"
enum = ["open", "shipped"]
default = "open"
required = false
"""


def _load(tmp_path: Path, text: str) -> tuple:  # type: ignore[type-arg]  # a tuple of sources
    path = tmp_path / "sources.toml"
    path.write_text(text)
    return load_sources(Settings(config_file=path), ENV)


def test_a_good_declaration_is_the_tool_it_says(tmp_path: Path) -> None:
    (source,) = _load(tmp_path, SOURCE + GOOD)
    (tool,) = source.tools
    assert tool.served_name == "shop_orders"
    assert tool.max_rows == 10
    assert tool.scope == "sql:read:shop"
    assert [p.name for p in tool.parameters] == ["customer", "status"]
    # PostgreSQL's scanner finds $1 and $2 only: not inside a string, a dollar quote or a comment.
    assert placeholders(tool.statement) == {1, 2}
    assert judged_text(tool) == (
        "SELECT id FROM shop.orders WHERE customer = (NULL::text) AND status = (NULL::text)"
        " AND '$3' <> $$ $4 $$ -- $5"
    )
    # The bound parameter is not an argument: only `status` is advertised.
    assert input_schema(tool) == {
        "type": "object",
        "properties": {"status": {"type": "string", "enum": ["open", "shipped"], "default": "open"}},
        "additionalProperties": False,
    }
    assert bound_values(tool, {}, "ann", {"customer_id": "c-7"}) == [b"c-7", b"open"]
    with pytest.raises(AccessDeniedError, match="customer_id"):
        bound_values(tool, {"status": "open"}, "ann", {})
    with pytest.raises(AccessDeniedError):
        bound_values(tool, {"status": "open"}, None, {"customer_id": "c-7"})  # no verified caller
    with pytest.raises(AccessDeniedError):
        bound_values(tool, {"status": "open"}, "ann", {"customer_id": ["c-7", "c-8"]})  # not one value


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('statement = "SELECT', 'statement = "SELECT $9,'), "its placeholders are $1, $2, $9"),
        (('type = "text"\nenum', 'type = "regclass"\nenum'), "parameter $2 (status): type: one of"),
        (('bind = "claim:customer_id"', 'bind = "claim:"'), "parameter $1 (customer): bind"),
        (('bind = "claim:customer_id"', 'bind = "sub"\ndefault = "x"'), "a bound parameter takes its value"),
        (('default = "open"', 'default = "closed"'), "parameter $2 (status): default"),
        (("max_rows = 10", "max_rows = 100000"), "tool 1 (orders): max_rows"),
        (('enum = ["open", "shipped"]', 'pattern = "^(?=o)"'), "pattern: no look-around"),
        (('enum = ["open", "shipped"]', 'pattern = "^(o"'), "pattern: not a regular expression"),
        (('name = "orders"', 'name = "Orders!"'), "tool 1 (Orders!): name"),
        (('description = "The caller', 'colour = "red"\ndescription = "The caller'), "colour: unknown key"),
    ],
)
def test_each_problem_of_a_declaration_is_named_with_its_tool(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        _load(tmp_path, SOURCE + GOOD.replace(*change))
    assert "source 1 (shop)" in str(raised.value)
    assert expected in str(raised.value)


def test_two_sources_whose_tools_would_share_a_name_are_refused(tmp_path: Path) -> None:
    other = SOURCE.replace("name = 'shop'", "name = 'shop_x'") + GOOD.replace('"orders"', '"y"')
    clash = SOURCE + GOOD.replace('"orders"', '"x_y"') + other
    with pytest.raises(SettingsError, match="shop_x_y"):
        _load(tmp_path, clash)


def test_a_curated_only_source_declares_a_tool(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="free_sql: false serves curated tools only"):
        _load(tmp_path, SOURCE + "free_sql = false\n")
    (source,) = _load(tmp_path, SOURCE + "free_sql = false\n" + GOOD)
    assert source.free_sql is False


TWO_PARAMETERS = """
[[sources.tools]]
name = "pages_by_section"
description = "The pages of one section with at least some words, longest first."
statement = "SELECT slug, words FROM docs.pages WHERE section = $1 AND words >= $2 ORDER BY words DESC"

[[sources.tools.parameters]]
name = "section"
type = "text"
description = "The section"
enum = ["guides", "reference", "changelog"]

[[sources.tools.parameters]]
name = "min_words"
type = "integer"
description = "At least this many words"
minimum = 0
maximum = 100000
default = 0
required = false
"""


def test_a_curated_tool_with_two_parameters_costs_no_more_tokens_than_dbhub_s_custom_tool(
    tmp_path: Path,
) -> None:
    """What the model is shown (name, description, inputSchema; bench/bench_tokens.py counts it):
    ours, its declared bounds and default included, against the same tool as DBHub serves a
    `[[tools]]` custom tool: its parameters as a zod shape (`allowed_values` an enum, a default
    making it optional), which the MCP TypeScript SDK writes as draft-07 JSON Schema."""
    (source,) = _load(tmp_path, SOURCE + TWO_PARAMETERS)
    (tool,) = source.tools
    ours = {"name": tool.served_name, "description": tool.description, "inputSchema": input_schema(tool)}
    dbhub = {
        "name": "pages_by_section",
        "description": tool.description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "section": {
                    "type": "string",
                    "enum": ["guides", "reference", "changelog"],
                    "description": "The section",
                },
                "min_words": {"type": "integer", "description": "At least this many words"},
            },
            "required": ["section"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }
    assert "minimum" in json.dumps(ours)  # the bounds are shown, not left out to save tokens
    assert measure([ours]).total_tokens <= measure([dbhub]).total_tokens
