"""The audit trail: one record per answered request, and the envelope of the tools' audit events.

Owns the audit records' schema (`AUDIT_SCHEMA_VERSION`, docs/operations/audit-trail.md), `AuditLog`
(a request's record, written straight to the log sink, and the wait for it to be out), and
`audit_subject` (the caller's token subject over HTTP). A tool logs its own events to the
`mcp_suite.audit` logger with `extra={"audit": fields}`; the filter this module puts on that logger
when imported gives them the same envelope. Writes through `log_sink` only; never echoes more of the
caller's input than `ECHO_MAX_CHARS` / `NAME_ECHO_CHARS`.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import time
from typing import TYPE_CHECKING, Any, Final

import trio

from mcp_suite import observe
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.runtime.log_sink import StderrSink, current_sink, dumps, timestamp
from mcp_suite.settings import AUDIT_WRITE_WAIT_S, ECHO_MAX_CHARS, NAME_ECHO_CHARS

if TYPE_CHECKING:
    from mcp_suite.protocol.core import Answer

__all__ = ["AUDIT_SCHEMA_VERSION", "AuditLog", "audit_subject"]

_audit_logger: Final = logging.getLogger("mcp_suite.audit")
# Over HTTP, the subject of the caller's token, set in the request's own task: the audit events a
# tool logs while serving it (in that task, or in the worker threads it starts, which inherit the
# context) carry it as `sub`, like the request's own record.
audit_subject: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "audit_subject", default=None
)
# The audit records' schema (docs/operations/audit-trail.md): raised whenever a field changes meaning
# or goes away; a new optional field keeps it.
AUDIT_SCHEMA_VERSION: Final = 1


class _AuditEventLines(logging.Filter):
    """Gives a tool's audit event (`extra={"audit": fields}`) its line, in the thread that logs it
    (where `audit_subject` and the call's span are current); the sink writes it as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        audit = record.__dict__.get("audit")
        if audit is None:
            return True
        # Logging must never take the server down: an event that cannot be shaped is written as a
        # plain line by the handler (or reported by it, `handleError`, when even that fails).
        with contextlib.suppress(Exception):
            record.json_line = _event_line(record, audit)
        return True


def _event_line(record: logging.LogRecord, audit: dict[str, Any]) -> str:
    event: dict[str, Any] = {
        "ts": timestamp(record.created),
        "level": "info",
        "logger": record.name,
        "schema_version": AUDIT_SCHEMA_VERSION,
    }
    subject = audit_subject.get()
    if subject is not None:
        event["sub"] = subject[:NAME_ECHO_CHARS]
    trace_id = observe.trace_id()  # the call's span, when tracing is on
    if trace_id is not None:
        event["trace_id"] = trace_id
    return dumps({**event, "event": record.getMessage(), **audit})


_audit_logger.addFilter(_AuditEventLines())


def _audit_event(kind: str, outcome: str, started: float) -> dict[str, Any]:
    return {
        "ts": timestamp(time.time()),
        "level": "info",
        "logger": "mcp_suite.audit",
        "schema_version": AUDIT_SCHEMA_VERSION,
        "event": kind,
        "outcome": outcome,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    }


def _logged_id(request_id: object) -> tuple[object, bool]:
    """The JSON-RPC id as the record carries it, and whether it was cut: an id is the client's
    choice (a string, or an integer, of up to a whole frame), so a long one is its first
    `NAME_ECHO_CHARS` characters (an integer's digits, as a string)."""
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return request_id, False
    text = request_id if isinstance(request_id, str) else str(request_id)
    if len(text) <= NAME_ECHO_CHARS:
        return request_id, False
    return text[:NAME_ECHO_CHARS], True


def _excerpt(arguments: Any) -> str:
    """At most `ECHO_MAX_CHARS` of the call's arguments, as JSON (never more, whatever they hold)."""
    try:
        text = compact_json(arguments)
    except (TypeError, ValueError):
        return ""
    return text[:ECHO_MAX_CHARS]


class AuditLog:
    """The audit trail of requests: time, id, method, tool, outcome or problem slug, duration, and
    over HTTP the caller's token subject (`sub`).

    Written straight to the sink (no LogRecord) because it runs once per request on the hot path.
    """

    __slots__ = ()

    def admit(self) -> bool:
        """Whether a request to be audited may start: the sink has room for its record
        (`StderrSink.admit`, which counts a refusal). Over HTTP, one it has not is refused."""
        sink = current_sink()
        return sink is None or sink.admit()

    async def wait_room(self) -> None:
        """Return once the sink has room for another request's record: the stdio session waits
        here, when `admit` said no, before it reads on, so its client is held back while stderr is
        read more slowly than the server logs, and no record is lost.

        Limits: none of its own: the wait lasts as long as stderr's reader lags; the one client
        over stdio is the process that reads it (or chose not to).
        Cancellation: a checkpoint; cancelling only stops the wait.
        """
        sink = current_sink()
        await trio.lowlevel.checkpoint()
        while sink is not None and not sink.has_room():
            await self._wait_ticket(sink, sink.last_ticket(), None)

    def answered(
        self,
        answer: Answer,
        started: float,
        *,
        subject: str | None = None,
        trace: observe.TraceIds | None = None,
    ) -> int | None:
        """The record of a request the session core answered (written by `runtime.recorder` for
        both transports); its ticket for `wait_written`, None when none is written."""
        problem = answer.problem
        return self.request(
            request_id=answer.request_id,
            method=answer.method,
            tool=answer.tool,
            outcome=answer.outcome,
            problem=problem.slug if problem else None,
            started=started,
            arguments=answer.arguments,
            incident=problem.metadata.get("incident") if problem else None,
            subject=subject,
            trace=trace,
        )

    def request(
        self,
        *,
        request_id: object,
        method: str,
        outcome: str,
        started: float,
        tool: str | None = None,
        problem: str | None = None,
        arguments: Any = None,
        incident: str | None = None,
        subject: str | None = None,
        trace: observe.TraceIds | None = None,
    ) -> int | None:
        sink = current_sink()
        if sink is None or not _audit_logger.isEnabledFor(logging.INFO):
            return None
        event = _audit_event("request", outcome, started)
        logged_id, cut = _logged_id(request_id)
        event.update(id=logged_id, method=method[:NAME_ECHO_CHARS])
        if cut:
            event["id_truncated"] = True
        if tool is not None:
            event["tool"] = tool[:NAME_ECHO_CHARS]
        if problem is not None:
            event["problem"] = problem
        if arguments is not None:
            event["args_excerpt"] = _excerpt(arguments)
        if incident is not None:
            event["incident"] = incident
        if subject is not None:  # over HTTP: the caller's token subject (`anonymous` without auth)
            event["sub"] = subject[:NAME_ECHO_CHARS]
        if trace is not None:  # tracing is on: the request's span (docs/operations/watching.md)
            event["trace_id"] = trace.trace_id
            if trace.client_trace_id is not None:  # chosen by the client: apart, and named so
                event["client_trace_id"] = trace.client_trace_id
        return sink.write_line(dumps(event), keep=True)

    async def wait_written(self, ticket: int | None) -> None:
        """Return once the record of `ticket` (and every line logged before it, such as the
        request's statement records) is written to stderr.

        Limits: at most AUDIT_WRITE_WAIT_S (a stderr nobody reads); then the answer goes out and
        the record stays queued.
        Cancellation: a checkpoint; cancelling only stops the wait.
        """
        sink = current_sink()
        if ticket is None or sink is None:
            await trio.lowlevel.checkpoint()
            return
        await self._wait_ticket(sink, ticket, AUDIT_WRITE_WAIT_S)

    @staticmethod
    async def _wait_ticket(sink: StderrSink, ticket: int, timeout_s: float | None) -> None:
        token = trio.lowlevel.current_trio_token()
        written = trio.Event()

        def hand_over() -> None:  # in the writer thread
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(written.set)

        sink.when_written(ticket, hand_over)
        with trio.move_on_after(math.inf if timeout_s is None else timeout_s):
            await written.wait()
