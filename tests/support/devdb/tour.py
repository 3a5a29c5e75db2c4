"""`make demo`: every tool of the real server, driven through the official `mcp` SDK client.

Each step says what it expects: served (`ok`) or refused with a given problem type. Refusals are
guardrails doing their job, so the table prints them whole (the problem's detail and metadata, as
the client receives them) under a legend saying so; a step whose outcome differs from what it
expects is marked UNEXPECTED and makes the demo exit 1. The server reads the demo's two databases
(the sources `docs` and `ops`, mcp_suite/demo/sources_file.py): every SQL step names its source.
`python -m tests.support.devdb.tour` runs it against the session's demo cluster. Development tooling:
needs the SDK and anyio (dev.txt), which is why it lives in the test harness and not in the wheel.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from mcp_suite.demo.__main__ import run_logged
from mcp_suite.demo.places import checkout
from mcp_suite.demo.session import open_session_cluster, server_env

__all__ = ["LEGEND", "STEPS", "Step", "main", "print_table", "run_steps", "tour"]

LEGEND: Final = (
    "Legend: 'ok' = served. 'refused (intended)' = a guardrail said no, as designed; the refusal is\n"
    "printed whole, as the client receives it. 'UNEXPECTED' = not the outcome the step expects.\n"
)


@dataclass(frozen=True, slots=True)
class Step:
    tool: str
    label: str
    arguments: dict[str, Any]
    expect: str  # "ok", or the slug of the problem the guardrail must answer with


def _sql(label: str, sql: str, expect: str, *, source: str = "docs", **extra: Any) -> Step:
    return Step("read_only_sql", label, {"source": source, "sql": sql, **extra}, expect)


def _file(label: str, path: str, expect: str, **extra: Any) -> Step:
    return Step("sandbox_fs_read", label, {"relative_path": path, **extra}, expect)


STEPS: Final = (
    # In the order a model uses them: look first (sql_schema, sandbox_fs_list), then query or read.
    Step("sql_schema", "what the role may read", {"source": "docs", "detail": "names"}, "ok"),
    Step(
        "sql_schema",
        "reports.releases in full",
        {"source": "docs", "object": "reports.releases", "detail": "full"},
        "ok",
    ),
    Step("sql_schema", "a name_like that tries SQL", {"source": "docs", "name_like": "%' OR '1'='1"}, "ok"),
    Step("sql_schema", "what the ops role may read", {"source": "ops", "detail": "names"}, "ok"),
    Step("sql_schema", "a source not configured", {"source": "warehouse"}, "validation-error"),
    _sql("first five pages", "SELECT slug, section, words FROM docs.pages ORDER BY slug LIMIT 5", "ok"),
    _sql(
        "pages per section",
        "SELECT section, count(*) AS pages FROM docs.pages GROUP BY section ORDER BY 1",
        "ok",
    ),
    _sql(
        "one row of generate_series(1, 1000000)",
        "SELECT n FROM generate_series(1, 1000000) AS n",
        "ok",
        max_rows=1,
    ),
    _sql("INSERT", "INSERT INTO docs.pages VALUES ('page-99', 'e-1', 'guides', 1)", "query-violation"),
    _sql(
        "DELETE inside WITH",
        "WITH d AS (DELETE FROM docs.pages RETURNING *) SELECT count(*) FROM d",
        "query-violation",
    ),
    _sql("lo_create", "SELECT lo_create(0)", "query-violation"),
    _sql("reading docs.editors", "SELECT * FROM docs.editors", "access-denied"),
    _sql("pg_sleep(2)", "SELECT pg_sleep(2)", "query-violation"),
    _sql("two statements", "SELECT 1; SELECT 2", "query-violation"),
    _sql(
        "set_config: read-only off",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "query-violation",
    ),
    _sql("... then lo_create on the next call", "SELECT lo_create(0)", "query-violation"),
    _sql("a 300,000-character value", "SELECT repeat('x', 300000) AS big", "result-too-large"),
    _sql("pg_notify", "SELECT pg_notify('alerts', 'hello')", "query-violation"),
    _sql("1,000 rows requested", "SELECT * FROM docs.pages", "validation-error", max_rows=1000),
    # The second source: its own database, role and limits.
    _sql(
        "ops: incidents per service, and how many a deploy caused",
        "SELECT i.service, count(*) AS incidents, count(d.deploy_id) AS after_a_deploy "
        "FROM ops.incidents i LEFT JOIN ops.deploys d ON d.deploy_id = i.caused_by GROUP BY 1 ORDER BY 1",
        "ok",
        source="ops",
    ),
    _sql(
        "ops: who deployed (a column it may not read)",
        "SELECT deployed_by FROM ops.deploys",
        "access-denied",
        source="ops",
    ),
    _sql(
        "ops: the on-call phone numbers", "SELECT * FROM ops.oncall_contacts", "access-denied", source="ops"
    ),
    _sql(
        "ops: 150 rows (its own max_rows is 100)",
        "SELECT * FROM ops.deploys",
        "validation-error",
        source="ops",
        max_rows=150,
    ),
    Step(
        "explain_sql",
        "the plan of a filter",
        {"source": "docs", "sql": "SELECT slug FROM docs.pages WHERE section = 'guides'"},
        "ok",
    ),
    Step(
        "explain_sql",
        "analyze",
        {"source": "docs", "sql": "SELECT * FROM reports.words_per_section", "analyze": True},
        "ok",
    ),
    Step(
        "explain_sql",
        "ops: the open incidents of tier-1 services",
        {
            "source": "ops",
            "sql": "SELECT o.incident_id, s.team FROM ops.open_incidents o "
            "JOIN ops.services s USING (service) WHERE s.tier = 1",
        },
        "ok",
    ),
    Step("explain_sql", "a DELETE", {"source": "docs", "sql": "DELETE FROM docs.pages"}, "query-violation"),
    # A curated tool (docs/tools/curated.md): one reviewed question, its parameter checked first.
    Step("ops_incidents_of_service", "the incidents of billing", {"service": "billing"}, "ok"),
    Step("ops_incidents_of_service", "a service it does not know", {"service": "mail"}, "validation-error"),
    Step("sandbox_fs_list", "the folder", {"recursive": True}, "ok"),
    Step("sandbox_fs_list", "outside the folder", {"relative_path": ".."}, "access-denied"),
    _file("a note", "notes/sandbox-rules.md", "ok"),
    _file("the first 64 bytes of a CSV", "data/cities.csv", "ok", max_bytes=64),
    _file("a link that stays inside", "latest-notes.md", "ok"),
    _file("climbing out with ..", "../../etc/passwd", "access-denied"),
    _file("an absolute path", "/etc/passwd", "access-denied"),
    _file("a directory", "config", "access-denied"),
    _file("a file that does not exist", "notes/missing.md", "not-found"),
    Step("system_metrics", "a snapshot of the host", {}, "ok"),
    Step("system_metrics", "an argument it does not take", {"disk": "/"}, "validation-error"),
)


def _summary(tool: str, data: dict[str, Any]) -> str:
    if tool == "sql_schema":
        names = ", ".join(f"{o['schema']}.{o['name']}" for o in data.get("objects", [])) or "none"
        keys = "".join(
            f"; pk {o['primary_key']}, {len(o['foreign_keys'])} visible fk"
            for o in data.get("objects", [])
            if o.get("primary_key") is not None
        )
        return f"{names}{keys}"
    if tool == "explain_sql":
        actual = f", actual rows {data['actual_rows']:g}" if data.get("actual_rows") is not None else ""
        top = data.get("plan", {}).get("Node Type")
        return f"{top}, cost {data.get('total_cost')}, est. rows {data.get('estimated_rows', 0):g}{actual}"
    if tool == "sandbox_fs_list":
        entries = data.get("entries", [])
        return f"{len(entries)} entries: " + ", ".join(str(e.get("name")) for e in entries[:8])
    if tool == "read_only_sql" or "columns" in data:
        rows = data.get("rows", [])
        more = ", truncated" if data.get("truncated") else ""
        return (
            f"{data.get('row_count', len(rows))} row(s){more}; first {json.dumps(rows[0]) if rows else '-'}"
        )
    if tool == "sandbox_fs_read":
        more = ", truncated" if data.get("truncated") else ""
        return f"{data.get('size', '?')} bytes{more}: {json.dumps(str(data.get('content', ''))[:40])}…"
    cpu, memory = data.get("cpu", {}), data.get("memory", {})
    return f"cpu {cpu.get('percent')} %, memory {memory.get('percent')} %"


def _outcome(step: Step, result: Any) -> tuple[str, list[str]]:
    """(the got: "ok" or a slug, the lines to print)."""
    if not result.is_error:
        return "ok", [f"ok: {_summary(step.tool, result.structured_content or {})}"]
    text = result.content[0].text if result.content else "{}"
    try:
        problem = json.loads(text)
    except ValueError:
        return "error", [f"error: {text}"]
    slug = str(problem.get("type", "")).rsplit(":", 1)[-1]
    lines = [f"{slug}: {problem.get('detail', '')}"]
    extras = {k: problem[k] for k in ("invalid_params", "metadata") if problem.get(k)}
    if extras:
        lines.append(json.dumps(extras, ensure_ascii=False))
    return slug, lines


async def run_steps(env: dict[str, str], cwd: Path) -> list[tuple[str, bool, list[str]]]:
    """Every step against the real server: (label, as expected, lines to print)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError

    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_suite"], env=env, cwd=str(cwd))
    table: list[tuple[str, bool, list[str]]] = []
    async with Client(params) as client:
        tools = await client.list_tools()
        table.append(("tools/list", True, ["ok: " + ", ".join(t.name for t in tools.tools)]))
        resources = await client.list_resources()
        for uri in (str(r.uri) for r in resources.resources):
            read = await client.read_resource(uri)
            schema = json.loads(getattr(read.contents[0], "text", "{}"))
            tables = [f"{t['schema']}.{t['name']}" for t in schema.get("objects", [])]
            table.append((f"resource {uri}", True, ["ok: tables " + ", ".join(tables)]))
        for step in STEPS:
            started = time.perf_counter()
            try:
                got, lines = _outcome(step, await client.call_tool(step.tool, step.arguments))
            except MCPError as exc:
                got, lines = "error", [f"JSON-RPC error {exc.error.code}: {exc.error.message}"]
            elapsed = (time.perf_counter() - started) * 1000
            if got == step.expect and got != "ok":
                lines[0] = "refused (intended) " + lines[0]
            elif got != step.expect:
                lines[0] = f"UNEXPECTED (expected {step.expect}) " + lines[0]
            lines[0] += f"  [{elapsed:.0f} ms]"
            table.append((f"{step.tool}: {step.label}", got == step.expect, lines))
    return table


def print_table(rows: list[tuple[str, bool, list[str]]], out: TextIO) -> None:
    width = max(len(label) for label, _, _ in rows)
    out.write(LEGEND + "\n")
    out.write(f"{'step':<{width}}  outcome\n{'-' * width}  {'-' * 60}\n")
    for label, _, lines in rows:
        out.write(f"{label:<{width}}  {lines[0]}\n")
        for more in lines[1:]:
            out.write(f"{'':<{width}}    {more}\n")
    out.flush()


def tour() -> int:
    """Every tool through the SDK client, on the session's demo cluster; 1 when a step was UNEXPECTED."""
    import anyio

    with open_session_cluster() as cluster:
        env = server_env(cluster)
        env.setdefault("MCP_LOG_LEVEL", "WARNING")
        rows = anyio.run(run_steps, env, checkout() or Path.home())
    print_table(rows, sys.stdout)
    return 0 if all(as_expected for _, as_expected, _ in rows) else 1


def main() -> int:
    return run_logged(tour)


if __name__ == "__main__":
    raise SystemExit(main())
