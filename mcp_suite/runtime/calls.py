"""What every transport does the same way around the session core: build a core, run one call.

`new_core` builds a `SessionCore` over the registry's tools and resources (a transport may narrow
what a caller sees); `ToolCatalogue` builds the advertised tool descriptions once per process;
`CallRunner` carries out one `StartCall`: its place at the limiter, its one cancel scope with the
deadline, the strict argument schema, the tool, and the one exception → outcome boundary. It
decides nothing about the protocol: the core turns the outcome into an answer. The stdio session
and the HTTP app both use it; neither copies it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import trio

from mcp_suite import SERVER_NAME, __version__, observe
from mcp_suite.lazy import Lazy
from mcp_suite.problems import InternalServerError, ProblemError
from mcp_suite.protocol import mcp, untrusted
from mcp_suite.protocol.core import (
    CallInterrupted,
    CallKind,
    CallOutcome,
    CallRaised,
    ResourceRead,
    SessionCore,
    StartCall,
    ToolSucceeded,
)
from mcp_suite.protocol.mcp import structured_json
from mcp_suite.runtime.limiter import CallLimiter, Ticket
from mcp_suite.runtime.log_sink import logger
from mcp_suite.settings import ARG_MAX_DEPTH, ARG_MAX_ITEMS, MAX_FRAME_BYTES, MAX_JSON_DEPTH, Settings
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.registry import Registry

__all__ = ["CallRunner", "ToolCatalogue", "new_core"]


class ToolCatalogue:
    """The advertised tools of a registry, built once (by the warm-up, or the first `tools/list`):
    the models and their JSON Schemas are not needed to answer `initialize`. Thread-safe."""

    __slots__ = ("_descriptions", "_registry")

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._descriptions: Lazy[list[mcp.ToolDescription]] = Lazy(self._describe)

    def descriptions(self) -> list[mcp.ToolDescription]:
        return self._descriptions.get()

    def _describe(self) -> list[mcp.ToolDescription]:
        return [
            mcp.ToolDescription(
                name=tool.name,
                title=tool.title,
                description=tool.description,
                input_schema=tool.input_schema(),
                output_schema=_output_schema(tool),
            )
            for tool in self._registry.tools.values()
        ]


def _output_schema(tool: ToolSpec) -> dict[str, Any]:
    schema = mcp.model_json_schema(tool.result_model)
    return untrusted.declare(schema) if tool.untrusted else schema


def new_core(
    settings: Settings,
    registry: Registry,
    tools: Callable[[], Sequence[mcp.ToolDescription]],
    *,
    resource_uris: Callable[[str], bool] | None = None,
    per_caller_lists: bool = False,
    instructions: str | None = None,
    max_frame_bytes: int = MAX_FRAME_BYTES,
) -> SessionCore:
    """A `SessionCore` serving `registry`'s tools (every one callable; `tools` is what tools/list
    shows) and its resources (every one readable; resources/list shows those `resource_uris`
    admits, all when it is None).
    `per_caller_lists`: the lists depend on who asks (their cache scope is private).
    `instructions`: the caller's (`Registry.instructions_for`), else the registry's, naming all."""
    return SessionCore(
        server_name=SERVER_NAME,
        server_version=__version__,
        tool_names=list(registry.tools),
        tools=tools,
        instructions=registry.instructions if instructions is None else instructions,
        resources=[
            mcp.ResourceDescription(
                uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type
            )
            for r in registry.resources.values()
        ],
        resources_listed=resource_uris,
        max_frame_bytes=max_frame_bytes,
        max_json_depth=MAX_JSON_DEPTH,
        arg_max_depth=ARG_MAX_DEPTH,
        arg_max_items=ARG_MAX_ITEMS,
        call_deadline_s=settings.call_deadline_s,
        per_caller_lists=per_caller_lists,
    )


class CallRunner:
    """Runs the calls the core starts, against one registry and one limiter (shared by the sessions
    of a process)."""

    __slots__ = ("limiter", "registry", "settings")

    def __init__(self, settings: Settings, registry: Registry, *, per_caller: int | None = None) -> None:
        """`per_caller`: the call slots one caller may hold (None: all of them, as on stdio)."""
        self.settings = settings
        self.registry = registry
        self.limiter = CallLimiter(
            slots=settings.max_concurrency,
            max_waiters=settings.max_queued_calls,
            wait_s=settings.queue_wait_s,
            per_caller=per_caller,
        )

    def reserve(self, start: StartCall, caller: str = "") -> Ticket | None:
        """A tool's place in `caller`'s FIFO line at the limiter (after the core's sanitizer);
        None for a resource read. Raises the limiter's problem at once when the lines are full."""
        if start.kind is CallKind.TOOL:
            return self.limiter.reserve(caller)
        return None

    async def run(self, start: StartCall, ticket: Ticket | None, scope: trio.CancelScope) -> CallOutcome:
        """Run the call inside `scope` (its one cancel scope) and say how it ended.

        Cancellation: a cancel of `scope` (the client, the deadline, a shutdown) ends in
        `CallInterrupted`; a cancel from outside propagates. The ticket is released in every case.
        """
        outcome: CallOutcome | None = None
        try:
            with scope:
                try:
                    if start.kind is CallKind.TOOL:
                        tool = self.registry.tools[start.name]
                        assert ticket is not None
                        data = await self._guarded_call(tool, start.arguments, ticket, scope)
                        outcome = ToolSucceeded(data, untrusted=tool.untrusted)
                    else:
                        scope.deadline = trio.current_time() + self.settings.call_deadline_s
                        outcome = ResourceRead(await self.registry.resources[start.name].read())
                except ProblemError as exc:  # the core picks its channel
                    outcome = CallRaised(exc)
                except Exception as exc:  # noqa: BLE001  # the one exception → wire boundary
                    outcome = CallRaised(incident(exc, f"{start.kind.value} {start.name}"))
            if outcome is None:  # the scope was cancelled: by the client, the deadline or shutdown
                outcome = CallInterrupted(deadline_passed=trio.current_time() >= scope.deadline)
        finally:
            if ticket is not None:
                self.limiter.release(ticket)  # also when the task was cancelled before it ran
        return outcome  # noqa: ASYNC910  # every path awaits the call (or is cancelled at its first await)

    async def _guarded_call(
        self, tool: ToolSpec, arguments: Any, ticket: Ticket, scope: trio.CancelScope
    ) -> bytes:
        """The guardrails that wait: the slot (FIFO, bounded wait), the deadline, the schema.

        The sanitizer ran in the core and the place in line was taken by `reserve`. `scope` is the
        call's own cancel scope: the deadline is set on it, so a call has exactly one scope, and the
        core turns a deadline that fired into `execution-timeout`.
        """
        # Our turn at the limiter (`run` releases the ticket).
        await self.limiter.wait(ticket)
        # The deadline counts from the moment the call holds a slot.
        scope.deadline = trio.current_time() + self.settings.call_deadline_s
        # The strict argument schema; models not loaded yet are loaded off the event loop.
        if not tool.models.built:
            await trio.to_thread.run_sync(tool.models.get)
        result = await tool.call(tool.validate_arguments(arguments))
        with observe.stage("mcp.encode"):
            return structured_json(result)


def incident(exc: BaseException, where: str) -> InternalServerError:
    """An unexpected failure: its traceback to stderr under a new incident id, which alone goes out."""
    incident_id = uuid.uuid4().hex[:16]
    logger.error("incident %s in %s", incident_id, where, exc_info=exc)
    return InternalServerError(
        f"The server failed unexpectedly (incident {incident_id}); the details are in its log.",
        metadata={"incident": incident_id},
    )
