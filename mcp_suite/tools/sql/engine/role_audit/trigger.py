"""The role guide's event trigger, as the audit finds it: it must fire in every session.

An event trigger left at the default `ENABLE` (origin) does not fire in a session with
`session_replication_role = replica`, which is what migration and replication tools set: there
the DDL it exists to announce reaches the server only at the next interval. The guide creates it
`ENABLE ALWAYS`; when it exists in another state, this check says so (a warning: the trigger is
recommended, not required, and the interval still holds). One statement. Sync psycopg only.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.tools.sql.engine.role_audit.finding import Finding

__all__ = ["EVENT_TRIGGER", "event_trigger_findings"]

EVENT_TRIGGER: Final = "mcp_suite_role_audit"  # the role guide's name (step 9)
_STATES: Final = {"O": "ENABLE (not in replica sessions)", "R": "ENABLE REPLICA", "D": "DISABLE"}


def event_trigger_findings(conn: psycopg.Connection[Any]) -> list[Finding]:
    row = conn.execute(
        "SELECT evtenabled FROM pg_catalog.pg_event_trigger WHERE evtname = %s", (EVENT_TRIGGER,)
    ).fetchone()
    if row is None or row[0] == "A":
        return []
    return [
        Finding(
            "event-trigger",
            f"the event trigger {EVENT_TRIGGER} is {_STATES.get(row[0], row[0])}, not ENABLE ALWAYS:"
            " DDL run with session_replication_role = replica (migration tools set it) is not"
            " announced, and reaches the audit only at its next interval",
            f"ALTER EVENT TRIGGER {EVENT_TRIGGER} ENABLE ALWAYS; (as a superuser)",
            warning=True,
        )
    ]
