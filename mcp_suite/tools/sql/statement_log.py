"""The audit record of one SQL statement, logged through `logging` (no import of the runtime).

`log_statement` hands the record's fields to the `mcp_suite.audit` logger as `extra={"audit": ...}`;
the runtime's log handler writes any record that carries them as one audit line (event `statement`).
The text is kept up to `AUDIT_SQL_MAX_CHARS` (then cut, with `sql_truncated` and `sql_chars`); never
the rows, never the DSN.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from mcp_suite.settings import AUDIT_SQL_MAX_CHARS

__all__ = ["log_statement"]

_audit: Final = logging.getLogger("mcp_suite.audit")


def log_statement(
    *,
    tool: str,
    sql: str,
    outcome: str,
    started: float,
    rows: int | None,
    source: str | None = None,
    role: str | None = None,
) -> None:
    """Audit one statement: the rows returned, the time since `started` (a `time.perf_counter()`
    reading), the outcome (`ok`, a problem slug, `cancelled` or `error`), the source it went to
    when the server reads several, and the role it ran as under an identity map (the record's
    `sub` names the caller)."""
    if not _audit.isEnabledFor(logging.INFO):
        return
    fields: dict[str, Any] = {
        "outcome": outcome,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "tool": tool,
        "rows": rows,
        "sql": sql[:AUDIT_SQL_MAX_CHARS],
    }
    if source is not None:
        fields["source"] = source
    if role is not None:
        fields["role"] = role
    if len(sql) > AUDIT_SQL_MAX_CHARS:
        fields["sql_truncated"] = True
        fields["sql_chars"] = len(sql)
    _audit.info("statement", extra={"audit": fields})
