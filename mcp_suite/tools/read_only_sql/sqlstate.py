"""Database errors → the caller's problem (docs/tools/read_only_sql.md, "SQLSTATE → problem").

Matches psycopg's error classes (`psycopg.errors`): the exact class for a single condition, the
class of the SQLSTATE's class (`errors.lookup("22000")`, data_exception) for a family. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg import errors

from mcp_suite.problems import (
    AccessDeniedError,
    ConflictError,
    ExecutionTimeoutError,
    InvalidArgumentsError,
    ProblemError,
    QueryViolationError,
    ResourceLimitError,
    echo,
)

__all__ = ["problem_from_sqlstate"]

# A denied or unknown table, column or schema: the next step is to look at what the role may read
# (`sql_schema` is served with every SQL tool).
_SCHEMA_HINT: Final = " sql_schema lists the tables and columns this role may read."
_UNKNOWN_NAME: Final = (errors.UndefinedTable, errors.UndefinedColumn)  # also an unknown schema

# Families whose errors are the query's own fault: cardinality (21), data (22), syntax or access
# rule (42), feature not supported (0A), program limit (54).
_QUERY_FAMILIES: Final = frozenset(
    {
        errors.CardinalityViolation,
        errors.DataException,
        errors.SyntaxErrorOrAccessRuleViolation,
        errors.FeatureNotSupported,
        errors.ProgramLimitExceeded,
    }
)


def _family(state: str) -> type[psycopg.Error] | None:
    """psycopg's error class for the class of `state` (its first two characters)."""
    try:
        return errors.lookup(state[:2] + "000")
    except KeyError:
        return None


def problem_from_sqlstate(exc: psycopg.Error, *, timeout_ms: int) -> ProblemError | None:
    """The caller-facing problem for a database error, or None for a server/connection failure.

    query_canceled → execution-timeout; read-only transaction → query-violation; insufficient
    privilege → access-denied; classes 21, 22, 42, 0A, 54 → validation-error; serialization
    failure, deadlock → conflict (retryable); configuration limit → resource-limit; everything
    else is not the caller's to fix (-32603).
    Security: the detail holds PostgreSQL's primary message cut to 256 characters (it names the
    caller's own tables, columns and values), never str(exc), hints, context or positions.
    """
    state = exc.sqlstate
    if not state:
        return None
    message = echo(exc.diag.message_primary or "")
    meta = {"sqlstate": state}
    family = _family(state)
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
    if isinstance(exc, errors.SerializationFailure | errors.DeadlockDetected):
        # On a hot standby a serialization failure is a recovery conflict: the query was in the way
        # of replaying the primary's changes. The call itself is fine.
        return ConflictError(
            "The database cancelled the query because of a conflict with other work (on a"
            " replica: with replaying the primary's changes). Send the same call again.",
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
