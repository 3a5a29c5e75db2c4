"""What a tool sees of its call's context: note or report progress, log to its client, ask its client.

The runtime (`runtime.talk.CallTalk`) makes a call's context current around its tool; the tool (and
the worker threads trio starts for it, which copy the context) reach it with `current()`, and never
learn the transport. Outside a call, or for a transport that has none, it is `NO_TALK`: notes go
nowhere, logs are not sent, and asking fails closed. A neutral module between the runtime and the
tools (like `caller`); the rules are `protocol.talk`'s.
"""

from __future__ import annotations

import contextvars
from typing import Any, Final, Protocol

import trio

from mcp_suite.problems import ClientCannotAskError

__all__ = ["NO_TALK", "Talk", "current", "current_talk"]


class Talk(Protocol):
    def note(self, *, rows: int | None = None, bytes_read: int | None = None) -> None:
        """What the call knows so far (rows fetched, bytes read), for its next progress report.
        Thread-safe; never blocks."""

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """The call's own progress (`progress` of `total`), sent when its client asked for progress,
        `progress` increases and the rate limit allows (else nothing); the elapsed-time reports of
        the call then stop. Security: `message` about this call only."""

    async def log(self, level: str, text: str) -> None:
        """A log message about this call, sent when its client asked for `level` (else nothing).
        Security: about this call only: no SQL text, path or secret."""

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the client (`elicitation/create`, `sampling/createMessage`, `roots/list`) and wait
        for its result. Raises `ClientCannotAskError` when it cannot be asked: fail closed."""


class _NoTalk:
    def note(self, *, rows: int | None = None, bytes_read: int | None = None) -> None:
        return None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        await trio.lowlevel.checkpoint()

    async def log(self, level: str, text: str) -> None:
        await trio.lowlevel.checkpoint()

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        raise ClientCannotAskError(
            f"This call has no client to ask {method}; it was not asked.", metadata={"method": method}
        )


NO_TALK: Final[Talk] = _NoTalk()
current_talk: Final[contextvars.ContextVar[Talk | None]] = contextvars.ContextVar(
    "current_talk", default=None
)


def current() -> Talk:
    """The running call's context (in its task, or a worker thread it started), else `NO_TALK`."""
    return current_talk.get() or NO_TALK
