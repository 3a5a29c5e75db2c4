"""`open_registry`: what the served tools, resources and instructions are made of."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from mcp_suite.settings import Settings
from mcp_suite.tools.base import SourceState, Toolset
from mcp_suite.tools.files.opener import open_files
from mcp_suite.tools.registry import Registry, open_registry
from tests.support.harness import NOTES_URI, ToolLog, resource_opener, tool_opener

# Nothing built in: no database, no folder, no metrics.
BARE = Settings(metrics_enabled=False)


@contextlib.contextmanager
def _disabled(settings: Settings) -> Iterator[Toolset | None]:
    yield None


def test_with_nothing_enabled_no_tool_is_served_and_the_instructions_say_so() -> None:
    with open_registry(BARE, extra=[_disabled]) as registry:
        assert registry.tools == {}
        assert registry.resources == {}
        assert registry.instructions == (
            "mcp-suite is running with no tools enabled; its configuration enables them."
        )


def test_a_toolset_resources_are_served_by_uri() -> None:
    with open_registry(BARE, extra=[resource_opener()], builtins=False) as registry:
        assert list(registry.resources) == [NOTES_URI]
        assert registry.tools == {}


def test_two_toolsets_serving_one_tool_name_are_refused() -> None:
    opener = tool_opener(ToolLog())
    with open_registry(BARE, extra=[opener], builtins=False) as registry:
        name = next(iter(registry.tools))
    twice = open_registry(BARE, extra=[opener, opener], builtins=False)
    with pytest.raises(ValueError, match=f"duplicate tool name '{name}'"), twice:
        pass


def test_a_tool_spec_shows_only_its_name() -> None:
    with open_registry(BARE, extra=[tool_opener(ToolLog())], builtins=False) as registry:
        for name, spec in registry.tools.items():
            assert repr(spec) == f"ToolSpec(name={name!r})"


def test_the_file_tool_serves_nothing_without_a_folder() -> None:
    with open_files(BARE) as toolset:
        assert toolset is None


def test_a_registry_is_ready_while_at_least_one_of_its_sources_serves() -> None:
    def registry(*states: SourceState) -> Registry:
        return Registry(tools={}, resources={}, states=(lambda: list(states),))

    serving = SourceState("shop", reachable=True, audited=True)
    refused = SourceState("hr", reachable=True, audited=False)
    down = SourceState("pay", reachable=False, audited=False)
    assert registry().ready()  # nothing to serve but the other tools: ready
    assert registry(serving, refused, down).ready()
    assert not registry(refused, down).ready()
    assert [s.condition for s in (serving, refused, down)] == ["serving", "refused", "unreachable"]
