"""Whether the database is there, as the SQL tool's connection attempts see it.

`Availability` turns a failed connection into the `database-unavailable` problem, logs one line per
change of state (available, unreachable, refusing the login; never one per call) and spaces the
attempts: after a second failure in a row, calls fail at once, without touching the database, for a
back-off that doubles up to `MCP_SQL_RECONNECT_MAX_S`. Thread-safe; sync (worker threads).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

import psycopg

from mcp_suite.problems import DatabaseUnavailableError
from mcp_suite.tools.sql.engine.naming import log_prefix, the_database
from mcp_suite.tools.sql.engine.role_audit.connect import connection_failure

__all__ = ["Availability", "State", "login_refused"]

log = logging.getLogger("mcp_suite.tools.sql.read_only_sql")

_FIRST_BACKOFF_S: Final = 0.5
# libpq gives a failed connection no SQLSTATE, only its text: a reply of the server carries its
# severity ("FATAL:"), a network failure does not. Of the server's refusals, these pass by themselves.
_SERVER_REPLY: Final = "FATAL:"
_TRANSIENT: Final = ("too many", "starting up", "shutting down", "in recovery", "not yet accepting")


def login_refused(exc: psycopg.Error) -> bool:
    """True when the server answered and refused this login (role, password, database, pg_hba)."""
    reason = connection_failure(exc)
    return _SERVER_REPLY in reason and not any(word in reason for word in _TRANSIENT)


class State(enum.Enum):
    AVAILABLE = "available"
    UNREACHABLE = "unreachable"
    REFUSED = "refusing the login"


class Availability:
    """The database's state and the back-off between connection attempts after failures.

    Limits: the back-off is at most `max_backoff_s`. `clock` is injectable for tests. `source`: the
    configuration file's name of the source, which its log lines and problems carry (None: the one
    source of `MCP_SQL_DSN`).
    """

    def __init__(
        self,
        *,
        max_backoff_s: float,
        clock: Callable[[], float] = time.monotonic,
        source: str | None = None,
    ) -> None:
        self._max_backoff_s = max_backoff_s
        self._source = source
        self._clock = clock
        self._lock = threading.Lock()
        self._state = State.AVAILABLE
        self._unavailable = False  # the state, as a flag read without the lock
        self._failures = 0  # calls' failed attempts in a row (the start-up attempt is not one)
        self._retry_at = 0.0

    @property
    def state(self) -> State:
        return self._state

    def check(self) -> None:
        """Raise the problem at once while the back-off after failures lasts; else return."""
        with self._lock:
            wait = self._retry_at - self._clock()
            if not self._unavailable or wait <= 0:
                return
            raise self._problem(wait)

    def failed(self, exc: psycopg.Error, *, at_start: bool = False) -> DatabaseUnavailableError:
        """Record a failed connection (logged if the state changed); the problem to raise."""
        state = State.REFUSED if login_refused(exc) else State.UNREACHABLE
        with self._lock:
            # The first call after a failure tries at once (an outage may be a restart); then the
            # back-off doubles. A failure at start-up only sets the state: the first call tries.
            self._failures += 0 if at_start else 1
            backoff = 0.0 if self._failures <= 1 else _FIRST_BACKOFF_S * 2 ** (self._failures - 2)
            backoff = min(self._max_backoff_s, backoff)
            self._retry_at = self._clock() + backoff
            changed, self._state = state is not self._state, state
            self._unavailable = True
            problem = self._problem(backoff)
        if changed:
            when = " at start-up" if at_start else ""
            log.warning(
                "%s%s is %s%s (%s); calls get database-unavailable until a connection succeeds "
                "(attempts back off up to %g s)",
                log_prefix(self._source),
                the_database(self._source),
                state.value,
                when,
                connection_failure(exc),
                self._max_backoff_s,
            )
        return problem

    def succeeded(self) -> None:
        """Record a working connection (logged when the database was unavailable)."""
        if not self._unavailable:  # the common case: no lock
            return
        with self._lock:
            changed, self._state = self._unavailable, State.AVAILABLE
            self._unavailable = False
            self._failures = 0
            self._retry_at = 0.0
        if changed:
            log.warning("%sthe database is available again", log_prefix(self._source))

    def _problem(self, wait_s: float) -> DatabaseUnavailableError:
        if self._state is State.REFUSED:
            return DatabaseUnavailableError(
                "The database refused the server's login (its role, password or database). Retrying "
                "will not help until an operator fixes it; the server's log says why.",
                metadata={"retryable": False},
            )
        return DatabaseUnavailableError(
            "The database cannot be reached right now. Retrying in a little while may help.",
            metadata={"retryable": True, "retry_after_s": round(max(wait_s, 0.0), 1)},
        )
