"""What the model is told: `instructions` and the tool descriptions name only the tools that are
served, in their order of use, and `tools/list` with all six tools stays small (docs/tools/README.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.bench_tokens import CONFIGURATIONS, TARGET_TOKENS, Measure, measure, open_configuration
from mcp_suite.protocol import mcp
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.runtime.session import Session
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.registry import Registry, open_registry

ALL_TOOLS = (
    "sql_schema",
    "read_only_sql",
    "explain_sql",
    "sandbox_fs_list",
    "sandbox_fs_read",
    "system_metrics",
)
_NAMES = re.compile(r"\b(" + "|".join(ALL_TOOLS) + r")\b")
# A database nobody listens on: the start-up audit cannot connect, which is not fatal, and the
# tools are registered all the same (nothing here calls them).
_NO_DATABASE = "postgresql://reader:secret@127.0.0.1:1/mcp_demo"
# The budget of the whole tools/list result with every tool (output schemas, titles and annotations
# included), in bytes of compact JSON.
TOOLS_LIST_BUDGET_BYTES = 12_100  # 12,000 before issue 53: max_rows's maximum and sql's description
# What a model is shown of tools/list (issue 46; bench/bench_tokens.py counts it in o200k tokens):
# the compact JSON of each tool's name, description and inputSchema, and of each default
# configuration's whole list, in bytes. A change that grows one fails here and says by how much:
# make it smaller, or raise the budget in the same commit and say why in its message.
VISIBLE_BUDGET_BYTES = {
    "sql_schema": 687,
    # issue 53: +51 bytes each, `max_rows`'s maximum and a description of `sql`
    "read_only_sql": 495,
    "explain_sql": 523,
    "sandbox_fs_list": 536,
    "sandbox_fs_read": 462,
    "system_metrics": 286,
}
VISIBLE_TOTAL_BUDGET_BYTES = {"all six tools": 2_996, "SQL tools only": 1_709}


def settings(*, sql: bool, fs: bool, metrics: bool, root: Path) -> Settings:
    return Settings(
        sql_dsn=SecretStr(_NO_DATABASE) if sql else None,
        safe_data_dir=root if fs else None,
        metrics_enabled=metrics,
        sql_connect_timeout_s=1.0,
    )


@pytest.fixture(params=[(True, True, True), (True, False, False), (False, True, False), (False, False, True)])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    sql, fs, metrics = request.param
    with open_registry(settings(sql=sql, fs=fs, metrics=metrics, root=tmp_path)) as opened:
        yield opened


def tools_list(registry: Registry) -> dict[str, Any]:
    """The `tools/list` result exactly as a session serves it."""
    session = Session(settings=Settings(), registry=registry)
    return mcp.tools_list_result(session.tool_descriptions(), {})


def test_instructions_name_every_served_tool_and_no_other(registry: Registry) -> None:
    served = set(registry.tools)
    assert set(_NAMES.findall(registry.instructions)) == served


def test_descriptions_and_problems_name_only_served_tools(registry: Registry) -> None:
    served = set(registry.tools)
    for tool in registry.tools.values():
        assert set(_NAMES.findall(tool.description)) <= served, tool.name
        assert set(_NAMES.findall(compact_json(mcp.model_json_schema(tool.args_model)))) <= served


def test_the_order_of_use_is_the_order_of_the_instructions_and_of_tools_list(tmp_path: Path) -> None:
    with open_registry(settings(sql=True, fs=True, metrics=True, root=tmp_path)) as opened:
        text = opened.instructions
        assert list(opened.tools) == list(ALL_TOOLS)
    positions = [text.index(name) for name in ALL_TOOLS]
    assert positions == sorted(positions)


def test_the_order_of_use_is_told_by_the_instructions_alone(tmp_path: Path) -> None:
    # Issue 46: each fact once. The instructions give the order; a description that said it again
    # ("use it first", "call it before") would cost every turn and could come to disagree.
    with open_registry(settings(sql=True, fs=True, metrics=True, root=tmp_path)) as opened:
        for tool in opened.tools.values():
            assert not re.search(r"\b(first|before|then|after)\b", tool.description, re.IGNORECASE), tool.name


def test_each_description_names_what_its_result_says_about_the_rest(tmp_path: Path) -> None:
    # Output schemas are not shown to the model: the description is where it learns how a result
    # says that more is left (`truncated` and its `hint`, or `next_cursor`, which `truncated` shadows).
    with open_registry(settings(sql=True, fs=True, metrics=True, root=tmp_path)) as opened:
        tools = tools_list(opened)["tools"]
    for tool in tools:
        fields = set(tool["outputSchema"]["properties"])
        told = fields & {"hint", "next_cursor"} or fields & {"truncated"}
        if "hint" in told:
            told.add("truncated")
        for field in told:
            assert re.search(rf"\b{field}\b", tool["description"]), (tool["name"], field)


def test_no_tools_is_said_plainly(tmp_path: Path) -> None:
    with open_registry(settings(sql=False, fs=False, metrics=False, root=tmp_path)) as opened:
        assert opened.tools == {}
        assert "no tools" in opened.instructions


def test_tools_list_with_all_six_tools_stays_within_its_budget(tmp_path: Path) -> None:
    with open_registry(settings(sql=True, fs=True, metrics=True, root=tmp_path)) as opened:
        payload = compact_json(tools_list(opened))
    assert len(payload.encode()) <= TOOLS_LIST_BUDGET_BYTES
    for tool in tools_list(opened)["tools"]:
        assert len(tool["description"]) <= 250, tool["name"]


def over_budget(found: Measure, configuration: str) -> list[str]:
    """Each figure of `found` over its budget, with by how much."""
    figures = [(f"{tool} entry", size, VISIBLE_BUDGET_BYTES[tool]) for tool, (size, _) in found.tools.items()]
    figures.append(
        (f"whole list ({configuration})", found.total_bytes, VISIBLE_TOTAL_BUDGET_BYTES[configuration])
    )
    return [
        f"{what}: {size:,} bytes, {size - budget:,} over its budget of {budget:,}"
        for what, size, budget in figures
        if size > budget
    ]


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_what_a_model_is_shown_of_tools_list_stays_within_its_budgets(configuration: str) -> None:
    with open_configuration(configuration) as tools:
        found = measure(tools)
    assert over_budget(found, configuration) == []
    assert found.total_tokens <= TARGET_TOKENS[configuration], (
        f"{found.total_tokens:,} o200k tokens, {found.total_tokens - TARGET_TOKENS[configuration]:,} over"
        f" issue 46's target of {TARGET_TOKENS[configuration]:,}"
    )


def test_a_budget_overrun_is_told_with_by_how_much() -> None:
    grown = Measure({"sql_schema": (700, 150), "read_only_sql": (495, 101)}, 1_722, 366)
    assert over_budget(grown, "SQL tools only") == [
        "sql_schema entry: 700 bytes, 13 over its budget of 687",
        "whole list (SQL tools only): 1,722 bytes, 13 over its budget of 1,709",
    ]


# Keywords that constrain a value (JSON Schema 2020-12 assertions and applicators): a schema with
# none of them accepts anything, like `{}`.
_CONSTRAINING = frozenset(
    {
        *("type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum"),
        *("exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "maxItems", "minItems"),
        *("uniqueItems", "required", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems"),
        *("contains", "properties", "patternProperties", "additionalProperties", "propertyNames", "$ref"),
    }
)


def _subschemas(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for keyword in ("properties", "$defs", "patternProperties"):
        for name, sub in schema.get(keyword, {}).items():
            yield from _subschemas(sub, f"{path}.{keyword}.{name}")
    for keyword in ("items", "additionalProperties", "not", "contains"):
        if isinstance(schema.get(keyword), dict):
            yield from _subschemas(schema[keyword], f"{path}.{keyword}")
    for keyword in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for index, sub in enumerate(schema.get(keyword, [])):
            yield from _subschemas(sub, f"{path}.{keyword}[{index}]")


def test_every_schema_is_portable_no_type_array_and_no_schema_without_a_constraint(tmp_path: Path) -> None:
    # What MCP Inspector's `--strict` lint warns about (tests/e2e/test_interop_inspector.py runs
    # it): a `type` array (a nullable field is `anyOf` a type and null) and an unconstrained `{}`.
    with open_registry(settings(sql=True, fs=True, metrics=True, root=tmp_path)) as opened:
        tools = tools_list(opened)["tools"]
    assert len(tools) == len(ALL_TOOLS)
    for tool in tools:
        for key in ("inputSchema", "outputSchema"):
            for path, node in _subschemas(tool[key], f"{tool['name']}.{key}"):
                assert not isinstance(node.get("type"), list), (path, node)
                assert _CONSTRAINING & node.keys(), (path, node)
