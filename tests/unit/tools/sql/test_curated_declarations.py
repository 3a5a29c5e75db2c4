"""Curated tools' declarations in the configuration file (issue 55): each problem is a start-up
error naming the file, the source and the tool (exit 78), and a good declaration becomes the tool
it says: its name prefixed by its source's, its parameters in order, the source's limits as ceilings,
the text the SQL policy judges (each $n a NULL of its type), and the schema it advertises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
statement = "SELECT id FROM orders WHERE owner = $1 AND 'é€' <> '$3' AND status = $2 AND $$ $4 $$ <> '' --$5"
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
    # Characters outside ASCII before a placeholder move no replacement (the scanner counts characters).
    assert judged_text(tool) == (
        "SELECT id FROM orders WHERE owner = (NULL::text) AND 'é€' <> '$3' AND status = (NULL::text)"
        " AND $$ $4 $$ <> '' --$5"
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
    assert source.schema is True
    (source,) = _load(tmp_path, SOURCE + "free_sql = false\nschema = false\n" + GOOD)
    assert source.schema is False
    with pytest.raises(SettingsError, match="schema: false only with free_sql = false"):
        _load(tmp_path, SOURCE + "schema = false\n" + GOOD)
    with pytest.raises(SettingsError, match="schema: true or false"):
        _load(tmp_path, SOURCE + "schema = 1\n" + GOOD)
    with pytest.raises(SettingsError, match="free_sql: true or false"):
        _load(tmp_path, SOURCE + "free_sql = 0\n" + GOOD)


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


# The same two-parameter tool as Google's MCP Toolbox for Databases shows it to a model over MCP,
# written from its documentation (googleapis/genai-toolbox, docs/en/resources/tools/_index.md,
# "Specifying Parameters"): each parameter's `type` ("integer", a "float" as "number") and its
# `description` ("provided to the LLM as context"), `default` making it not required; the MCP
# `inputSchema` is an object of those properties and the required names (the shape of its
# parameters' MCP manifest in the same repository). `allowedValues`, `minValue` and `maxValue` are
# checked by the server and not in that schema, so an equivalent tool tells the model in words.
TOOLBOX = {
    "name": "pages_by_section",
    "description": "The pages of one section with at least some words, longest first.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "section": {"type": "string", "description": "The section: one of guides, reference, changelog"},
            "min_words": {
                "type": "integer",
                "description": "At least this many words, from 0 to 100000",
                "default": 0,
            },
        },
        "required": ["section"],
    },
}


@pytest.mark.xfail(
    strict=True,
    reason="measured: ours 96 o200k tokens, Toolbox's equivalent 88 (67 without the allowed values "
    "and range in words): our enum, minimum, maximum and additionalProperties are JSON Schema keywords, "
    "theirs are prose the server checks; the gap is open (docs/tools/curated.md)",
)
def test_a_curated_tool_with_two_parameters_costs_no_more_tokens_than_toolbox_s_documented_format(
    tmp_path: Path,
) -> None:
    (source,) = _load(tmp_path, SOURCE + TWO_PARAMETERS)
    (tool,) = source.tools
    ours = {"name": tool.served_name, "description": tool.description, "inputSchema": input_schema(tool)}
    assert tool.description == TOOLBOX["description"]
    assert measure([ours]).total_tokens <= measure([TOOLBOX]).total_tokens


def _tool(extra: str = "", parameters: str = "", statement: str = "SELECT 1") -> str:
    return (
        SOURCE + f'[[sources.tools]]\nname = "t"\ndescription = "A question."\nstatement = "{statement}"\n'
        f"{extra}\n{parameters}"
    )


def _parameter(body: str) -> str:
    return f'[[sources.tools.parameters]]\nname = "p"\n{body}\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SOURCE + "tools = 3\n", "tools: a list of [[sources.tools]] tables"),
        (_tool() + _tool().removeprefix(SOURCE), "another tool of this source has the name 't'"),
        (_tool('title = "two\\nlines"'), "title: one line"),
        (_tool().replace('description = "A question."', 'description = " "'), "description: required"),
        (_tool().replace('description = "A question."', f'description = "{"x" * 251}"'), "at most 250"),
        (_tool().replace('statement = "SELECT 1"', "statement = 7"), "statement: required"),
        (_tool(statement="SELECT 1 \\u0000"), "statement: at most 8000 characters, no NUL"),
        (_tool('scope = "a b"'), "scope: one OAuth scope"),
        (_tool('scope = "sql:read"'), "scope: its own scope, or sql:read:shop"),
        (_tool('scope = "sql:read:other"'), "scope: its own scope, or sql:read:shop"),
        (_tool("parameters = 3"), "parameters: a list of at most 16 tables"),
        (_tool(parameters=_parameter('type = "text"') * 2, statement="SELECT $1, $2"), "another parameter"),
        (_tool(statement="SELECT 'unterminated"), "PostgreSQL's scanner cannot read it"),
        (
            _tool(parameters='[[sources.tools.parameters]]\ntype = "text"\n', statement="SELECT $1"),
            "name: required",
        ),
        (
            _tool(parameters=_parameter('type = "text"\ndescription = 3'), statement="SELECT $1"),
            "description: at",
        ),
        (
            _tool(parameters=_parameter('type = "boolean"\nbind = "sub"'), statement="SELECT $1"),
            "binds a text",
        ),
        (_tool(parameters=_parameter('type = "text[]"'), statement="SELECT $1"), "text[] is for a parameter"),
        (
            _tool(parameters=_parameter('type = "text[]"\nbind = "claim:groups"'), statement="SELECT $1"),
            "a group binds a text[] parameter",
        ),
        (
            _tool(parameters=_parameter('type = "text"\nbind = "group:groups"'), statement="SELECT $1"),
            "a group binds a text[] parameter",
        ),
        (
            _tool(parameters=_parameter('type = "text[]"\nbind = "group:"'), statement="SELECT $1"),
            '"group:<name>"',
        ),
        (
            _tool(parameters=_parameter('type = "integer"\nenum = ["a"]'), statement="SELECT $1"),
            "enum: a list",
        ),
        (_tool(parameters=_parameter('type = "text"\nenum = [true]'), statement="SELECT $1"), "enum: a list"),
        (
            _tool(parameters=_parameter('type = "text"\nminimum = 1'), statement="SELECT $1"),
            "minimum: a number",
        ),
        (
            _tool(parameters=_parameter('type = "integer"\npattern = "a"'), statement="SELECT $1"),
            "pattern: a regular",
        ),
        (
            _tool(parameters=_parameter('type = "text"\nmax_length = 0'), statement="SELECT $1"),
            "max_length: an",
        ),
        (
            _tool(parameters=_parameter('type = "text"\nrequired = "no"'), statement="SELECT $1"),
            "required: true",
        ),
        (
            _tool(
                parameters=_parameter('type = "boolean"\ndefault = 1\nrequired = false'),
                statement="SELECT $1",
            ),
            "default",
        ),
    ],
)
def test_each_key_of_a_tool_and_its_parameters_is_checked(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(SettingsError) as raised:
        _load(tmp_path, text)
    assert expected in str(raised.value)


def test_values_are_bound_as_postgresql_reads_their_types_and_the_schema_says_each_bound(
    tmp_path: Path,
) -> None:
    parameters = "".join(
        f'[[sources.tools.parameters]]\nname = "{name}"\n{body}\n'
        for name, body in (
            ("flag", 'type = "boolean"'),
            ("ratio", 'type = "numeric"\nminimum = 0\nrequired = false'),
            ("cap", 'type = "numeric"\nmaximum = 9\nrequired = false'),
            ("day", 'type = "date"'),
            ("code", 'type = "text"\npattern = "^[a-z]+$"\nmax_length = 8'),
            ("team", 'type = "integer"\nbind = "claim:team_id"'),
        )
    )
    (source,) = _load(tmp_path, _tool(parameters=parameters, statement="SELECT $1, $2, $3, $4, $5, $6"))
    (tool,) = source.tools
    assert tool.bound
    properties = input_schema(tool)["properties"]
    assert properties["ratio"] == {"type": "number", "minimum": 0}
    assert properties["cap"] == {"type": "number", "maximum": 9}
    assert properties["day"] == {"type": "string", "format": "date"}
    assert properties["code"] == {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}
    assert "team" not in properties
    arguments = {"flag": False, "ratio": 0.25, "day": "2026-12-07", "code": "abc"}
    assert bound_values(tool, arguments, "ann", {"team_id": 7}) == [
        b"false",
        b"0.25",
        None,  # cap: not given, no default
        b"2026-12-07",
        b"abc",
        b"7",
    ]
    assert bound_values(tool, {**arguments, "ratio": None}, "ann", {"team_id": 7})[1] is None
    for claim in ("7", True, 2**40):  # an integer parameter takes an integer claim of its range only
        with pytest.raises(AccessDeniedError, match="team_id"):
            bound_values(tool, arguments, "ann", {"team_id": claim})


def test_a_group_binding_binds_the_callers_groups_as_a_text_array_and_refuses_any_other_claim(
    tmp_path: Path,
) -> None:
    parameters = '[[sources.tools.parameters]]\nname = "teams"\ntype = "text[]"\nbind = "group:groups"\n'
    (source,) = _load(tmp_path, _tool(parameters=parameters, statement="SELECT $1"))
    (tool,) = source.tools
    assert tool.bound
    assert input_schema(tool)["properties"] == {}
    # The judged text casts the placeholder to the array type PostgreSQL reads `= ANY($1)` as.
    assert judged_text(tool) == "SELECT (NULL::text[])"
    # Each group a quoted element of an array literal: a comma, a brace, a quote or a backslash
    # in a group's name stays inside its element.
    assert bound_values(tool, {}, "ann", {"groups": ["support", 'a,"b"}', "c\\d"]}) == [
        b'{"support","a,\\"b\\"}","c\\\\d"}'
    ]
    # Fail closed: no claim, one string, no group, a non-string, an empty or NUL-holding name,
    # too many groups, or no verified caller: refused, never bound as NULL or as no group.
    claims: dict[str, Any]
    for claims in (
        {},
        {"groups": "support"},
        {"groups": []},
        {"groups": ["support", 7]},
        {"groups": [""]},
        {"groups": ["a\x00b"]},
        {"groups": ["g"] * 1001},
        {"groups": None},
    ):
        with pytest.raises(AccessDeniedError, match=r"'groups'.*a list of 1 to 1000 strings"):
            bound_values(tool, {}, "ann", claims)
    with pytest.raises(AccessDeniedError, match="groups"):
        bound_values(tool, {}, None, {"groups": ["support"]})


@pytest.mark.parametrize(
    ("oid", "category", "expected"),
    [
        (16, "B", {"type": ["boolean", "null"]}),
        (20, "N", {"type": ["integer", "null"]}),
        (701, "N", {"type": ["number", "string", "null"]}),  # NaN and the infinities are strings
        (1700, "N", {"type": ["string", "null"]}),  # numeric: its exact text
        (1184, "D", {"type": ["string", "null"]}),
        (3802, "U", {}),  # jsonb: any JSON value
        (1009, "A", {"type": ["array", "null"]}),
        (99999, "E", {"type": ["string", "null"]}),  # an enum: its text
        (99998, "C", {}),  # a composite: shape not known, no claim made
    ],
)
def test_a_result_column_s_json_type_is_the_one_its_values_are_written_as(
    oid: int, category: str, expected: dict[str, Any]
) -> None:
    from mcp_suite.tools.sql.engine.convert import json_type

    assert json_type(oid, category) == expected
