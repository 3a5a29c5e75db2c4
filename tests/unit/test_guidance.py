"""What the model is told: `instructions` and the tool descriptions name only the tools that are
served, in their order of use, and `tools/list` with all six tools stays small (docs/tools/README.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
# The budget of the whole tools/list result with every tool, in bytes of compact JSON (about four
# bytes a token): peers send about 1.4k to 19k tokens.
TOOLS_LIST_BUDGET_BYTES = 15_000


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


def test_no_tools_is_said_plainly(tmp_path: Path) -> None:
    with open_registry(settings(sql=False, fs=False, metrics=False, root=tmp_path)) as opened:
        assert opened.tools == {}
        assert "no tools" in opened.instructions


def test_tools_list_with_all_six_tools_stays_within_its_budget(tmp_path: Path) -> None:
    with open_registry(settings(sql=True, fs=True, metrics=True, root=tmp_path)) as opened:
        payload = compact_json(tools_list(opened))
    assert len(payload.encode()) <= TOOLS_LIST_BUDGET_BYTES
    for tool in tools_list(opened)["tools"]:
        assert len(tool["description"]) <= 450, tool["name"]
