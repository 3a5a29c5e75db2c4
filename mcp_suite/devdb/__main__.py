"""`python -m mcp_suite.devdb serve -- <server argv>` and `python -m mcp_suite.devdb demo`.

`serve` starts the demo cluster under `.cache/devdb` (a session that finds it serving another
gets a throwaway one of its own), runs the server as a child with stdio inherited and MCP_SQL_DSN
(the reader role) plus MCP_SAFE_DATA_DIR set, and stops its cluster when the child exits. `demo`
drives the real server through the official `mcp` SDK client and prints a table of outcomes.
`destroy` removes the demo cluster (only our directory).
Development tooling: stdout belongs to the child server in `serve`; our own messages go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from mcp_suite.devdb.cluster import (
    Cluster,
    DevDbError,
    checkout,
    default_cache_dir,
    example_folder,
    open_demo_cluster,
)
from mcp_suite.runtime.audit import configure_logging, shutdown_logging

log = logging.getLogger("mcp_suite.devdb")

EX_UNAVAILABLE = 69  # the demo database could not be created, started or used (as the CLI's)
_CHILD_STOP_S = 10.0  # how long `serve` waits for the child after forwarding a signal


def _server_env(cluster: Cluster) -> dict[str, str]:
    env = dict(os.environ)
    env["MCP_SQL_DSN"] = cluster.reader_dsn
    safe = example_folder()
    if safe is not None:
        env["MCP_SAFE_DATA_DIR"] = str(safe)
    return env


@contextlib.contextmanager
def _demo_cluster() -> Iterator[Cluster]:
    """The demo cluster, running, for one session; what this session started is stopped afterwards.

    The first session starts the cluster in the cache directory. A session that finds it already
    serving another one gets a throwaway cluster of its own (seeded the same, removed at its end),
    so no session's exit ever stops the database under another. A lock beside the directory makes
    "is it running? start it" one decision when clients start two sessions at once.
    """
    started_at = time.perf_counter()
    base = default_cache_dir().absolute()
    base.parent.mkdir(parents=True, exist_ok=True)
    with _locked(base.parent / f"{base.name}.lock"):
        cluster, started_here = open_demo_cluster(base)
        if not started_here:
            cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-session-")))
    own = cluster.base != base
    log.info(
        "demo PostgreSQL %s on %s:%s (%.2f s)",
        f"of this session in {cluster.base} (the shared one serves another)" if own else "started",
        cluster.host,
        cluster.port,
        time.perf_counter() - started_at,
    )
    try:
        yield cluster
    finally:
        if own:
            cluster.destroy()
        else:
            cluster.stop()
        log.info("demo PostgreSQL stopped")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the fd is closed
        yield
    finally:
        os.close(fd)


def _child_death_signal() -> None:  # runs in the forked child before exec
    # If this process dies (even SIGKILL), the server gets SIGTERM and drains (SPEC §3.4).
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def serve(argv: Sequence[str]) -> int:
    """Run `argv` as the MCP server with the demo database; returns the child's exit status."""
    if not argv:
        log.error("usage: python -m mcp_suite.devdb serve -- <server command...>")
        return 2
    with _demo_cluster() as cluster:
        child = subprocess.Popen(  # noqa: S603  # the developer's own command line
            list(argv),
            env=_server_env(cluster),
            preexec_fn=_child_death_signal,  # only calls prctl
        )

        def forward(signum: int, _frame: FrameType | None) -> None:
            # Ctrl-C reaches the child from the terminal itself; SIGTERM/SIGHUP sent to us only
            # are passed on, so the server drains and the cluster is stopped after it.
            if signum != signal.SIGINT:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signum)

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, forward)
        try:
            status = child.wait()
        finally:
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=_CHILD_STOP_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
    return status if status >= 0 else 128 - status


# --- demo ------------------------------------------------------------------------------------

