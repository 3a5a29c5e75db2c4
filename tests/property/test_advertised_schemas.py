"""What a model is shown may be looser than what the server enforces, never stricter (issue 46).

Every tool of the default configuration with all six tools, and arguments drawn around each
argument's real limits. Three judges: the server (`ToolSpec.validate_arguments`, the strict model,
what `tools/call` runs), the strict model's complete JSON Schema (every limit written out, as
`tools/list` showed it before issue 46), and the advertised `inputSchema`:

- whatever the server accepts, the advertised schema accepts (an optional argument sent as null is
  the same call as one left out, and the advertised schema offers only the second spelling);
- whatever the complete schema refuses, the server refuses with the in-band validation problem that
  names the arguments at fault: no limit went with the keywords that are no longer shown;
- each limit no longer shown is told by the refusal that meets it (the table).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.problems import InvalidArgumentsError
from mcp_suite.protocol import mcp
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.registry import open_registry

# A database nobody listens on: the tools are registered all the same (nothing here calls them).
_NO_DATABASE = "postgresql://reader:secret@127.0.0.1:1/mcp_demo"
TOOLS = ("sql_schema", "read_only_sql", "explain_sql", "sandbox_fs_list", "sandbox_fs_read", "system_metrics")


@dataclass(frozen=True)
class Judged:
    """One tool, its complete and advertised schemas, and the argument objects drawn for it."""

    tool: ToolSpec
    complete: dict[str, Any]
    advertised: dict[str, Any]
    within: st.SearchStrategy[dict[str, Any]]
    around: st.SearchStrategy[dict[str, Any]]

    def complete_accepts(self, arguments: dict[str, Any]) -> bool:
        return bool(jsonschema.Draft202012Validator(self.complete).is_valid(arguments))

    def advertised_accepts(self, arguments: dict[str, Any]) -> bool:
        return bool(jsonschema.Draft202012Validator(self.advertised).is_valid(arguments))


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Judged]]:
    settings = Settings(
        sql_dsn=SecretStr(_NO_DATABASE),
        safe_data_dir=tmp_path_factory.mktemp("sandbox"),
        sql_connect_timeout_s=1.0,
    )
    with open_registry(settings) as registry:
        assert tuple(registry.tools) == TOOLS
        judged = {}
        for name, tool in registry.tools.items():
            complete = mcp.model_json_schema(tool.args_model)
            judged[name] = Judged(
                tool,
                complete,
                tool.input_schema(),
                _arguments(complete, within=True),
                _arguments(complete, within=False),
            )
        yield judged


def _server_refuses(tool: ToolSpec, arguments: dict[str, Any]) -> InvalidArgumentsError | None:
    try:
        tool.validate_arguments(arguments)
    except InvalidArgumentsError as problem:
        return problem
    return None


def _values(schema: dict[str, Any], *, within: bool) -> st.SearchStrategy[Any]:
    """Values for one argument of `schema` (complete, limits written out): each branch's limits,
    one past them, other types, and anything in between; `within`: only those `schema` accepts."""
    edges: list[Any] = [None, True, False, 0, 1.0, "", [], {}, "5"]
    between: list[st.SearchStrategy[Any]] = [st.text(max_size=12)]
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "string":
            low, high = branch.get("minLength", 0), branch.get("maxLength", 64)
            edges += ["x" * length for length in {max(low - 1, 0), low, high, high + 1}]
        if branch.get("type") == "integer":
            low, high = branch.get("minimum", -10), branch.get("maximum", 10)
            edges += [low - 1, low, high, high + 1, float(high)]
            between.append(st.integers(low - 3, high + 3))
        for value in branch.get("enum", []):
            edges += [value, value.upper()]
    if not within:
        return st.sampled_from(edges) | st.one_of(between)
    check = jsonschema.Draft202012Validator(schema).is_valid
    return st.sampled_from([edge for edge in edges if check(edge)]) | st.one_of(between).filter(check)


def _arguments(complete: dict[str, Any], *, within: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Argument objects: any of the tool's arguments (`within`: the required ones always, each
    value within its limits), and otherwise now and then one it does not have."""
    values = {name: _values(prop, within=within) for name, prop in complete["properties"].items()}
    required = {name: values.pop(name) for name in complete.get("required", ()) if within}
    if not within:
        values["path"] = st.just("notes.txt")  # a near-miss name models send (`relative_path`)
    return st.fixed_dictionaries(required, optional=values)


@pytest.mark.parametrize("name", TOOLS)
@given(data=st.data())
def test_the_advertised_schema_accepts_every_call_the_server_accepts(
    tools: dict[str, Judged], name: str, data: st.DataObject
) -> None:
    judged = tools[name]
    arguments = data.draw(judged.within)
    if _server_refuses(judged.tool, arguments) is not None:
        return
    left_out = {key: value for key, value in arguments.items() if value is not None}
    assert judged.advertised_accepts(left_out), (name, arguments)
    assert judged.tool.validate_arguments(left_out) == judged.tool.validate_arguments(arguments)


