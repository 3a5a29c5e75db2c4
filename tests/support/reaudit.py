"""The real server with a short re-audit interval, and what the tests ask of it while it serves
(tests/pg/test_sql_reaudit.py, tests/pg/test_sql_reach_while_serving.py).

    with reauditing_server(probe_dsn(cluster)) as server:   # the role passes the audit: it serves
        ...make a hazard as a careless superuser would...
        problem = problem_of(until(server, refused))         # within a few intervals
        for name, problem in sql_surfaces(server, sql): ...  # every SQL surface refuses
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import psycopg

from tests.support.client import ServerProcess, problem_of

REAUDIT_S: Final = 0.3
COUNT: Final = {"sql": "SELECT count(*) AS n FROM docs.pages"}
REFUSED_LOG: Final = "the SQL tools stop serving: the role audit refused"
SERVED_LOG: Final = "the role passes the audit again"
UNAUDITED_LOG: Final = "the SQL tools stop serving: no role audit has completed"

GUIDE: Final = Path(__file__).resolve().parents[2] / "docs" / "tools" / "postgres-role-guide.sql"
DROP_EVENT_TRIGGER: Final = (
    "DROP EVENT TRIGGER IF EXISTS mcp_suite_role_audit",
    "DROP SCHEMA IF EXISTS mcp_suite_audit CASCADE",
)


def event_trigger_sql() -> str:
    """Step 9 of the role guide as written: the event trigger that notifies the audit."""
    text = GUIDE.read_text()
    step = re.search(r"^-- 9\. .*?(?=^-- 10\. )", text, re.MULTILINE | re.DOTALL)
    assert step is not None, "the role guide's step 9 (the event trigger) moved"
    return step.group(0)


def install_event_trigger(admin: psycopg.Connection[Any]) -> None:
    """The role guide's event trigger, installed as the DBA does (a superuser's connection)."""
    for statement in DROP_EVENT_TRIGGER:
        admin.execute(statement.encode())
    admin.execute(event_trigger_sql().encode())


def drop_event_trigger(admin: psycopg.Connection[Any]) -> None:
    for statement in DROP_EVENT_TRIGGER:
        admin.execute(statement.encode())


@contextlib.contextmanager
def reauditing_server(dsn: str, **env: str) -> Iterator[ServerProcess]:
    """The real server on `dsn` (its role passes the audit at start-up), the metrics tool beside the
    SQL tools, re-auditing every REAUDIT_S; it has answered one count before it is yielded."""
    settings = {
        "MCP_SQL_DSN": dsn,
        "MCP_METRICS_ENABLED": "true",
        "MCP_SQL_REAUDIT_INTERVAL_S": str(REAUDIT_S),
        **env,
    }
    with ServerProcess(env=settings) as process:
        process.initialize()
        assert process.call_tool("read_only_sql", COUNT)["structuredContent"]["rows"] == [[30]]
        yield process


def until(server: ServerProcess, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Call read_only_sql's harmless count until `done(result)`, at most a few intervals (the test
    asserts on what comes back)."""
    deadline = time.monotonic() + 20 * REAUDIT_S + 5
    while True:
        result = server.call_tool("read_only_sql", COUNT)
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(REAUDIT_S / 3)


def refused(result: dict[str, Any]) -> bool:
    return bool(result.get("isError")) and problem_of(result)["type"].endswith(":role-refused")


def unaudited(result: dict[str, Any]) -> bool:
    return bool(result.get("isError")) and problem_of(result)["type"].endswith(":role-unaudited")


def served(result: dict[str, Any]) -> bool:
    return not result.get("isError")


def sql_surfaces(server: ServerProcess, sql: str) -> list[tuple[str, dict[str, Any]]]:
    """Each SQL surface called once (`sql` through read_only_sql and explain_sql with analyze, then
    sql_schema and the schema resource): (name, its problem document, or {} when it answered)."""
    answers: list[tuple[str, dict[str, Any]]] = []
    for name, arguments in (
        ("read_only_sql", {"sql": sql}),
        ("explain_sql", {"sql": sql, "analyze": True}),
        ("sql_schema", {}),
    ):
        result = server.call_tool(name, arguments)
        answers.append((name, problem_of(result) if result.get("isError") else {}))
    resource = server.request("resources/read", {"uri": "postgres://mcp_demo/schema"})
    answers.append(("schema resource", resource["error"]["data"] if "error" in resource else {}))
    return answers
