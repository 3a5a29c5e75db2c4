"""The one recorder around every request a transport answers: its audit record, span and metrics.

Both transports hand it what they see (the call they start, the answer they send, who asked) and
record nothing themselves. Telemetry is an object it holds: `runtime.telemetry.Telemetry` when
MCP_OTEL_ENDPOINT or MCP_PROMETHEUS_PORT is set, else `NO_TELEMETRY`, whose every method returns
at once (no `None` check anywhere, and no import of OpenTelemetry: only `runtime.telemetry` may).
Decides nothing about the protocol; writes the audit through `audit_trail` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Final, Literal, Protocol

from mcp_suite.runtime.audit_trail import AuditLog, audit_subject

if TYPE_CHECKING:
    from mcp_suite import observe
    from mcp_suite.protocol.core import Answer, StartCall

__all__ = ["NO_TELEMETRY", "Asker", "Recorder", "Recording", "Transport", "Unwatched", "Watch", "Watcher"]

# The conventions' `network.transport` of each transport: stdio is a pipe, HTTP is TCP.
Transport = Literal["pipe", "tcp"]


@dataclass(frozen=True, slots=True)
class Asker:
    """Who asked, as a request's record names them: over HTTP, the token's subject and what the
    request's headers say (its `traceparent`, protocol version and session id); over stdio, the
    version the session serves."""

    subject: str | None = None
    traceparent: str | None = None
    protocol_version: str | None = None
    session_id: str | None = None


class Watch(Protocol):
    """Telemetry's view of one request: `with` it, its span is current (in this task, and the worker
    threads it starts), so the tools' stages (`observe.stage`) become its children; `answered`
    ends it, counts the metrics and gives the trace ids for the audit record (None when off)."""

    def __enter__(self) -> object: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def answered(self, answer: Answer) -> observe.TraceIds | None: ...


class Watcher(Protocol):
    """What the recorder asks of telemetry (`runtime.telemetry.Telemetry`, or `NO_TELEMETRY`)."""

    def call(self, start: StartCall, started: float, transport: Transport, asker: Asker) -> Watch:
        """The watch of a call, its span started at `started` (perf_counter) and open while it runs."""
        ...

    def request(self, started: float, transport: Transport, asker: Asker) -> Watch:
        """The watch of a request answered without a call (its span is made when it is answered)."""
        ...

    def answered(
        self, answer: Answer, started: float, transport: Transport, asker: Asker
    ) -> observe.TraceIds | None:
        """`request(started, transport, asker).answered(answer)` in one step (the hot path of a
        ping over stdio)."""
        ...

    def watch_http(self, sessions: Callable[[], int], callers: Callable[[], int]) -> None:
        """The HTTP transport's gauges: legacy sessions open, callers with a request in progress."""
        ...


class Unwatched:
    """The `with` of a watch that makes nothing current (a request without a call, or telemetry off)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class _NoWatch(Unwatched):
    __slots__ = ()

    def answered(self, answer: Answer) -> None:
        return None


class _NoTelemetry:
    """Telemetry off: one shared watch that does nothing."""

    __slots__ = ()

    def call(self, start: StartCall, started: float, transport: Transport, asker: Asker) -> Watch:
        return _NO_WATCH

    def request(self, started: float, transport: Transport, asker: Asker) -> Watch:
        return _NO_WATCH

    def answered(self, answer: Answer, started: float, transport: Transport, asker: Asker) -> None:
        return None

    def watch_http(self, sessions: Callable[[], int], callers: Callable[[], int]) -> None:
        return None


_NO_WATCH: Final = _NoWatch()
NO_TELEMETRY: Final[Watcher] = _NoTelemetry()


class Recording:
    """One call's record, from the moment it starts to its answer: `with` it while the call runs
    (its span is current), then `answered` writes what it records. Also one request's record
    without a call (`Recorder.request`), whose `with` does nothing."""

    __slots__ = ("_audit", "_started", "_subject", "_watch")

    def __init__(self, audit: AuditLog, started: float, subject: str | None, watch: Watch) -> None:
        self._audit = audit
        self._started = started
        self._subject = subject
        self._watch = watch

    def __enter__(self) -> None:
        self._watch.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._watch.__exit__(kind, exc, tb)

    def answered(self, answer: Answer) -> int | None:
        """The request's span ended and metrics counted (telemetry on), then its audit record; the
        record's ticket for `Recorder.wait_written`, None when none is written."""
        trace = self._watch.answered(answer)
        return self._audit.answered(answer, self._started, subject=self._subject, trace=trace)


