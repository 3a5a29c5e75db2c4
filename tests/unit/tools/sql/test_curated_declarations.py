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
from mcp_suite.tools.sql.curated.policy import (
    PG_TYPES,
    CuratedTool,
    Parameter,
    bound_values,
    input_schema,
    judged_text,
    parse_tools,
    placeholders,
)
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
        "properties": {"status": {"enum": ["open", "shipped"], "default": "open"}},
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


def test_a_curated_tool_with_two_parameters_costs_no_more_tokens_than_toolbox_s_documented_format(
    tmp_path: Path,
) -> None:
    (source,) = _load(tmp_path, SOURCE + TWO_PARAMETERS)
    (tool,) = source.tools
    ours = {"name": tool.served_name, "description": tool.description, "inputSchema": input_schema(tool)}
    assert tool.description == TOOLBOX["description"]
    # Ours says the allowed values and the range as keywords a client can check, theirs in words.
    properties = ours["inputSchema"]["properties"]
    assert properties["section"]["enum"] == ["guides", "reference", "changelog"]
    assert (properties["min_words"]["minimum"], properties["min_words"]["maximum"]) == (0, 100000)
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


# The declarations read directly (parse_tools is pure): each problem's whole wording, each bound
# exactly at its limit and one past it, and each good declaration as the whole tool it becomes.
def _parse(*tables: object) -> tuple[tuple[CuratedTool, ...], list[str]]:
    problems: list[str] = []
    tools = parse_tools(
        list(tables),
        source="my-shop",
        family_scope="sql:read",
        max_rows=100,
        max_result_bytes=1000,
        where="W",
        problems=problems,
    )
    return tools, problems


def _table(**keys: object) -> dict[str, object]:
    return {"name": "t", "description": "A question.", "statement": "SELECT 1", **keys}


def _problems(**keys: object) -> list[str]:
    tools, problems = _parse(_table(**keys))
    assert tools == ()
    return problems


def _one_parameter(**keys: object) -> list[str]:
    return _problems(statement="SELECT $1", parameters=[{"name": "p", **keys}])


def test_a_good_declaration_is_the_whole_tool_it_says_its_text_stripped_and_its_limits_its_own() -> None:
    (tool,), problems = _parse(
        _table(title="  Orders  ", description="  What is open.  ", max_rows=1, max_result_bytes=500)
    )
    assert problems == []
    assert tool == CuratedTool(
        source="my-shop",
        name="t",
        title="Orders",
        description="What is open.",
        statement="SELECT 1",
        parameters=(),
        max_rows=1,
        max_result_bytes=500,
        scope="sql:read:my-shop",
        served_name="my_shop_t",
    )


def test_each_bound_of_a_tool_is_allowed_exactly_at_its_limit() -> None:
    parameters = [{"name": f"p{n}", "type": "text"} for n in range(1, 17)]
    statement = "SELECT " + ", ".join(f"${n}" for n in range(1, 17))
    (tool,), problems = _parse(
        _table(
            title="x" * 80,
            description="d" * 250,
            statement=statement + " " * (8000 - len(statement)),
            max_rows=100,
            max_result_bytes=1000,
            parameters=parameters,
        )
    )
    assert problems == []
    assert (tool.title, len(tool.parameters), tool.max_rows, tool.max_result_bytes) == (
        "x" * 80,
        16,
        100,
        1000,
    )


def test_each_bound_of_a_tool_refuses_one_past_its_limit_in_its_own_words() -> None:
    parameters = [{"name": f"p{n}", "type": "text"} for n in range(1, 18)]
    assert _problems(
        title="x" * 81,
        description="d" * 251,
        statement="SELECT 1" + " " * 7993,
        max_rows=101,
        max_result_bytes=0,
        parameters=parameters,
    ) == [
        "W: tool 1 (t): title: one line of at most 80 characters",
        "W: tool 1 (t): description: at most 250 characters",
        "W: tool 1 (t): statement: at most 8000 characters, no NUL",
        "W: tool 1 (t): max_rows: an integer from 1 to the source's own 100",
        "W: tool 1 (t): max_result_bytes: an integer from 1 to the source's own 1000",
        "W: tool 1 (t): parameters: a list of at most 16 tables, $1 first",
    ]


