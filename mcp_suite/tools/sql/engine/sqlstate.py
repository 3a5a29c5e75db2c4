"""Database errors → the caller's problem (docs/tools/read_only_sql.md, "SQLSTATE → problem").

Matches psycopg's error classes (`psycopg.errors`): the exact class for a single condition, the
class of the SQLSTATE's class (`errors.lookup("22000")`, data_exception) for a family. `classify`
says what a failed call is: the caller's problem, a failure of the connection itself (only that is
unavailability), or a fault of the server on a live connection. Pure: no I/O.
"""

from __future__ import annotations

import enum
from typing import Final

import psycopg
from psycopg import errors

from mcp_suite.problems import (
    AccessDeniedError,
    ConflictError,
    DatabaseUnavailableError,
    ExecutionTimeoutError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    ResourceLimitError,
    echo,
)
from mcp_suite.tools.sql.engine.error_values import withhold_values

__all__ = ["Fault", "classify", "problem_from_sqlstate"]

# A denied or unknown table, column or schema: the next step is to look at what the role may read
# (`sql_schema` is served with every SQL tool).
_SCHEMA_HINT: Final = " sql_schema lists the tables and columns this role may read."
_UNKNOWN_NAME: Final = (errors.UndefinedTable, errors.UndefinedColumn)  # also an unknown schema

# Families whose errors are the query's own fault: cardinality (21), data (22), syntax or access
# rule (42), feature not supported (0A), program limit (54), object not in prerequisite state (55:
# `SELECT lastval()` before any nextval, a parameter that cannot be changed now; its 55P03
# lock_not_available is answered above as a timeout).
_QUERY_FAMILIES: Final = frozenset(
    {
        errors.CardinalityViolation,
        errors.DataException,
        errors.SyntaxErrorOrAccessRuleViolation,
        errors.FeatureNotSupported,
        errors.ProgramLimitExceeded,
        errors.ObjectNotInPrerequisiteState,
    }
)


class Fault(enum.Enum):
    """A failed call that is not the caller's to fix (`classify`)."""

    CONNECTION = "connection"  # the connection itself failed: database-unavailable, and logged so
    SERVER = "server"  # the server failed on a live connection: an internal error (incident id)


def _family(state: str) -> type[psycopg.Error] | None:
    """psycopg's error class for the class of `state` (its first two characters)."""
    try:
        return errors.lookup(state[:2] + "000")
    except KeyError:
        return None


# The families whose messages quote the value they failed on (`invalid input syntax for type
# integer: "x"`, `value "..." is out of range`, a constraint's): that value may be a hidden row's,
# so only what the caller's text holds of it is shown (`error_values.withhold_values`).
_VALUE_FAMILIES: Final = frozenset({errors.DataException, errors.IntegrityConstraintViolation})


