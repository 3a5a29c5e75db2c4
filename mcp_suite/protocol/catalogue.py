"""What the server serves and what each caller may see of it, as values (no I/O, no trio).

`Catalogue` is built once per process by the runtime (`runtime.calls.catalogue_of`) and handed to
both transports: the tools (names, declared scopes, their advertised descriptions built on first
use), the resources, the instructions, and the grants drawn from them. `Catalogue.view(identity)`
is what one caller may see (the tools it may list, each `source` enum narrowed to its grants, the
resources it may list, instructions naming only its sources); `Catalogue.whole()` is everything,
as stdio shows it. `Ids` is where the random values come from. `Catalogue.core` builds a
`SessionCore` over a view. Must not import trio, a tool or the registry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_suite.lazy import Lazy
from mcp_suite.protocol import mcp
from mcp_suite.protocol.authz import Grants, Identity, grants_of, scoped_input_schema
from mcp_suite.protocol.completion import Completions
from mcp_suite.protocol.contents import ResourceTemplate
from mcp_suite.protocol.core import SessionCore
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.settings import ARG_MAX_DEPTH, ARG_MAX_ITEMS, MAX_FRAME_BYTES, MAX_JSON_DEPTH, Settings

__all__ = ["Catalogue", "Ids", "ServedResource", "ServedTemplate", "ServedTool", "View"]


@dataclass(frozen=True, slots=True)
class Ids:
    """The random values the protocol needs, drawn by whoever builds the exchange or the core:
    `boundary()` the untrusted-data frame's bits (`untrusted.BOUNDARY_BITS`), `session_id()` a
    legacy session's id (43 URL-safe characters). The server's come from `secrets`
    (`runtime.calls.SECRET_IDS`); a table test's from a counter, so that it asserts whole replies."""

    boundary: Callable[[], int]
    session_id: Callable[[], str]


@dataclass(frozen=True, slots=True)
class ServedTool:
    """A tool as the catalogue knows it before its models load: its name and declared scope."""

    name: str
    scope: str


@dataclass(frozen=True, slots=True)
class ServedResource:
    """A resource: its description, its declared scope and the data source it describes (or None);
    `completes`: its reader completes the names in it (completion/complete, `protocol.completion`)."""

    description: mcp.ResourceDescription
    scope: str
    source: str | None = None
    completes: bool = False


@dataclass(frozen=True, slots=True)
class ServedTemplate:
    """A resource template and the scope that grants every URI of it (its grant is keyed by the
    template, as a templated read's call is named)."""

    template: ResourceTemplate
    scope: str


@dataclass(frozen=True, slots=True)
class View:
    """What one caller sees: `tools()` (built on first use), `listed(uri)` the resources its
    resources/list shows (None: all), `instructions`, and `private` when the lists depend on who
    asks (their cache scope)."""

    tools: Callable[[], Sequence[mcp.ToolDescription]]
    instructions: str
    listed: Callable[[str], bool] | None = None
    private: bool = False