def test_a_tool_s_keys_of_the_wrong_kind_are_each_named_never_a_crash() -> None:
    tools, problems = _parse(
        {"name": 3, "title": 3, "description": "d", "statement": 7, "max_rows": "10", "parameters": [3]}
    )
    assert tools == ()
    assert problems == [
        "W: tool 1: name: required, lower-case letters, digits and _ (at most 40)",
        "W: tool 1: title: one line of at most 80 characters",
        "W: tool 1: statement: required, one SELECT with $1..$n for its parameters",
        "W: tool 1: max_rows: an integer from 1 to the source's own 100",
        "W: tool 1: parameters: a list of at most 16 tables, $1 first",
    ]
    # A statement that is not text is named once, never also read by PostgreSQL's scanner.
    assert _problems(statement=7) == [
        "W: tool 1 (t): statement: required, one SELECT with $1..$n for its parameters"
    ]
    assert _problems(max_rows=True) == ["W: tool 1 (t): max_rows: an integer from 1 to the source's own 100"]
    # A statement is read for its placeholders only once the rest of its tool is good.
    assert _problems(name="T", statement="SELECT $1") == [
        "W: tool 1 (T): name: required, lower-case letters, digits and _ (at most 40)"
    ]


def test_a_refused_tool_does_not_stop_the_reading_of_the_tools_after_it() -> None:
    tools, problems = _parse(_table(name="Bad"), _table(), _table(), _table(name="u"))
    assert [tool.name for tool in tools] == ["t", "u"]
    assert problems == [
        "W: tool 1 (Bad): name: required, lower-case letters, digits and _ (at most 40)",
        "W: tool 3 (t): name: another tool of this source has the name 't'",
    ]


def test_a_statement_s_placeholders_and_its_parameters_are_named_both_in_the_problem() -> None:
    two = [{"name": "a", "type": "text"}, {"name": "b", "type": "text"}]
    assert _problems(statement="SELECT $2", parameters=two) == [
        "W: tool 1 (t): statement: its placeholders are $2, its parameters declare $1, $2: each "
        "parameter is one $n, in order"
    ]
    assert _problems(statement="SELECT $1") == [
        "W: tool 1 (t): statement: its placeholders are $1, its parameters declare none: each "
        "parameter is one $n, in order"
    ]


def test_a_good_parameter_is_the_whole_parameter_it_says() -> None:
    (tool,), problems = _parse(
        _table(
            statement="SELECT $1,$2,$3,$4,$5",
            parameters=[
                {"name": "n", "type": "int4", "description": " How many. ", "minimum": 1, "maximum": 9},
                {"name": "day", "type": "date", "default": "2026-12-07"},
                {"name": "flag", "type": "bool", "default": True},
                {"name": "who", "type": "text", "bind": "sub"},
                {"name": "code", "type": "text", "enum": ["a", "b"], "max_length": 1},
            ],
        )
    )
    assert problems == []
    assert tool.parameters == (
        Parameter(name="n", type=PG_TYPES["integer"], description="How many.", minimum=1, maximum=9),
        Parameter(name="day", type=PG_TYPES["date"], required=False, default="2026-12-07"),
        Parameter(name="flag", type=PG_TYPES["boolean"], required=False, default=True),
        Parameter(name="who", type=PG_TYPES["text"], bind="sub"),
        Parameter(name="code", type=PG_TYPES["text"], enum=("a", "b"), max_length=1),
    )
    assert judged_text(tool) == (
        "SELECT (NULL::integer),(NULL::date),(NULL::boolean),(NULL::text),(NULL::text)"
    )
    assert input_schema(tool) == {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "description": "How many.", "minimum": 1, "maximum": 9},
            "day": {"type": "string", "format": "date", "default": "2026-12-07"},
            "flag": {"type": "boolean", "default": True},
            "code": {"enum": ["a", "b"], "maxLength": 1},
        },
        "required": ["n", "code"],
    }
    assert bound_values(tool, {"n": 3, "code": "a"}, "ann", {}) == [
        b"3",
        b"2026-12-07",
        b"true",
        b"ann",
        b"a",
    ]