class Recorder:
    """What a transport records (one per transport; shared by its sessions and requests)."""

    __slots__ = ("_audit", "_pipe", "_telemetry", "_transport")

    def __init__(self, transport: Transport, telemetry: Watcher = NO_TELEMETRY) -> None:
        self._transport: Final = transport
        self._telemetry: Final = telemetry
        self._audit: Final = AuditLog()
        self._pipe = Asker()

    # -- the audit's room in the log sink ----------------------------------------------------------

    def admit(self) -> bool:
        """Whether a request to be audited may start (`AuditLog.admit`)."""
        return self._audit.admit()

    async def wait_room(self) -> None:
        """Return once the log sink has room for another request's record (`AuditLog.wait_room`)."""
        await self._audit.wait_room()

    async def wait_written(self, ticket: int | None) -> None:
        """Return once the record of `ticket` is on stderr, or waited for AUDIT_WRITE_WAIT_S
        (`AuditLog.wait_written`)."""
        await self._audit.wait_written(ticket)

    # -- requests ------------------------------------------------------------------------------------

    def asked_over_http(self, subject: str, headers: Mapping[str, str]) -> Asker:
        """Who asks an HTTP request: its token's subject (also for the audit events its tools log,
        in this task and its worker threads: `audit_subject`), and its headers' trace context,
        protocol version and session id (for its span and metrics)."""
        audit_subject.set(subject)
        return Asker(
            subject=subject,
            traceparent=headers.get("traceparent"),
            protocol_version=headers.get("mcp-protocol-version"),
            session_id=headers.get("mcp-session-id"),
        )

    def asked_over_pipe(self, protocol_version: str | None) -> Asker:
        """Who asks over stdio: the session's client, under the version it serves (the one asker
        of the session, made again only when its version changes: after `initialize`)."""
        asker = self._pipe
        if asker.protocol_version != protocol_version:
            asker = self._pipe = Asker(protocol_version=protocol_version)
        return asker

    def call(self, start: StartCall, started: float, asker: Asker) -> Recording:
        """The record of a call the core started, received at `started` (perf_counter): its span
        opens now and is current inside `with`."""
        watch = self._telemetry.call(start, started, self._transport, asker)
        return Recording(self._audit, started, asker.subject, watch)

    def request(self, started: float, asker: Asker) -> Recording:
        """The record of a request answered without a call of its own."""
        watch = self._telemetry.request(started, self._transport, asker)
        return Recording(self._audit, started, asker.subject, watch)

    def answered_over_pipe(self, answer: Answer, started: float, protocol_version: str | None) -> None:
        """Record a stdio request answered without a call of its own, under `protocol_version`
        (`request(...).answered(answer)` in one step: the path of every ping)."""
        asker = self._pipe
        if asker.protocol_version != protocol_version:
            asker = self._pipe = Asker(protocol_version=protocol_version)
        trace = self._telemetry.answered(answer, started, self._transport, asker)
        self._audit.answered(answer, started, trace=trace)

    def watch_http(self, sessions: Callable[[], int], callers: Callable[[], int]) -> None:
        """The HTTP transport's gauges, when telemetry is on (`Watcher.watch_http`)."""
        self._telemetry.watch_http(sessions, callers)