def problem_from_sqlstate(exc: psycopg.Error, *, timeout_ms: int, query: str = "") -> ProblemError | None:
    """The caller-facing problem for a database error, or None for a server/connection failure.

    query_canceled → execution-timeout; out of memory, temp_file_limit → resource-limit;
    read-only transaction → query-violation; insufficient
    privilege → access-denied; classes 21, 22, 42, 0A, 54, 55 → validation-error; serialization
    failure, deadlock → conflict (retryable), even when the server then ended the session (a
    recovery conflict); the rest of class 57 (administrator command, crash, shutdown) →
    database-unavailable naming the session's end; everything else is not the caller's to fix.
    Security: the detail holds PostgreSQL's primary message cut to 256 characters (it names the
    caller's own tables, columns and values), never str(exc), hints, context or positions. In a
    data or constraint error, a value `query` (the caller's text) does not hold is withheld: it
    may be a row's the caller may not read (docs/tools/read_only_sql.md, "What an error shows").
    """
    state = exc.sqlstate
    if not state:
        return None
    family = _family(state)
    primary = exc.diag.message_primary or ""
    if family in _VALUE_FAMILIES:
        primary = withhold_values(primary, query)
    message = echo(primary)
    meta = {"sqlstate": state}
    if isinstance(exc, errors.QueryCanceled):
        return ExecutionTimeoutError(
            f"The query was stopped in the database after the statement timeout ({timeout_ms} ms)"
            " or by a cancel request; ask for less work (filter, aggregate, fewer rows).",
            metadata={**meta, "statement_timeout_ms": timeout_ms},
        )
    if isinstance(exc, errors.LockNotAvailable):  # waited too long for a lock (decision in docs/)
        return ExecutionTimeoutError(
            "The query waited too long for a lock held by another session.", metadata=meta
        )
    if isinstance(exc, errors.ConfigurationLimitExceeded):  # temp_file_limit, set for the role
        return ResourceLimitError(
            "The query needed more temporary disk space than the database allows this role"
            " (temp_file_limit): it sorts, hashes or materialises too much. Aggregate or filter"
            " first (WHERE, GROUP BY, a LIMIT inside a subquery) so less data is sorted.",
            metadata=meta,
        )
    if isinstance(exc, errors.OutOfMemory):  # the database host refused this query's memory
        return ResourceLimitError(
            "The database ran out of memory for this query (a large aggregate such as string_agg"
            " or array_agg, a big sort or hash). Ask for less at once: filter first, aggregate"
            " fewer rows, or return rows instead of one large value.",
            metadata=meta,
        )
    if isinstance(exc, errors.SerializationFailure | errors.DeadlockDetected):
        # On a hot standby a serialization failure is a recovery conflict: the query was in the way
        # of replaying the primary's changes. The call itself is fine.
        return ConflictError(
            "The database cancelled the query because of a conflict with other work (on a"
            " replica: with replaying the primary's changes). Send the same call again.",
            metadata={**meta, "retryable": True},
        )
    if family is errors.OperatorIntervention:
        # admin_shutdown (pg_terminate_backend, a fast shutdown), crash_shutdown, database_dropped,
        # idle_session_timeout: the server ended this session while the call used it. The call is
        # not sent again by the server (docs/tools/read_only_sql.md, "When a call is retried").
        return DatabaseUnavailableError(
            "The database ended the session that ran this query (an administrator's"
            " pg_terminate_backend, a shutdown or a crash). It was not run again, since it had"
            " started; send the call again if it should be.",
            metadata={**meta, "retryable": True},
        )
    if family is errors.InvalidTransactionState:
        # read_only_sql_transaction, and the rest of the family (for example active_sql_transaction
        # from set_config('transaction_read_only', 'off', ...)): the query tried to change the
        # transaction it runs in, which is the caller's doing, not a server failure.
        return QueryViolationError(
            "The database refused this inside the read-only transaction: " + message,
            metadata=meta,
        )
    if isinstance(exc, errors.InsufficientPrivilege):
        return AccessDeniedError(
            f"The database role may not do this: {message}.{_SCHEMA_HINT}", metadata=meta
        )
    if family in _QUERY_FAMILIES:
        hint = _SCHEMA_HINT if isinstance(exc, _UNKNOWN_NAME) else ""
        return InvalidArgumentsError(
            f"The database rejected the query: {message}{'.' if hint else ''}{hint}",
            invalid_params=("sql",),
            metadata=meta,
        )
    return None


def classify(exc: psycopg.Error, *, broken: bool, timeout_ms: int, query: str = "") -> ProblemError | Fault:
    """What a call that failed with `exc` is: the caller's problem, or a `Fault`.

    `broken` says the connection is gone (closed by the server or the network, or closed by us
    after it could not be reset). A problem of the caller's stays that problem on a broken
    connection (a recovery conflict is cancelled, then its session ended: still `conflict`). Only
    a failure of the connection itself is unavailability: a connection exception (class 08), or
    an error without a SQLSTATE (libpq's own: the socket closed, no answer in time), or any
    unmapped error that left the connection broken. An unmapped SQLSTATE on a live connection
    (disk full, internal_error, a routine's exception) is the server's fault.
    `query` is the caller's text: what an error may show of a value (`problem_from_sqlstate`).
    """
    problem = problem_from_sqlstate(exc, timeout_ms=timeout_ms, query=query)
    if problem is not None:
        return problem
    if broken or not exc.sqlstate or _family(exc.sqlstate) is errors.ConnectionException:
        return Fault.CONNECTION
    return Fault.SERVER