def test_an_integer_bound_on_one_side_advertises_its_type_s_range_on_the_other() -> None:
    (tool,), problems = _parse(
        _table(
            statement="SELECT $1, $2, $3",
            parameters=[
                {"name": "low", "type": "smallint", "minimum": -32768},
                {"name": "high", "type": "integer", "maximum": 9},
                {"name": "free", "type": "bigint", "enum": [-(2**63), 2**63 - 1]},
            ],
        )
    )
    assert problems == []
    assert input_schema(tool)["properties"] == {
        "low": {"type": "integer", "minimum": -32768, "maximum": 32767},
        "high": {"type": "integer", "minimum": -(2**31), "maximum": 9},
        "free": {"enum": [-(2**63), 2**63 - 1]},
    }
    assert _one_parameter(type="smallint", enum=[-32769]) == [
        "W: tool 1 (t): parameter $1 (p): enum: a list of at most 64 values of its type"
    ]
    assert _one_parameter(type="smallint", maximum=32768) == [
        "W: tool 1 (t): parameter $1 (p): maximum: a number of its type (integer and numeric parameters only)"
    ]


def test_each_bound_of_a_parameter_is_allowed_exactly_at_its_limit() -> None:
    (tool,), problems = _parse(
        _table(
            statement="SELECT $1, $2, $3",
            parameters=[
                {
                    "name": "a",
                    "type": "text",
                    "description": "d" * 250,
                    "pattern": "x" * 200,
                    "max_length": 1000,
                },
                {"name": "b", "type": "integer", "enum": list(range(64))},
                {"name": "c", "type": "varchar", "max_length": 1},
            ],
        )
    )
    assert problems == []
    assert [(p.pattern, p.max_length, len(p.enum)) for p in tool.parameters] == [
        ("x" * 200, 1000, 0),
        (None, None, 64),
        (None, 1, 0),
    ]


def test_each_key_of_a_parameter_refuses_in_its_own_words() -> None:
    here = "W: tool 1 (t): parameter $1 (p)"
    cases: list[tuple[dict[str, object], list[str]]] = [
        (
            {"type": ["text"]},
            [
                f"{here}: type: one of {', '.join(PG_TYPES)} (a value, never an identifier: "
                "a table or column name cannot be a parameter)"
            ],
        ),
        ({"type": "text", "description": "d" * 251}, [f"{here}: description: at most 250 characters"]),
        (
            {"type": "text", "bind": 3},
            [f'{here}: bind: "sub", "claim:<name>" or "group:<name>" (a claim of the caller\'s token)'],
        ),
        (
            {"type": "text", "bind": "customer"},
            [f'{here}: bind: "sub", "claim:<name>" or "group:<name>" (a claim of the caller\'s token)'],
        ),
        ({"type": "boolean", "bind": "sub"}, [f"{here}: bind: a claim binds a text or integer parameter"]),
        (
            {"type": "integer", "enum": list(range(65))},
            [f"{here}: enum: a list of at most 64 values of its type"],
        ),
        ({"type": "text", "enum": [1]}, [f"{here}: enum: a list of at most 64 values of its type"]),
        (
            {"type": "text", "minimum": "a"},
            [f"{here}: minimum: a number of its type (integer and numeric parameters only)"],
        ),
        (
            {"type": "integer", "maximum": "a"},
            [f"{here}: maximum: a number of its type (integer and numeric parameters only)"],
        ),
        (
            {"type": "text", "pattern": 3},
            [f"{here}: pattern: a regular expression of at most 200 characters (text only)"],
        ),
        (
            {"type": "text", "pattern": "x" * 201},
            [f"{here}: pattern: a regular expression of at most 200 characters (text only)"],
        ),
        (
            {"type": "text", "pattern": "(?i)x"},
            [
                f"{here}: pattern: no look-around, backreference or inline "
                "group: a JSON Schema pattern that every client and the "
                "server's linear-time matcher read alike"
            ],
        ),
        ({"type": "text", "max_length": "5"}, [f"{here}: max_length: an integer from 1 to 1000 (text only)"]),
        (
            {"type": "text", "max_length": True},
            [f"{here}: max_length: an integer from 1 to 1000 (text only)"],
        ),
        (
            {"type": "text", "max_length": 1001},
            [f"{here}: max_length: an integer from 1 to 1000 (text only)"],
        ),
        (
            {"type": "integer", "max_length": 5},
            [f"{here}: max_length: an integer from 1 to 1000 (text only)"],
        ),
        (
            {"type": "date", "default": "7 Dec", "required": False},
            [f"{here}: default: a value of its type (of its enum), for a parameter not required"],
        ),
    ]
    for keys, expected in cases:
        assert _one_parameter(**keys) == expected, keys