@pytest.mark.parametrize("name", TOOLS)
@given(data=st.data())
def test_the_server_refuses_every_call_the_complete_schema_refuses_naming_what_is_wrong(
    tools: dict[str, Judged], name: str, data: st.DataObject
) -> None:
    judged = tools[name]
    arguments = data.draw(judged.around)
    if judged.complete_accepts(arguments):
        return
    problem = _server_refuses(judged.tool, arguments)
    assert problem is not None, (name, arguments)
    assert problem.detail.startswith("The arguments do not match the tool's inputSchema: ")
    required = judged.complete.get("required", ())
    assert set(problem.invalid_params) <= {*arguments, *required}, problem.detail


# Limits a model is no longer shown, at the default settings, and the words of the refusal that meets
# each one.
LIMITS = [
    ("read_only_sql", {"sql": ""}, "sql: String should have at least 1 character"),
    ("read_only_sql", {"sql": "x" * 10_001}, "sql: String should have at most 10000 characters"),
    (
        "read_only_sql",
        {"sql": "SELECT 1", "max_rows": 0},
        "max_rows: Input should be greater than or equal to 1",
    ),
    ("sql_schema", {"schema": ""}, "schema: String should have at least 1 character"),
    ("sql_schema", {"name_like": "x" * 301}, "name_like: String should have at most 300 characters"),
    ("sql_schema", {"object": "x" * 301}, "object: String should have at most 300 characters"),
    ("sql_schema", {"cursor": "x" * 1_001}, "cursor: String should have at most 1000 characters"),
    ("sql_schema", {"max_objects": 501}, "max_objects: Input should be less than or equal to 500"),
    (
        "sandbox_fs_list",
        {"relative_path": "x" * 4_097},
        "relative_path: String should have at most 4096 characters",
    ),
    ("sandbox_fs_list", {"max_entries": 1_001}, "max_entries: Input should be less than or equal to 1000"),
    ("sandbox_fs_list", {"max_depth": 9}, "max_depth: Input should be less than or equal to 8"),
    ("sandbox_fs_read", {"relative_path": ""}, "relative_path: String should have at least 1 character"),
    (
        "sandbox_fs_read",
        {"relative_path": "a", "max_bytes": 1_048_577},
        "max_bytes: Input should be less than or equal to 1048576",
    ),
]


@pytest.mark.parametrize(("name", "arguments", "said"), LIMITS)
def test_a_limit_no_longer_shown_is_enforced_and_told_by_its_refusal(
    tools: dict[str, Judged], name: str, arguments: dict[str, Any], said: str
) -> None:
    judged = tools[name]
    assert judged.advertised_accepts(arguments)  # not shown...
    assert not judged.complete_accepts(arguments)  # ...but a limit, as ever
    problem = _server_refuses(judged.tool, arguments)
    assert problem is not None
    assert problem.detail == f"The arguments do not match the tool's inputSchema: {said}"
    assert list(problem.invalid_params) == [said.split(":")[0]]


def test_an_argument_a_tool_does_not_have_is_still_shown_as_refused(tools: dict[str, Judged]) -> None:
    for name, judged in tools.items():
        assert judged.advertised["additionalProperties"] is False, name
        assert not judged.advertised_accepts({"unheard_of": 1}), name
        assert _server_refuses(judged.tool, {"unheard_of": 1}) is not None, name


def test_the_advertised_schema_has_no_null_branch_no_bound_and_no_model_description(
    tools: dict[str, Judged],
) -> None:
    bounds = {"minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
    for name, judged in tools.items():
        assert judged.advertised == judged.tool.input_schema()  # what tools/list shows
        assert "description" not in judged.advertised, name
        for argument, prop in judged.advertised["properties"].items():
            assert "anyOf" not in prop, (name, argument)
            assert prop.get("default", "") is not None, (name, argument)
            if argument == "max_rows":  # the one bound shown: how many rows a model may ask for
                assert prop["maximum"] == judged.complete["properties"][argument]["maximum"], name
                assert not bounds - {"maximum"} & prop.keys(), (name, argument)
            else:
                assert not bounds & prop.keys(), (name, argument)


@pytest.mark.parametrize("name", ["read_only_sql", "explain_sql"])
def test_max_rows_shows_its_maximum_and_sql_is_described(tools: dict[str, Judged], name: str) -> None:
    judged = tools[name]
    properties = judged.advertised["properties"]
    assert properties["max_rows"]["maximum"] == 200  # MCP_SQL_MAX_ROWS's default
    assert not judged.advertised_accepts({"sql": "SELECT 1", "max_rows": 201})
    assert judged.advertised_accepts({"sql": "SELECT 1", "max_rows": 200})
    assert properties["sql"]["description"] == "One PostgreSQL query"
