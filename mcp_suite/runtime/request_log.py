"""Logging and the audit trail: one JSON object per line on stderr, written by a background thread.

stdout belongs to the protocol; everything here goes to stderr. Lines are formatted where they are
logged and appended to a bounded in-memory buffer; a flusher thread writes them out in batches. So a
parent that never drains our stderr cannot block the event loop (when the buffer is full, lines are
dropped and counted), and a busy session does not pay a thread hand-off per record. Libraries'
records (psycopg_pool's, Python warnings) take the same path; a refusal before logging is set up is
written as one JSON line too (`write_line_now`). No secrets are ever logged; arguments appear as an
excerpt of `ECHO_MAX_CHARS`; a tool's own audit events (`extra={"audit": fields}`) become audit lines.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TextIO

import trio

from mcp_suite import observe
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.settings import AUDIT_WRITE_WAIT_S, ECHO_MAX_CHARS, NAME_ECHO_CHARS

if TYPE_CHECKING:
    from mcp_suite.protocol.core import Answer

__all__ = [
    "AUDIT_SCHEMA_VERSION",
    "AuditLog",
    "StderrSink",
    "audit_subject",
    "configure_logging",
    "logger",
    "shutdown_logging",
    "write_line_now",
]

logger: Final = logging.getLogger("mcp_suite")
_audit_logger: Final = logging.getLogger("mcp_suite.audit")
_BUFFER_LINES: Final = 10_000
# Over HTTP, the subject of the caller's token, set in the request's own task: the audit events a
# tool logs while serving it (in that task, or in the worker threads it starts, which inherit the
# context) carry it as `sub`, like the request's own record.
audit_subject: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar(
    "audit_subject", default=None
)
_FLUSH_INTERVAL_S: Final = 0.02
# The audit records' schema (docs/operations/audit-trail.md): raised whenever a field changes meaning
# or goes away; a new optional field keeps it.
AUDIT_SCHEMA_VERSION: Final = 1


# Built once: `json.dumps` with options builds a new encoder on every call.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, default=str, separators=(",", ":"))


def _timestamp(created: float) -> str:
    """UTC, ISO 8601, to the millisecond: `2023-11-14T22:13:20.500Z`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


def _dumps(payload: dict[str, Any]) -> str:
    return _ENCODER.encode(payload)


