"""`CallTicket`: links one call's worker thread, and the connection it runs on, to a canceller;
`CallCancelledError`: what a call whose ticket was cancelled before it reached the database raises.

Kept apart from the executor so the event loop can make one per call without importing the
executor (psycopg_pool and the type loaders, which the warm-up loads after the handshake).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

__all__ = ["CallCancelledError", "CallTicket"]

log = logging.getLogger(__name__)


class CallCancelledError(Exception):
    """The call was cancelled before it reached the database (its result is discarded)."""


class CallTicket:
    """Links one call's worker thread (which attaches its connection) to a canceller thread.

    `cancel()` marks the call cancelled and, while the worker holds a connection inside its
    transaction, sends PostgreSQL a cancel request (`cancel_safe`). The lock makes sure a cancel is
    never sent after the worker has detached: it cannot hit the connection's next user.
    """

    def __init__(self, cancel_timeout_s: float = 5.0) -> None:
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._cancelled = False
        self._timeout = cancel_timeout_s
        self.started = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def mark_cancelled(self) -> bool:
        """Mark cancelled without I/O; True when a query may be running (then call `cancel`)."""
        with self._lock:
            self._cancelled = True
            return self._conn is not None

    def cancel(self) -> None:
        """Blocking (network): stop the running query, if any. Safe from any thread."""
        with self._lock:
            self._cancelled = True
            conn = self._conn
            if conn is None:
                return
            try:
                conn.cancel_safe(timeout=self._timeout)
            except Exception:  # best effort: the statement timeout still bounds it
                log.warning("could not cancel a running query", exc_info=True)

    def attach(self, conn: psycopg.Connection[Any]) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._conn = conn
            return True

    def detach(self) -> None:
        with self._lock:
            self._conn = None
