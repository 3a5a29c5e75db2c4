"""Logging and the audit trail: one JSON object per line on stderr, written by a background thread.

stdout belongs to the protocol; everything here goes to stderr. Records are queued (bounded) and
written by a logging thread, so a client that never drains our stderr cannot block the event loop:
when the queue is full, records are dropped and counted. No secrets and no argument values beyond a
256-character excerpt are ever logged.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import queue
import sys
import time
from typing import Any, Final, TextIO

__all__ = ["AuditLog", "configure_logging", "logger"]

logger: Final = logging.getLogger("mcp_suite")
_audit_logger: Final = logging.getLogger("mcp_suite.audit")
_QUEUE_SIZE: Final = 10_000


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        event = getattr(record, "event", None)
        if isinstance(event, dict):
            payload.update(event)
        else:
            payload["msg"] = record.getMessage()
        if record.exc_info:
            payload["traceback"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=True, default=str, separators=(",", ":"))


class _DroppingQueueHandler(logging.handlers.QueueHandler):
    dropped = 0

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            type(self).dropped += 1

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        # Format in the listener thread, not here; only freeze the message arguments.
        record.msg = record.getMessage()
        record.args = None
        return record


_listener: logging.handlers.QueueListener | None = None


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send every `mcp_suite` record to stderr as JSON lines, through a bounded queue and a thread."""
    global _listener  # one process-wide listener, replaced on reconfiguration
    shutdown_logging()
    target = logging.StreamHandler(stream if stream is not None else sys.stderr)
    target.setFormatter(JsonFormatter())
    log_queue: queue.Queue[logging.LogRecord] = queue.Queue(_QUEUE_SIZE)
    handler = _DroppingQueueHandler(log_queue)
    root = logging.getLogger("mcp_suite")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    _listener = logging.handlers.QueueListener(log_queue, target)
    _listener.start()


def shutdown_logging() -> None:
    """Flush queued records (the listener thread writes what is left) and stop the thread."""
    global _listener  # see configure_logging
    if _listener is not None:
        _listener.stop()
        _listener = None


class AuditLog:
    """The audit trail of requests: time, id, method, tool, outcome or problem slug, duration."""

    __slots__ = ()

    def enabled(self) -> bool:
        return _audit_logger.isEnabledFor(logging.INFO)

    def request(
        self,
        *,
        request_id: object,
        method: str,
        outcome: str,
        started: float,
        tool: str | None = None,
        problem: str | None = None,
        excerpt: str | None = None,
        incident: str | None = None,
    ) -> None:
        if not _audit_logger.isEnabledFor(logging.INFO):
            return
        event: dict[str, Any] = {
            "event": "request",
            "id": request_id,
            "method": method[:64],
            "outcome": outcome,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        if tool is not None:
            event["tool"] = tool[:64]
        if problem is not None:
            event["problem"] = problem
        if excerpt is not None:
            event["args_excerpt"] = excerpt[:256]
        if incident is not None:
            event["incident"] = incident
        _audit_logger.info("request", extra={"event": event})