class Catalogue:
    """What one server serves (see the module's docstring). `describe` builds the advertised tool
    descriptions (the tools' models and JSON Schemas): called once, on first use (the warm-up, a
    tools/list, a call's scope check), never to answer `initialize`. `instructions_for(sources_of)`:
    the instructions for a caller who may read, with each tool, the sources `sources_of` gives.
    Thread-safe (the warm-up builds the descriptions in a worker thread)."""

    __slots__ = (
        "_described",
        "_grants",
        "_instructions_for",
        "instructions",
        "prompts",
        "resources",
        "served",
        "server_name",
        "server_version",
        "subscriptions",
        "templates",
        "tools",
    )

    def __init__(
        self,
        *,
        server_name: str,
        server_version: str,
        tools: Sequence[ServedTool],
        describe: Callable[[], Sequence[mcp.ToolDescription]],
        resources: Sequence[ServedResource] = (),
        instructions: str = "",
        instructions_for: Callable[[Callable[[str], Sequence[str]]], str] | None = None,
        templates: Sequence[ServedTemplate] = (),
        prompts: Sequence[Prompt] = (),
        subscriptions: bool = False,
    ) -> None:
        self.server_name = server_name
        self.server_version = server_version
        self.tools = tuple(tools)
        self.resources = tuple(resources)
        self.instructions = instructions
        self._instructions_for = instructions_for or (lambda _sources_of: instructions)
        self._described: Lazy[Sequence[mcp.ToolDescription]] = Lazy(describe)
        self.templates = tuple(templates)
        self.prompts = tuple(prompts)
        self.subscriptions = subscriptions
        resource_grants = [(r.description.uri, r.scope, r.source) for r in self.resources]
        resource_grants += [(t.template.uri_template, t.scope, None) for t in self.templates]
        # The scopes of what is served (a 401's challenge, the metadata's list) need no arguments:
        # the sources come with the resources that describe them.
        self.served = grants_of(((t.name, t.scope, {}) for t in self.tools), resource_grants)
        scope_of = {tool.name: tool.scope for tool in self.tools}
        # A tool's sources are its advertised `source` argument's: built with the descriptions,
        # once per process (rebuilt for every call, it made an HTTP call cost more: bench_http).
        self._grants: Lazy[Grants] = Lazy(
            lambda: grants_of(
                ((d.name, scope_of[d.name], d.input_schema) for d in self.descriptions()), resource_grants
            )
        )

    def descriptions(self) -> Sequence[mcp.ToolDescription]:
        """Every tool's advertised description, built once."""
        return self._described.get()

    def grants(self) -> Grants:
        """Each tool's and resource's grant, its sources included (builds the descriptions)."""
        return self._grants.get()

    def whole(self) -> View:
        """Everything served, as the one caller over stdio sees it."""
        return View(self.descriptions, self.instructions)

    def view(self, identity: Identity) -> View:
        """What `identity` may see: the tools it may list with `source` narrowed to its grants,
        the resources it may read, and (unless it holds every scope) instructions naming only its
        sources; its lists are private to it."""

        def tools() -> list[mcp.ToolDescription]:
            grants = self.grants()
            return [
                dataclasses.replace(
                    d,
                    input_schema=scoped_input_schema(
                        d.input_schema, grants.tool(d.name).sources_allowed(identity)
                    ),
                )
                for d in self.descriptions()
                if grants.tool(d.name).may_see(identity)
            ]

        instructions = self.instructions
        if not identity.unrestricted:
            grants = self.grants()
            instructions = self._instructions_for(lambda tool: grants.tool(tool).sources_allowed(identity))
        return View(
            tools,
            instructions,
            listed=lambda uri: self.grants().resource(uri).lacking(identity) is None,
            private=not identity.unrestricted,
        )

    def core(
        self,
        view: View,
        settings: Settings,
        draw_boundary: Callable[[], int],
        *,
        max_frame_bytes: int = MAX_FRAME_BYTES,
    ) -> SessionCore:
        """A `SessionCore` serving every tool and resource (each callable; a call outside the
        caller's grants is the transport's to refuse), listing what `view` shows.
        `max_frame_bytes`: the wire contract's; a test passes a shorter one."""
        return SessionCore(
            server_name=self.server_name,
            server_version=self.server_version,
            tool_names=[tool.name for tool in self.tools],
            tools=view.tools,
            instructions=view.instructions,
            resources=[resource.description for resource in self.resources],
            resources_listed=view.listed,
            max_frame_bytes=max_frame_bytes,
            max_json_depth=MAX_JSON_DEPTH,
            arg_max_depth=ARG_MAX_DEPTH,
            arg_max_items=ARG_MAX_ITEMS,
            call_deadline_s=settings.call_deadline_s,
            draw_boundary=draw_boundary,
            per_caller_lists=view.private,
            completions=Completions(
                {r.description.uri: r.source for r in self.resources if r.completes and r.source is not None},
                view.listed,
                self.prompts,
            ),
            prompt_list=self.prompts,
            templates=[served.template for served in self.templates],
            subscriptions=self.subscriptions,
        )
