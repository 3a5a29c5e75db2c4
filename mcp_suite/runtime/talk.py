"""The per-call context through which a running call talks to its client: progress, log messages
and (the handshake eras) requests to the client, carried out here; every rule is `protocol.talk`'s.

    tool ── note(rows=…) ──▶ CallTalk ── serve(): one tick per MCP_PROGRESS_INTERVAL_S ──▶ send
    tool ── await ask(…) ──▶ CallTalk ── frame ──▶ send ··· client ··· answer ──▶ Waiters ──▶ tool

A tool reaches its call's context with `mcp_suite.talk.current()` (a context variable the runner
sets; worker threads see it too), and never learns the transport: `send` is the stdio writer, or over HTTP the
event stream of the POST that started the call. A call with nothing to say costs nothing: no task
is started for it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

import trio

from mcp_suite.problems import ClientCannotAskError
from mcp_suite.protocol.jsonrpc import RequestId
from mcp_suite.protocol.talk import ClientAnswered, Facts, TalkTable, client_refused
from mcp_suite.talk import Talk, current_talk

__all__ = ["CallTalk", "Waiters", "enter", "leave"]

# Writes one frame to the client before the call's result; False when it cannot go (over HTTP, a
# client that does not take an event stream): a request to the client is then refused.
Send = Callable[[bytes], Awaitable[bool]]


class _Waiter:
    __slots__ = ("answer", "event")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.answer: ClientAnswered | None = None


class Waiters:
    """The calls of a transport waiting for their client's answer, by talk table and server id
    (a table is one session's: an answer another session's client sends never reaches them)."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[tuple[int, RequestId], _Waiter] = {}

    def deliver(self, table: TalkTable, answered: ClientAnswered) -> None:
        """The table matched `answered` to a call of its own: wake that call (gone: dropped)."""
        waiter = self._waiting.pop((id(table), answered.server_id), None)
        if waiter is not None:
            waiter.answer = answered
            waiter.event.set()

    def _add(self, table: TalkTable, server_id: RequestId) -> _Waiter:
        waiter = _Waiter()
        self._waiting[(id(table), server_id)] = waiter
        return waiter

    def _drop(self, table: TalkTable, server_id: RequestId) -> None:
        self._waiting.pop((id(table), server_id), None)


class CallTalk:
    """One call's context: what it noted of its progress, and the way to its client.

    `note` may be called from the call's worker thread; everything else runs on the event loop.
    """

    __slots__ = (
        "_bytes",
        "_deadline",
        "_interval_s",
        "_key",
        "_rows",
        "_send",
        "_started",
        "_table",
        "_waiters",
        "progress",
    )

    def __init__(
        self,
        table: TalkTable,
        key: Hashable,
        send: Send,
        waiters: Waiters,
        *,
        progress: bool,
        interval_s: float,
    ) -> None:
        self._table = table
        self._key = key
        self._send = send
        self._waiters = waiters
        self.progress = progress  # the request carries a progress token
        self._interval_s = interval_s
        self._started = trio.current_time()
        self._deadline = float("inf")
        self._rows: int | None = None
        self._bytes: int | None = None

    # -- for the tool ----------------------------------------------------------------------------

    def note(self, *, rows: int | None = None, bytes_read: int | None = None) -> None:
        """What the call knows so far (rows fetched, bytes read), for its next progress
        notification. Thread-safe (each is one attribute written whole); never blocks."""
        if rows is not None:
            self._rows = rows
        if bytes_read is not None:
            self._bytes = bytes_read

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """The tool's own progress report, when its client asked for progress (`protocol.talk`
        decides: increasing, and at most one per MCP_PROGRESS_INTERVAL_S)."""
        frame = self._table.report(
            self._key,
            elapsed_s=trio.current_time() - self._started,
            progress=progress,
            total=total,
            message=message,
            min_gap_s=self._interval_s,
        )
        if frame is None:
            await trio.lowlevel.checkpoint()
            return
        await self._send(frame)

    async def log(self, level: str, text: str) -> None:
        """Send `text` as a `notifications/message` at `level` when the client asked for that
        level (a handshake-era client, after `logging/setLevel`); otherwise nothing.
        Security: `text` must be about this call only, with no SQL text, path or secret."""
        frame = self._table.log(self._key, level, text)
        if frame is None:
            await trio.lowlevel.checkpoint()
            return
        await self._send(frame)

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send the request `method` to the client and wait for its result.

        Raises `ClientCannotAskError` when the client cannot be asked (it did not declare the
        capability, the era has no such request, or the transport cannot carry it), and
        `ClientRequestFailedError` when it answers with an error.
        Cancellation: the wait is the call's (its deadline, a cancel); a late answer is dropped.
        """
        server_id, frame = self._table.ask(self._key, method, params)
        waiter = self._waiters._add(self._table, server_id)
        try:
            if not await self._send(frame):
                raise ClientCannotAskError(
                    f"The client's transport cannot carry {method} for this call (over HTTP, its "
                    "POST must accept text/event-stream); it was not asked.",
                    metadata={"method": method},
                )
            await waiter.event.wait()
        finally:
            self._waiters._drop(self._table, server_id)
            self._table.forget(server_id)
        answer = waiter.answer
        assert answer is not None
        if answer.result is None:
            raise client_refused(method, answer.error or {})
        return answer.result

    # -- for the runner --------------------------------------------------------------------------

    def has_something_to_say(self) -> bool:
        """Whether `serve` has any work: progress asked for, or a log level set by the client."""
        return self.progress or self._table.log_level is not None

    def started_at(self, deadline: float) -> None:
        """The call holds its slot: the clock starts, and its deadline is known."""
        self._started = trio.current_time()
        self._deadline = deadline

    async def serve(self) -> None:
        """Until cancelled (the call has ended): a progress notification each interval, and one
        `warning` log message once the call has used half of its deadline."""
        warned = False
        while True:
            await trio.sleep(self._interval_s)
            now = trio.current_time()
            elapsed = now - self._started
            if self.progress:
                facts = Facts(elapsed_s=elapsed, rows=self._rows, bytes_read=self._bytes)
                # One tick per interval is the rate limit here (the sleep above).
                frame = self._table.progress(self._key, facts)
                if frame is not None:
                    await self._send(frame)
            if not warned and now - self._started >= (self._deadline - self._started) / 2:
                warned = True
                await self.log(
                    "warning",
                    f"This call has run {elapsed:.1f} s, half of its deadline; it is cancelled when "
                    "the deadline passes.",
                )


def enter(talk: CallTalk) -> contextvars.Token[Talk | None]:
    """Make `talk` the current call's context (`mcp_suite.talk.current`) while its tool runs."""
    return current_talk.set(talk)


def leave(token: contextvars.Token[Talk | None]) -> None:
    current_talk.reset(token)