# (label, tool, arguments): the order a model would use them in (look first, then query or read).
_DISCOVERY_STEPS: list[tuple[str, str, dict[str, Any]]] = [
    ("sql_schema: what the role may read", "sql_schema", {"detail": "names"}),
    ("sql_schema: reports.releases in full", "sql_schema", {"object": "reports.releases", "detail": "full"}),
    ("sql_schema: name_like injection", "sql_schema", {"name_like": "%' OR '1'='1"}),
    (
        "explain_sql: plan of a filter",
        "explain_sql",
        {"sql": "SELECT slug FROM docs.pages WHERE section = 'guides'"},
    ),
    (
        "explain_sql: analyze",
        "explain_sql",
        {"sql": "SELECT * FROM reports.words_per_section", "analyze": True},
    ),
    ("explain_sql: a DELETE", "explain_sql", {"sql": "DELETE FROM docs.pages"}),
    ("sandbox_fs_list: the folder", "sandbox_fs_list", {"recursive": True}),
    ("sandbox_fs_list: outside the folder", "sandbox_fs_list", {"relative_path": ".."}),
    (
        "sandbox_fs_read: a listed file",
        "sandbox_fs_read",
        {"relative_path": "data/cities.csv", "max_bytes": 60},
    ),
    ("sandbox_fs_read: a directory", "sandbox_fs_read", {"relative_path": "data"}),
]

# (label, read_only_sql arguments).
_SQL_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("first five pages", {"sql": "SELECT slug, section, words FROM docs.pages ORDER BY slug LIMIT 5"}),
    (
        "pages per section",
        {"sql": "SELECT section, count(*) AS pages FROM docs.pages GROUP BY section ORDER BY 1"},
    ),
    (
        "one row of generate_series(1, 1000000)",
        {"sql": "SELECT n FROM generate_series(1, 1000000) AS n", "max_rows": 1},
    ),
    ("INSERT", {"sql": "INSERT INTO docs.pages VALUES ('page-99', 'e-1', 'guides', 1)"}),
    (
        "DELETE inside WITH",
        {"sql": "WITH d AS (DELETE FROM docs.pages RETURNING *) SELECT count(*) FROM d"},
    ),
    ("lo_create", {"sql": "SELECT lo_create(0)"}),
    ("reading docs.editors", {"sql": "SELECT * FROM docs.editors"}),
    ("pg_sleep(2)", {"sql": "SELECT pg_sleep(2)"}),
    ("two statements", {"sql": "SELECT 1; SELECT 2"}),
    (
        "set_config: read-only off",
        {"sql": "SELECT set_config('default_transaction_read_only', 'off', false)"},
    ),
    ("... then lo_create on the next call", {"sql": "SELECT lo_create(0)"}),
    ("a 300,000-character value", {"sql": "SELECT repeat('x', 300000) AS big"}),
    ("pg_notify", {"sql": "SELECT pg_notify('alerts', 'hello')"}),
    ("1,000 rows requested", {"sql": "SELECT * FROM docs.pages", "max_rows": 1000}),
]