def test_a_bound_parameter_names_every_key_that_would_shape_an_argument() -> None:
    assert _one_parameter(
        type="integer",
        bind="claim:team",
        default=1,
        enum=[1],
        minimum=0,
        maximum=5,
        pattern="a",
        required=True,
    ) == [
        "W: tool 1 (t): parameter $1 (p): default, enum, maximum, minimum, pattern, required: a bound "
        "parameter takes its value from the token alone",
        "W: tool 1 (t): parameter $1 (p): pattern: a regular expression of at most 200 characters "
        "(text only)",
        "W: tool 1 (t): parameter $1 (p): default: a value of its type (of its enum), for a parameter "
        "not required",
    ]


def test_a_refused_parameter_does_not_stop_the_reading_of_the_parameters_after_it() -> None:
    assert _problems(
        statement="SELECT $1, $2", parameters=[{"name": 3, "type": "text"}, {"name": "q", "type": "regclass"}]
    ) == [
        "W: tool 1 (t): parameter $1: name: required, lower-case letters, digits and _ (at most 40)",
        f"W: tool 1 (t): parameter $2 (q): type: one of {', '.join(PG_TYPES)} (a value, never an identifier: "
        "a table or column name cannot be a parameter)",
    ]


def test_a_claim_binding_refusal_names_the_tool_the_parameter_and_the_shape_it_needs() -> None:
    (tool,), problems = _parse(
        _table(
            statement="SELECT $1, $2, $3",
            parameters=[
                {"name": "who", "type": "text", "bind": "sub"},
                {"name": "team", "type": "integer", "bind": "claim:team_id"},
                {"name": "teams", "type": "text[]", "bind": "group:groups"},
            ],
        )
    )
    assert problems == []
    good = {"team_id": 7, "groups": ["g" * 1000]}
    assert bound_values(tool, {}, "ann", good) == [b"ann", b"7", b'{"' + b"g" * 1000 + b'"}']
    assert bound_values(tool, {}, "a" * 1000, {**good, "groups": ["g"] * 1000})[0] == b"a" * 1000
    refusals = [
        ({}, "a" * 1001, "'who'", "subject", "a string"),
        (good, None, "'who'", "subject", "a string"),
        ({**good, "team_id": "7"}, "ann", "'team'", "claim 'team_id'", "an integer"),
        ({**good, "groups": []}, "ann", "'teams'", "claim 'groups'", "a list of 1 to 1000 strings"),
    ]
    for claims, subject, bound, what, shape in refusals:
        with pytest.raises(AccessDeniedError) as raised:
            bound_values(tool, {}, subject, claims)
        assert raised.value.detail == (
            f"The tool my_shop_t binds its parameter {bound} to the caller's verified {what}, and this call "
            f"has no usable one (a verified token that holds it, {shape}); the call was refused."
        )
        assert raised.value.metadata == {"tool": "my_shop_t", "bound": bound.strip("'"), "retryable": False}
