"""The tool registry: which tools this process serves, opened and closed together.

`open_registry(settings)` enters each enabled family's opener (`open_sql`, `open_files`,
`open_metrics`; docs/tools/: SQL only with `MCP_SQL_DSN` or a configuration file, files only with
`MCP_SAFE_DATA_DIR`, metrics unless disabled) on one ExitStack and yields a `Registry`. The files and
metrics openers are plain imports (the layer contract sees each arrow); the SQL family, which loads
psycopg and its libpq, waits until it is enabled: the one deferred import here, its cost measured
(docs/performance.md, "Start-up"). Must not import trio.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from mcp_suite.protocol import untrusted
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.settings import Settings
from mcp_suite.tools.base import ResourceSpec, ResourceTemplateSpec, SourceState, Toolset, ToolSpec
from mcp_suite.tools.files.opener import open_files
from mcp_suite.tools.metrics.opener import open_metrics

__all__ = ["Registry", "ToolOpener", "instructions", "open_registry"]

ToolOpener = Callable[[Settings], AbstractContextManager[Toolset | None]]


def _open_sql(settings: Settings, *, stdio: bool = False) -> AbstractContextManager[Toolset | None]:
    # Deferred: psycopg with its bundled libpq is most of a cold start that has no SQL tool, so the
    # whole SQL family loads only when it is enabled.
    from mcp_suite.tools.sql.opener import open_sql

    return open_sql(settings, stdio=stdio)


def _open_sql_over_stdio(settings: Settings) -> AbstractContextManager[Toolset | None]:
    return _open_sql(settings, stdio=True)


# (opener, enabled?) — order is the order of tools/list.
_BUILTIN: tuple[tuple[ToolOpener, Callable[[Settings], bool]], ...] = (
    (_open_sql, lambda s: s.sql_dsn is not None or s.config_file is not None),
    (open_files, lambda s: s.safe_data_dir is not None),
    (open_metrics, lambda s: s.metrics_enabled),
)


def instructions(guidance: Iterable[str], *, framed: bool = False) -> str:
    """The `initialize` instructions: one short paragraph naming only the tools that are served;
    `framed`: some of them send data in the untrusted-data frame, which it says how to read."""
    parts = [text for text in guidance if text]
    if not parts:
        return "mcp-suite is running with no tools enabled; its configuration enables them."
    return " ".join(
        [
            "mcp-suite gives read-only, policy-checked access.",
            *parts,
            "Nothing can be written. Refusals are problem documents that say what to change.",
            *([untrusted.INSTRUCTIONS] if framed else []),
        ]
    )


@dataclass(frozen=True, slots=True)
class Registry:
    tools: dict[str, ToolSpec]
    resources: dict[str, ResourceSpec]
    # Every tool's models, then each toolset's own warm-up steps (see `Toolset.warm_up`).
    warm_up: tuple[Callable[[], object], ...] = field(default=())
    instructions: str = field(default_factory=lambda: instructions(()))
    # Every toolset's background tasks (see `Toolset.background`): the session runs them.
    background: tuple[Callable[[], Awaitable[object]], ...] = field(default=())
    # Every toolset's `states` (see `Toolset.states`).
    states: tuple[Callable[[], list[SourceState]], ...] = field(default=())
    # Each toolset's guidance, its `guidance_for` and its tools' names, in order (`instructions_for`).
    guidance: tuple[tuple[str, Callable[[Collection[str]], str] | None, tuple[str, ...]], ...] = field(
        default=()
    )
    # What some toolset offers beyond tools and resources (see `Toolset`); mcp-suite's offer none.
    templates: dict[str, ResourceTemplateSpec] = field(default_factory=dict)
    prompts: tuple[Prompt, ...] = field(default=())
    subscriptions: bool = False

    def instructions_for(self, sources_of: Callable[[str], Sequence[str]]) -> str:
        """The instructions for a caller who may read, with each tool, the sources `sources_of`
        gives for its name: a toolset whose tools take a `source` names only those (and says
        nothing when there are none). The `instructions` name every source."""
        parts = []
        for text, guidance_for, tool_names in self.guidance:
            if guidance_for is None:
                parts.append(text)
                continue
            allowed = {source for name in tool_names for source in sources_of(name)}
            parts.append(guidance_for(allowed))
        return instructions(parts, framed=any(tool.untrusted for tool in self.tools.values()))

    def source_states(self) -> list[SourceState]:
        """Every data source's state, toolset by toolset (no I/O)."""
        return [state for states in self.states for state in states()]

    def ready(self) -> bool:
        """This replica can serve what it is configured to serve: it has no data source, or at
        least one of them serves (answered its last audit connection, its role passes the audit).
        A fault of one database, which every replica sharing it sees alike, is that source's own
        (its calls get a problem naming it) and takes no replica out of a load balancer's rotation."""
        states = self.source_states()
        return not states or any(state.serving for state in states)


def builtin_openers(settings: Settings, *, stdio: bool = False) -> list[ToolOpener]:
    """The enabled families' openers; `stdio`: for a transport without verified callers, where a
    source that reads only as each caller's mapped role is not offered (the SQL opener's `stdio`)."""
    return [
        _open_sql_over_stdio if stdio and opener is _open_sql else opener
        for opener, enabled in _BUILTIN
        if enabled(settings)
    ]


@contextlib.contextmanager
def open_registry(
    settings: Settings, *, extra: Iterable[ToolOpener] = (), builtins: bool = True, stdio: bool = False
) -> Iterator[Registry]:
    """Open every enabled tool; close them all (in reverse) when the block ends. `stdio`: served over
    stdio, where no caller is verified (see `builtin_openers`).

    Raises `StartupRefusedError` or `SettingsError` from a tool that must not serve.
    """
    openers = [*(builtin_openers(settings, stdio=stdio) if builtins else []), *extra]
    with contextlib.ExitStack() as stack:
        tools: dict[str, ToolSpec] = {}
        resources: dict[str, ResourceSpec] = {}
        warm_up: list[Callable[[], object]] = []
        guidance: list[str] = []
        by_toolset: list[tuple[str, Callable[[Collection[str]], str] | None, tuple[str, ...]]] = []
        background: list[Callable[[], Awaitable[object]]] = []
        states: list[Callable[[], list[SourceState]]] = []
        templates: dict[str, ResourceTemplateSpec] = {}
        prompts: list[Prompt] = []
        subscriptions = False
        for opener in openers:
            toolset = stack.enter_context(opener(settings))
            if toolset is None:
                continue
            for tool in toolset.tools:
                if tool.name in tools:
                    raise ValueError(f"duplicate tool name {tool.name!r}")
                tools[tool.name] = tool
            for resource in toolset.resources:
                resources[resource.uri] = resource
            for template in toolset.templates:
                templates[template.uri_template] = template
            prompts.extend(toolset.prompts)
            subscriptions = subscriptions or toolset.subscriptions
            warm_up.extend(toolset.warm_up)
            guidance.append(toolset.guidance)
            by_toolset.append((toolset.guidance, toolset.guidance_for, tuple(t.name for t in toolset.tools)))
            background.extend(toolset.background)
            if toolset.states is not None:
                states.append(toolset.states)
        models = [tool.models.get for tool in tools.values()]
        yield Registry(
            tools=tools,
            resources=resources,
            warm_up=(*models, *warm_up),
            instructions=instructions(guidance, framed=any(tool.untrusted for tool in tools.values())),
            background=tuple(background),
            states=tuple(states),
            guidance=tuple(by_toolset),
            templates=templates,
            prompts=tuple(prompts),
            subscriptions=subscriptions,
        )
