"""The log sink: every `mcp_suite` record as one JSON object per line on stderr, by a background thread.

Owns `StderrSink` (a buffer bounded in bytes, drained in batches by one daemon thread, so a parent
that never reads our stderr cannot block the event loop: log lines beyond their half of the bound
are dropped and counted; audit records never are, and `admit` says when a request must not start
for want of room),
the JSON-line handler that libraries' records and Python warnings take too, `configure_logging` and
`write_line_now` (a refusal before the sink runs). stdout belongs to the protocol: nothing here
writes there. Knows no record schema beyond a log line's: a record that carries its own line
(`json_line`, the audit trail's events) is written as it is. Must not import the audit trail.
"""

from __future__ import annotations

import collections
import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TextIO

from mcp_suite.settings import default_of

__all__ = [
    "JsonLineHandler",
    "SinkStatistics",
    "StderrSink",
    "configure_logging",
    "current_sink",
    "dumps",
    "logger",
    "shutdown_logging",
    "timestamp",
    "write_line_now",
]

logger: Final = logging.getLogger("mcp_suite")
# The default bound of the sink: MCP_LOG_BUFFER_BYTES's (which sets the server's).
_BUFFER_BYTES: Final[int] = default_of("log_buffer_bytes")
_FLUSH_INTERVAL_S: Final = 0.02


# Built once: `json.dumps` with options builds a new encoder on every call.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, default=str, separators=(",", ":"))


def timestamp(created: float) -> str:
    """UTC, ISO 8601, to the millisecond: `2023-11-14T22:13:20.500Z`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"


def dumps(payload: dict[str, Any]) -> str:
    """One compact, ASCII JSON object: the form of every stderr line."""
    return _ENCODER.encode(payload)


@dataclass(frozen=True, slots=True)
class SinkStatistics:
    """`StderrSink.statistics()`: lines and bytes not yet written (those being written included),
    log lines dropped since the sink started because the buffer was full, and requests refused
    because it was (`admit`)."""

    lines_waiting: int
    bytes_waiting: int
    lines_dropped: int
    requests_refused: int


class StderrSink:
    """A line buffer bounded in bytes, drained to a text stream by one daemon thread.

    Every line gets a ticket, its number in order; `when_written(ticket, callback)` calls back from
    the writer thread once that line and every one before it are out (or were dropped).

    Limits: lines not yet written (the batch being written included) hold at most `capacity_bytes`
    bytes. Log lines may fill half of it; beyond that a new log line is dropped and counted
    (`statistics().lines_dropped`, and a warning line once the writer runs again), so a flood of
    log lines (an unauthenticated client's refusals) never takes the room of audit records. A line
    written with `keep=True` (an audit record) is never dropped: it may pass the bound, by as much
    as the requests `admit` let start before the bound was reached write, and no more, since
    `admit` refuses new ones past it.
    """

    def __init__(self, stream: TextIO, capacity_bytes: int = _BUFFER_BYTES) -> None:
        self._stream = stream
        self._lines: collections.deque[str] = collections.deque()
        self._capacity = capacity_bytes
        self._held = 0  # bytes (ASCII JSON) of the lines not yet written, the batch being written too
        self._held_lines = 0
        self._refused = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        # Set while someone waits for a line: the writer skips its gathering pause.
        self._hurry = threading.Event()
        # Tickets and the queue change together (lines come from the loop and from worker threads).
        self._lock = threading.Lock()
        self._accepted = 0
        self._written = 0
        self._waiters: list[tuple[int, Callable[[], object]]] = []
        self._dropped = 0
        self._dropped_unreported = 0  # since the last warning line
        self._thread = threading.Thread(target=self._run, name="mcp-suite-log", daemon=True)
        self._thread.start()

    def statistics(self) -> SinkStatistics:
        with self._lock:
            return SinkStatistics(
                lines_waiting=self._held_lines,
                bytes_waiting=self._held,
                lines_dropped=self._dropped,
                requests_refused=self._refused,
            )

    def admit(self) -> bool:
        """Whether a request whose audit record is to be written may start: not while the lines
        not yet written fill the bound (a stderr read slower than the server logs). A refusal is
        counted (`statistics().requests_refused`)."""
        with self._lock:
            if self._held < self._capacity:
                return True
            self._refused += 1
            return False

    def has_room(self) -> bool:
        """Whether the lines not yet written are below the bound (`admit` without counting)."""
        with self._lock:
            return self._held < self._capacity

    def last_ticket(self) -> int:
        """The ticket of the last line queued (0: none yet)."""
        with self._lock:
            return self._accepted

    def write_line(self, line: str, *, keep: bool = False) -> int:
        """Queue `line`; its ticket. Never blocks on the stream. A log line that does not fit in
        the log lines' half of the bound is dropped; one to `keep` (an audit record) never is."""
        with self._lock:
            self._accepted += 1
            ticket = self._accepted
            if not keep and self._held + len(line) + 1 > self._capacity // 2:
                self._dropped += 1
                self._dropped_unreported += 1
                return ticket
            was_empty = not self._lines
            self._lines.append(line)
            self._held += len(line) + 1
            self._held_lines += 1
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
            taken_lines = len(batch)
            taken = sum(len(line) + 1 for line in batch)
            if self._dropped_unreported:
                count, self._dropped_unreported = self._dropped_unreported, 0
                batch.append(dumps({"level": "warning", "msg": f"{count} log line(s) dropped"}))
        if batch:
            try:
                self._stream.write("\n".join(batch) + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                pass  # stderr is gone; nothing else can report it
        with self._lock:
            self._held -= taken
            self._held_lines -= taken_lines
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
    payload: dict[str, Any] = {
        "ts": timestamp(record.created),
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }
    if record.exc_info:
        payload["traceback"] = logging.Formatter().formatException(record.exc_info)
    return dumps(payload)


class JsonLineHandler(logging.Handler):
    def __init__(self, sink: StderrSink) -> None:
        super().__init__()
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            own = record.__dict__.get("json_line")  # built where the record was logged
            if isinstance(own, str):  # an audit event: never dropped
                self.sink.write_line(own, keep=True)
            else:
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
        line = line[:-1] + "," + dumps(fields)[1:]
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr is gone; nothing else can report it


_sink: StderrSink | None = None


def current_sink() -> StderrSink | None:
    """The process-wide sink while logging is configured, else None."""
    return _sink


def configure_logging(
    level: str = "INFO", stream: TextIO | None = None, *, buffer_bytes: int = _BUFFER_BYTES
) -> None:
    """Send every `mcp_suite` record to stderr (or `stream`) as JSON lines, through a sink bounded
    by `buffer_bytes` (MCP_LOG_BUFFER_BYTES)."""
    global _sink  # one process-wide sink, replaced on reconfiguration
    shutdown_logging()
    _sink = StderrSink(stream if stream is not None else sys.stderr, buffer_bytes)
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
