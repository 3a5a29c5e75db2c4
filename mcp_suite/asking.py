"""Asking the person at the client during a call: the tools' side, the same in both protocol eras.

`ask_yes_no(question)` is what a tool calls. The runtime sets `current_asker` for each tool call's
task: in the modern era (2026-07-28) a `RoundsAsker` over the call's `protocol.mrtr.Rounds` (the
question ends the call in an input-required result, and the retry brings the answer); in the
legacy eras a `LegacyAsker` that puts the question to the client as a server-to-client request
through a `ClientRequests` the transport provides, or refuses when it provides none. Fails closed:
a client that cannot ask is a `client-cannot-ask` refusal, never a yes. A neutral module: no I/O
of its own, imported by the runtime and the tools alike (as `mcp_suite.caller` is); the rules are
`protocol.mrtr`'s.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any, Final, Protocol

import trio

from mcp_suite.protocol import mrtr

__all__ = [
    "Asker",
    "ClientRequests",
    "LegacyAsker",
    "RoundsAsker",
    "ask_yes_no",
    "confirm",
    "current_asker",
    "current_rounds",
]


class Asker(Protocol):
    async def ask_yes_no(self, question: str) -> mrtr.YesNo: ...


class ClientRequests(Protocol):
    """A legacy transport's server-to-client request (elicitation/create, sampling/createMessage,
    roots/list) whose response is routed back to the waiting call: the client's `result`, or a
    `ProblemError` when it cannot be asked, answered with an error or went away. (The shape of the
    per-call context's `ask`, so that the call's context is one.)"""

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


class RoundsAsker:
    """The modern era: a question is an input request of the call's rounds."""

    __slots__ = ("rounds",)

    def __init__(self, rounds: mrtr.Rounds) -> None:
        self.rounds = rounds

    async def ask_yes_no(self, question: str) -> mrtr.YesNo:
        await trio.lowlevel.checkpoint()  # an async function is a checkpoint, even when it asks nothing
        return self.rounds.ask_yes_no(question)


class LegacyAsker:
    """The legacy eras: the client's declared capabilities (from `initialize`) and, when the
    transport can send it one, a server-to-client request."""

    __slots__ = ("capabilities", "requests")

    def __init__(self, capabilities: Mapping[str, Any], requests: ClientRequests | None) -> None:
        self.capabilities = capabilities
        self.requests = requests

    async def ask_yes_no(self, question: str) -> mrtr.YesNo:
        await trio.lowlevel.checkpoint()
        request = mrtr.yes_no_request(question)
        if not mrtr.can_ask(self.capabilities, request.method):
            raise mrtr.cannot_ask(request.method, "the client did not declare 'elicitation' in initialize")
        if self.requests is None:
            raise mrtr.cannot_ask(request.method, "this connection cannot carry a question to the client")
        result = await self.requests.ask(request.method, dict(request.params))
        return mrtr.read_yes_no("The client's elicitation/create result", result)


current_asker: Final[contextvars.ContextVar[Asker | None]] = contextvars.ContextVar(
    "current_asker", default=None
)


def current_rounds() -> mrtr.Rounds | None:
    """The running modern call's rounds, for a tool that writes its own input requests (under keys
    of its choosing, `Rounds.require`) and reads their answers (`Rounds.answer`); None outside a
    2026-07-28 call."""
    asker = current_asker.get()
    return asker.rounds if isinstance(asker, RoundsAsker) else None


async def ask_yes_no(question: str) -> bool:
    """Ask the person at the client `question`; True only if they approved it (`confirm`, below,
    for a tool that goes on only with an approval)."""
    return (await _ask(question)).approved


async def confirm(question: str) -> None:
    """Ask the person at the client `question` and return only if they approved it; otherwise the
    call is refused in-band with `not-approved` (`metadata.action`: what they answered). Raises as
    `_ask` does."""
    answer = await _ask(question)
    if not answer.approved:
        raise mrtr.not_approved(answer)


async def _ask(question: str) -> mrtr.YesNo:
    """Ask the person at the client `question`: approved only on an accepted `approve: true`;
    not when they said no, declined or dismissed it. Raises `ClientCannotAskError` (in-band
    `client-cannot-ask`) when the client cannot be asked, and in the modern era ends the call with
    an input-required result until the retry brings the answer (`protocol.mrtr.InputRequired`,
    which the tool must let through). Security: `question` is shown to the person as is; it must
    not carry secrets, paths or another call's SQL.
    """
    asker = current_asker.get()
    if asker is None:
        await trio.lowlevel.checkpoint()  # not inside a call the runtime set up to ask: nobody to ask
        raise mrtr.cannot_ask(mrtr.ELICIT, "this call has no way to reach the client")
    return await asker.ask_yes_no(question)
