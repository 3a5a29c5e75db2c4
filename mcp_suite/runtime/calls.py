"""What every transport does the same way around the session core: build a core, run one call.

`catalogue_of` makes the registry's offer the value both transports take (`protocol.catalogue`);
`SECRET_IDS` is where the server's random values come from (the protocol draws none of its own);
`CallRunner` carries out one `StartCall`: its place at the limiter, its one cancel scope with the
deadline, the strict argument schema, the tool, and the one exception → outcome boundary. It
decides nothing about the protocol: the core turns the outcome into an answer. The stdio session
and the HTTP app both use it; neither copies it.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from typing import Any, Final

import trio

from mcp_suite import SERVER_NAME, __version__, observe
from mcp_suite.problems import InternalServerError, ProblemError
from mcp_suite.protocol import mcp, untrusted
from mcp_suite.protocol.catalogue import Catalogue, Ids, ServedResource, ServedTemplate, ServedTool
from mcp_suite.protocol.contents import ContentResult, ResourceTemplate, ToolContent
from mcp_suite.protocol.core import (
    CallInterrupted,
    CallKind,
    CallOutcome,
    CallRaised,
    ResourceRead,
    StartCall,
    ToolSucceeded,
)
from mcp_suite.protocol.mcp import structured_json
from mcp_suite.runtime.limiter import CallLimiter, Ticket
from mcp_suite.runtime.log_sink import logger
from mcp_suite.settings import Settings
from mcp_suite.tools.base import ToolSpec
from mcp_suite.tools.registry import Registry

__all__ = ["SECRET_IDS", "CallRunner", "catalogue_of"]


def catalogue_of(registry: Registry) -> Catalogue:
    """What `registry` serves, as the value both transports take (built once per process): its
    tools' advertised descriptions are built on first use (the warm-up, or the first request that
    needs them), never to answer `initialize`."""
    return Catalogue(
        server_name=SERVER_NAME,
        server_version=__version__,
        tools=[ServedTool(tool.name, tool.scope) for tool in registry.tools.values()],
        describe=functools.partial(_describe, registry),
        resources=[
            ServedResource(
                mcp.ResourceDescription(
                    uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type
                ),
                r.scope,
                r.source,
            )
            for r in registry.resources.values()
        ],
        templates=[
            ServedTemplate(
                ResourceTemplate(
                    uri_template=t.uri_template,
                    name=t.name,
                    title=t.title,
                    description=t.description,
                    mime_type=t.mime_type,
                ),
                t.scope,
            )
            for t in registry.templates.values()
        ],
        prompts=registry.prompts,
        subscriptions=registry.subscriptions,
        instructions=registry.instructions,
        instructions_for=registry.instructions_for,
    )


def _describe(registry: Registry) -> list[mcp.ToolDescription]:
    return [
        mcp.ToolDescription(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema(),
            output_schema=_output_schema(tool),
        )
        for tool in registry.tools.values()
    ]


def _output_schema(tool: ToolSpec) -> dict[str, Any] | None:
    if tool.advertised_output is not None:
        schema = tool.advertised_output()
    else:
        schema = mcp.model_json_schema(tool.result_model)
    return untrusted.declare(schema) if tool.untrusted and schema is not None else schema


# The server's random values: a session id of 32 bytes (43 URL-safe characters), a boundary of
# `BOUNDARY_BITS` bits, both from the operating system's CSPRNG.
SECRET_IDS: Final = Ids(
    boundary=lambda: secrets.randbits(untrusted.BOUNDARY_BITS),
    session_id=lambda: secrets.token_urlsafe(32),
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
                        if isinstance(data, ContentResult):
                            outcome = ToolContent(data)
                        else:
                            outcome = ToolSucceeded(data, untrusted=tool.untrusted)
                    else:
                        scope.deadline = trio.current_time() + self.settings.call_deadline_s
                        outcome = await self._read(start)
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

    async def _read(self, start: StartCall) -> ResourceRead:
        """A resource's contents; a template's (`start.name`) for the URI in `start.arguments`."""
        resource = self.registry.resources.get(start.name)
        if resource is not None:
            body = await resource.read()
        else:
            body = await self.registry.templates[start.name].read(start.arguments["uri"])
        return ResourceRead("", blob=body) if isinstance(body, bytes) else ResourceRead(body)

    async def _guarded_call(
        self, tool: ToolSpec, arguments: Any, ticket: Ticket, scope: trio.CancelScope
    ) -> bytes | ContentResult:
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
        if isinstance(result, ContentResult):
            return result
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