def _cut(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _outcome(result: Any) -> str:
    if result.is_error:
        text = result.content[0].text if result.content else "{}"
        try:
            problem = json.loads(text)
        except ValueError:
            return _cut("error: " + text)
        slug = str(problem.get("type", "")).rsplit(":", 1)[-1]
        return _cut(f"{slug}: {problem.get('detail', '')}")
    data = result.structured_content or {}
    if "objects" in data:  # sql_schema
        names = ", ".join(f"{o['schema']}.{o['name']}" for o in data["objects"]) or "none"
        keys = "".join(
            f"; pk {o['primary_key']}, {len(o['foreign_keys'])} visible fk"
            for o in data["objects"]
            if "primary_key" in o
        )
        return _cut(f"ok: {names}{keys}")
    if "plan" in data:  # explain_sql
        actual = f", actual rows {data['actual_rows']:g}" if "actual_rows" in data else ""
        top = data["plan"]["Node Type"]
        return _cut(f"ok: {top}, cost {data['total_cost']}, est. rows {data['estimated_rows']:g}{actual}")
    if "entries" in data:  # sandbox_fs_list
        return _cut(f"ok: {len(data['entries'])} entries: " + ", ".join(e["name"] for e in data["entries"]))
    if "content" in data:  # sandbox_fs_read
        return _cut(f"ok: {data['size']} bytes: {data['content']!r}")
    rows = data.get("rows", [])
    first = json.dumps(rows[0]) if rows else "-"
    more = ", truncated" if data.get("truncated") else ""
    return _cut(f"ok: {data.get('row_count', len(rows))} row(s){more}; first {first}")


async def _run_demo(env: dict[str, str]) -> list[tuple[str, str]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_suite"], env=env, cwd=str(checkout() or Path.home())
    )
    table: list[tuple[str, str]] = []
    async with Client(params) as client:
        tools = await client.list_tools()
        table.append(("tools/list", "ok: " + ", ".join(t.name for t in tools.tools)))
        resources = await client.list_resources()
        uris = [str(r.uri) for r in resources.resources]
        schema_uri = next((u for u in uris if u.startswith("postgres://")), None)
        if schema_uri:
            read = await client.read_resource(schema_uri)
            schema = json.loads(getattr(read.contents[0], "text", "{}"))
            tables = [f"{t['schema']}.{t['name']}" for t in schema.get("objects", [])]
            table.append((f"resource {schema_uri}", "ok: tables " + ", ".join(tables)))
        served = {t.name for t in tools.tools}
        steps = [step for step in _DISCOVERY_STEPS if step[1] in served]
        steps += [(label, "read_only_sql", arguments) for label, arguments in _SQL_STEPS]
        for label, tool, arguments in steps:
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, arguments)
                outcome = _outcome(result)
            except MCPError as exc:
                outcome = _cut(f"JSON-RPC error {exc.error.code}: {exc.error.message}")
            elapsed = (time.perf_counter() - started) * 1000
            table.append((label, f"{outcome}  [{elapsed:.0f} ms]"))
    return table


def demo() -> int:
    import anyio

    with _demo_cluster() as cluster:
        env = _server_env(cluster)
        env.setdefault("MCP_LOG_LEVEL", "WARNING")
        rows = anyio.run(_run_demo, env)
    width = max(len(label) for label, _ in rows)
    out = sys.stdout
    out.write(f"{'step':<{width}}  outcome\n{'-' * width}  {'-' * 60}\n")
    for label, outcome in rows:
        out.write(f"{label:<{width}}  {outcome}\n")
    out.flush()
    return 0


def destroy() -> int:
    base = default_cache_dir()
    if not base.exists():
        log.info("no demo cluster to remove")
        return 0
    cluster = Cluster.open_existing(base)
    if cluster.running_elsewhere():
        log.error("the demo cluster is in use by another process; stop it first")
        return 1
    cluster.destroy()
    log.info("removed %s", base)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # JSON lines, like the server's: under `make run` both write to the client's stderr.
    configure_logging("INFO")
    try:
        return _main(argv)
    finally:
        shutdown_logging()


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_suite.devdb")
    parser.add_argument("command", choices=("serve", "demo", "destroy"))
    parser.add_argument("server", nargs=argparse.REMAINDER, help="serve: -- <server command>")
    args = parser.parse_args(argv)
    server = list(args.server)
    if server and server[0] == "--":
        server = server[1:]
    try:
        if args.command == "serve":
            return serve(server)
        if args.command == "demo":
            return demo()
        return destroy()
    except DevDbError as exc:
        log.error("%s", exc)  # noqa: TRY400  # a one-line reason for the developer, no traceback
        return EX_UNAVAILABLE


if __name__ == "__main__":
    raise SystemExit(main())