class StderrSink:
    """A bounded line buffer drained to a text stream by one daemon thread.

    Every line gets a ticket, its number in order; `when_written(ticket, callback)` calls back from
    the writer thread once that line and every one before it are out (or were dropped).

    Limits: at most `capacity` lines wait; beyond that new lines are dropped and counted in `dropped`.
    """

    def __init__(self, stream: TextIO, capacity: int = _BUFFER_LINES) -> None:
        self._stream = stream
        self._lines: collections.deque[str] = collections.deque()
        self._capacity = capacity
        self._stop = threading.Event()
        self._wake = threading.Event()
        # Set while someone waits for a line: the writer skips its gathering pause.
        self._hurry = threading.Event()
        # Tickets and the queue change together (lines come from the loop and from worker threads).
        self._lock = threading.Lock()
        self._accepted = 0
        self._written = 0
        self._waiters: list[tuple[int, Callable[[], object]]] = []
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="mcp-suite-log", daemon=True)
        self._thread.start()

    def write_line(self, line: str) -> int:
        """Queue `line`; its ticket. Never blocks on the stream."""
        with self._lock:
            self._accepted += 1
            ticket = self._accepted
            if len(self._lines) >= self._capacity:
                self.dropped += 1
                return ticket
            was_empty = not self._lines
            self._lines.append(line)
        if was_empty:
            self._wake.set()  # once per batch, not per line
        return ticket

    def when_written(self, ticket: int, callback: Callable[[], object]) -> None:
        """Call `callback` once the line of `ticket` is written (at once if it is already), from
        the writer thread: it must only hand the news over (trio's `run_sync_soon`)."""
        with self._lock:
            if ticket > self._written:
                self._waiters.append((ticket, callback))
                self._hurry.set()
                self._wake.set()
                return
        callback()

    def _drain(self) -> None:
        with self._lock:
            batch = list(self._lines)
            self._lines.clear()
            upto = self._accepted
            if self.dropped:
                count, self.dropped = self.dropped, 0
                batch.append(_dumps({"level": "warning", "msg": f"{count} log line(s) dropped"}))
        if batch:
            try:
                self._stream.write("\n".join(batch) + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                pass  # stderr is gone; nothing else can report it
        with self._lock:
            self._written = upto
            ready = [callback for ticket, callback in self._waiters if ticket <= upto]
            self._waiters = [(ticket, callback) for ticket, callback in self._waiters if ticket > upto]
            if not self._waiters:
                self._hurry.clear()
        for callback in ready:
            callback()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Idle, the thread sleeps until there is something to write (no periodic wake-ups);
            # busy, it lets lines gather for a moment so they are written in one batch, unless
            # someone waits for a line to be out.
            self._wake.wait()
            self._wake.clear()
            self._hurry.wait(_FLUSH_INTERVAL_S)
            self._drain()
        self._drain()

    def close(self) -> None:
        """Write everything still buffered and stop the thread."""
        self._stop.set()
        self._hurry.set()
        self._wake.set()
        self._thread.join(timeout=5)


def _line(record: logging.LogRecord) -> str:
    audit = record.__dict__.get("audit")
    if audit is not None:  # an audit event a tool logged with `extra={"audit": fields}`
        event: dict[str, Any] = {
            "ts": _timestamp(record.created),
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
        return _dumps({**event, "event": record.getMessage(), **audit})
    payload: dict[str, Any] = {
        "ts": _timestamp(record.created),
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }
    if record.exc_info:
        payload["traceback"] = logging.Formatter().formatException(record.exc_info)
    return _dumps(payload)


class JsonLineHandler(logging.Handler):
    def __init__(self, sink: StderrSink) -> None:
        super().__init__()
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sink.write_line(_line(record))
        except Exception:  # noqa: BLE001  # logging must never take the server down
            self.handleError(record)


def write_line_now(level: str, message: str, *, logger_name: str = "mcp_suite", **fields: Any) -> None:
    """One JSON line straight to stderr, for what happens before (or after) the sink runs: a
    refusal to start. `fields` are added to the object (for example `exit_status`).
    """
    record = logging.LogRecord(logger_name, logging.getLevelName(level.upper()), "", 0, message, None, None)
    line = _line(record)
    if fields:
        line = line[:-1] + "," + _dumps(fields)[1:]
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr is gone; nothing else can report it


_sink: StderrSink | None = None


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send every `mcp_suite` record to stderr (or `stream`) as JSON lines."""
    global _sink  # one process-wide sink, replaced on reconfiguration
    shutdown_logging()
    _sink = StderrSink(stream if stream is not None else sys.stderr)
    handler = JsonLineHandler(_sink)
    ours = logging.getLogger("mcp_suite")
    ours.handlers[:] = [handler]
    ours.setLevel(level)
    ours.propagate = False
    # Libraries log through the root logger: their warnings and errors become JSON lines too, and
    # so do Python's warnings. sqlglot's parser warnings quote the caller's SQL, so only its errors
    # may reach stderr.
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)
    logging.getLogger("sqlglot").setLevel(logging.ERROR)


def shutdown_logging() -> None:
    """Flush what is buffered and stop the writer thread."""
    global _sink  # see configure_logging
    if _sink is not None:
        _sink.close()
        _sink = None


def _audit_event(kind: str, outcome: str, started: float) -> dict[str, Any]:
    return {
        "ts": _timestamp(time.time()),
        "level": "info",
        "logger": "mcp_suite.audit",
        "schema_version": AUDIT_SCHEMA_VERSION,
        "event": kind,
        "outcome": outcome,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    }


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

    def answered(
        self, answer: Answer, started: float, *, subject: str | None = None, trace_id: str | None = None
    ) -> int | None:
        """The record of a request the session core answered (every transport's one way); its
        ticket for `wait_written`, None when none is written."""
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
            trace_id=trace_id,
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
        trace_id: str | None = None,
    ) -> int | None:
        sink = _sink
        if sink is None or not _audit_logger.isEnabledFor(logging.INFO):
            return None
        event = _audit_event("request", outcome, started)
        event.update(id=request_id, method=method[:NAME_ECHO_CHARS])
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
        if trace_id is not None:  # tracing is on: the request's span (docs/operations/watching.md)
            event["trace_id"] = trace_id
        return sink.write_line(_dumps(event))

    async def wait_written(self, ticket: int | None) -> None:
        """Return once the record of `ticket` (and every line logged before it, such as the
        request's statement records) is written to stderr.

        Limits: at most AUDIT_WRITE_WAIT_S (a stderr nobody reads); then the answer goes out and
        the record stays queued.
        Cancellation: a checkpoint; cancelling only stops the wait.
        """
        sink = _sink
        if ticket is None or sink is None:
            await trio.lowlevel.checkpoint()
            return
        token = trio.lowlevel.current_trio_token()
        written = trio.Event()

        def hand_over() -> None:  # in the writer thread
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(written.set)

        sink.when_written(ticket, hand_over)
        with trio.move_on_after(AUDIT_WRITE_WAIT_S):
            await written.wait()
