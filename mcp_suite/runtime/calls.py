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
from mcp_suite.asking import Asker, LegacyAsker, RoundsAsker, current_asker
from mcp_suite.caller import current_caller
from mcp_suite.problems import InternalServerError, ProblemError
from mcp_suite.protocol import mcp, mrtr, untrusted
from mcp_suite.protocol.catalogue import Catalogue, Ids, ServedResource, ServedTemplate, ServedTool
from mcp_suite.protocol.contents import ContentResult, ResourceTemplate, ToolContent
from mcp_suite.protocol.core import (
    CallInterrupted,
    CallKind,
    CallOutcome,
    CallRaised,
    Completed,
    PromptRendered,
    ResourceRead,
    StartCall,
    ToolSucceeded,
)
from mcp_suite.protocol.mcp import structured_json
from mcp_suite.runtime import talk as talking
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
                completes=r.complete is not None,
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

    __slots__ = ("limiter", "registry", "settings", "state_key")

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        *,
        per_caller: int | None = None,
        state_key: bytes | None = None,
    ) -> None:
        """`per_caller`: the call slots one caller may hold (None: all of them, as on stdio).
        `state_key`: the key that seals the modern era's `requestState` (None: 32 random bytes
        drawn now, so a state verifies only in the process that sealed it)."""
        self.settings = settings
        self.registry = registry
        self.state_key = secrets.token_bytes(32) if state_key is None else state_key
        self.limiter = CallLimiter(
            slots=settings.max_concurrency,
            max_waiters=settings.max_queued_calls,
            wait_s=settings.queue_wait_s,
            per_caller=per_caller,
        )

    def reserve(self, start: StartCall, caller: str = "") -> Ticket | None:
        """A tool's or a names completion's place in `caller`'s FIFO line at the limiter (after the
        core's checks); None for a resource read or a prompt's render. Raises the limiter's problem
        at once when the lines are full (completion, "Security": completions are rate limited as
        calls are)."""
        if start.kind in (CallKind.TOOL, CallKind.COMPLETE):
            return self.limiter.reserve(caller)
        return None

    async def run(
        self,
        start: StartCall,
        ticket: Ticket | None,
        scope: trio.CancelScope,
        talk: talking.CallTalk | None = None,
    ) -> CallOutcome:
        """Run the call inside `scope` (its one cancel scope) and say how it ended. `talk`: the
        call's context (`runtime.talk`), current while its tool runs; its progress and log task
        runs beside the tool and ends before the call does, so nothing of it follows the result.

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
                        asked = current_asker.set(self._asker(start, talk))
                        try:
                            data = await self._guarded_call(tool, start.arguments, ticket, scope, talk)
                        finally:
                            current_asker.reset(asked)
                        if isinstance(data, ContentResult):
                            outcome = ToolContent(data)
                        else:
                            outcome = ToolSucceeded(data, untrusted=tool.untrusted)
                    elif start.kind is CallKind.COMPLETE:
                        assert ticket is not None
                        await self.limiter.wait(ticket)
                        scope.deadline = trio.current_time() + self.settings.call_deadline_s
                        complete = self.registry.resources[start.name].complete
                        assert complete is not None  # the core completes only such resources
                        values, total = await complete(**start.arguments)
                        outcome = Completed(tuple(values), total)
                    elif start.kind is CallKind.PROMPT:
                        scope.deadline = trio.current_time() + self.settings.call_deadline_s
                        outcome = await self._render(start, talk)
                    else:
                        scope.deadline = trio.current_time() + self.settings.call_deadline_s
                        outcome = await self._read(start)
                except ProblemError as exc:  # the core picks its channel
                    outcome = CallRaised(exc)
                except mrtr.InputRequired as exc:  # the modern era's question: the call's result
                    outcome = mrtr.InputNeeded(exc.requests, exc.state)
                except Exception as exc:  # noqa: BLE001  # the one exception → wire boundary
                    outcome = CallRaised(incident(exc, f"{start.kind.value} {start.name}"))
            if outcome is None:  # the scope was cancelled: by the client, the deadline or shutdown
                outcome = CallInterrupted(deadline_passed=trio.current_time() >= scope.deadline)
        finally:
            if ticket is not None:
                self.limiter.release(ticket)  # also when the task was cancelled before it ran
        return outcome  # noqa: ASYNC910  # every path awaits the call (or is cancelled at its first await)

    def _asker(self, start: StartCall, talk: talking.CallTalk | None) -> Asker | None:
        """How this call's tool (or prompt) may ask its client. In the modern era the retry's
        `requestState` is verified here, before the call waits for a slot, whether or not the tool
        asks: a state that fails is refused (`invalid-request-state`). It is bound to the method,
        the tool or prompt, the arguments as sent and the caller's subject (over stdio there is one
        caller: "")."""
        if start.asking is None:
            return None
        if not start.asking.modern:
            # In the handshake eras the question goes out as a request of the server's, through the
            # call's context (None: no context, so the legacy asker refuses).
            return LegacyAsker(start.asking.capabilities, talk)
        caller = current_caller.get()
        subject = "" if caller is None else caller.subject
        rounds = mrtr.Rounds(
            key=self.state_key,
            binding=functools.partial(mrtr.bind, start.kind.value, start.name, start.arguments, subject),
            call=start.asking,
            now=trio.current_time(),
            ttl_s=self.settings.input_request_ttl_s,
        )
        return RoundsAsker(rounds)

    async def _render(self, start: StartCall, talk: talking.CallTalk | None) -> PromptRendered:
        """A prompt that asks, rendered with the call's asker current (as a tool's is): it ends in
        its messages, or in `mrtr.InputRequired` (the state bound to prompts/get, the prompt, its
        arguments and the caller), which `run` reports as `InputNeeded`."""
        await trio.lowlevel.checkpoint()
        prompt = next(p for p in self.registry.prompts if p.name == start.name)
        asked = current_asker.set(self._asker(start, talk))
        try:
            return PromptRendered(prompt.render(start.arguments))
        finally:
            current_asker.reset(asked)

    async def _read(self, start: StartCall) -> ResourceRead:
        """A resource's contents; a template's (`start.name`) for the URI in `start.arguments`."""
        resource = self.registry.resources.get(start.name)
        if resource is not None:
            body = await resource.read()
        else:
            body = await self.registry.templates[start.name].read(start.arguments["uri"])
        return ResourceRead("", blob=body) if isinstance(body, bytes) else ResourceRead(body)

    async def _guarded_call(
        self,
        tool: ToolSpec,
        arguments: Any,
        ticket: Ticket,
        scope: trio.CancelScope,
        talk: talking.CallTalk | None = None,
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
        valid = tool.validate_arguments(arguments)
        if talk is None:
            result = await tool.call(valid)
        else:
            talk.started_at(scope.deadline)
            entered = talking.enter(talk)
            try:
                if talk.has_something_to_say():
                    failed: Exception | None = None
                    async with trio.open_nursery() as beside:
                        beside.start_soon(talk.serve)
                        try:
                            result = await tool.call(valid)
                        except Exception as exc:  # noqa: BLE001  # raised again below, as itself
                            failed = exc
                        beside.cancel_scope.cancel()
                    if failed is not None:
                        # Outside the nursery: the problem a tool raised stays itself, not a group.
                        raise failed
                else:
                    result = await tool.call(valid)
            finally:
                talking.leave(entered)
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
