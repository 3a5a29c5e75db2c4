"""A configuration file of two sources behind the HTTP stack: containers/smoke.sh's day-two step.

Called by containers/smoke_driver.py after containers/smoke_http.py, under the same compose project
name, with the same demo cluster. It starts the stack of compose.http.yaml again (HAProxy, the
three replicas, PgBouncer, and the test issuer), the replicas reading `MCP_CONFIG` (a sources file
mounted read-only, with its password files) instead of `MCP_SQL_DSN`:

  people   the demo database through PgBouncer (transaction pooling), with an identity map: the
           login role holds nothing; a group rule maps ann to one role, a subject rule maps bo to
           another, and a row-level security policy shows each role its own rows
  ops      the demo's second database, straight over the cluster's socket, as a login role that is
           a member of pg_write_all_data: the role audit refuses it

Then, through HAProxy's published port: /readyz stays ready on every replica (HAProxy keeps all three
in rotation) and names `source ops: refused`; ann and bo each read their role's rows from `people`;
a caller no rule maps is refused; a call to `ops` gets the in-band `role-refused` problem naming
the source. The stack is torn down at the end, even on failure.
"""

# A test driver: it runs the container engine by design.
# ruff: noqa: S603

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import smoke_http  # containers/smoke_http.py, beside this file
from smoke_http import Answer, Checks, Database, engine_out, modern

SERVICES = ("mcp1", "mcp2", "mcp3")
LOGIN = "mcp_smoke_login"
RED = "mcp_smoke_red"
BLUE = "mcp_smoke_blue"
OPS_LOGIN = "mcp_smoke_ops"
ANN = "smoke-sources-ann"  # in the group `red-team`: a group rule maps her to RED
BO = "smoke-sources-bo"  # no group: a subject rule maps him to BLUE
NOBODY = "smoke-sources-eve"  # no rule maps her, and there is no default_role
GROUP = "red-team"
NOTES_SQL = "SELECT reader, body FROM mcp_smoke.notes ORDER BY body"
NOTES = ((RED, "red: first"), (RED, "red: second"), (BLUE, "blue: only"))
CALLS_EACH = 4  # per person, so that round-robin takes each to more than one replica
SECRETS_IN = "/run/secrets"  # where the replicas find the file and its passwords

SETUP_DEMO = (
    "CREATE ROLE {login} LOGIN NOINHERIT PASSWORD {password}",
    "ALTER ROLE {login} SET temp_file_limit = '64MB'",
    "GRANT CONNECT ON DATABASE mcp_demo TO {login}",
    "CREATE SCHEMA mcp_smoke",
    "CREATE TABLE mcp_smoke.notes (reader name NOT NULL, body text NOT NULL)",
    "ALTER TABLE mcp_smoke.notes ENABLE ROW LEVEL SECURITY",
    # Each mapped role sees its own rows: current_user is the role the call was switched to.
    "CREATE POLICY own_rows ON mcp_smoke.notes FOR SELECT USING (reader = current_user)",
)
SETUP_OPS = (
    "CREATE ROLE {login} LOGIN PASSWORD {password}",
    "GRANT CONNECT ON DATABASE mcp_ops TO {login}",
    "GRANT USAGE ON SCHEMA ops TO {login}",
    "GRANT SELECT ON ALL TABLES IN SCHEMA ops TO {login}",
    # What the audit must refuse: a member of a role that writes every table.
    "GRANT pg_write_all_data TO {login}",
)


def _prepare_roles(work: Path, people_password: str, ops_password: str) -> None:
    """The two sources' roles and data in the smoke's private demo cluster (dropped with it)."""
    import psycopg  # the project's venv
    from psycopg import sql

    from mcp_suite.demo.cluster import Cluster
    from mcp_suite.demo.seed import ADMIN_USER, OPS_DB

    cluster = Cluster.open_existing(work / "devdb")
    with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
        names = {"login": sql.Identifier(LOGIN), "password": sql.Literal(people_password)}
        for statement in SETUP_DEMO:
            conn.execute(sql.SQL(statement).format(**names))
        conn.cursor().executemany("INSERT INTO mcp_smoke.notes VALUES (%s, %s)", NOTES)
        for role in (RED, BLUE):
            ident = sql.Identifier(role)
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(ident))
            conn.execute(sql.SQL("GRANT {} TO {}").format(ident, sql.Identifier(LOGIN)))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA mcp_smoke TO {}").format(ident))
            conn.execute(sql.SQL("GRANT SELECT ON mcp_smoke.notes TO {}").format(ident))
    with psycopg.connect(cluster.dsn(ADMIN_USER, cluster.admin_password, OPS_DB), autocommit=True) as conn:
        names = {"login": sql.Identifier(OPS_LOGIN), "password": sql.Literal(ops_password)}
        for statement in SETUP_OPS:
            conn.execute(sql.SQL(statement).format(**names))


def _sources_file(people_password_file: str, ops_password_file: str) -> str:
    return f"""[[sources]]
name = "people"
description = "Notes, each mapped role its own (smoke)"
dsn = "host=pgbouncer port=6432 dbname=mcp_demo user={LOGIN}"
password_file = "{people_password_file}"
pooler = "transaction"

[sources.identity]

[[sources.identity.rules]]
group = "{GROUP}"
role = "{RED}"

[[sources.identity.rules]]
subject = "{BO}"
role = "{BLUE}"

[[sources]]
name = "ops"
description = "Operations: services and deploys (its role is refused by the audit)"
dsn = "host=/pgsock port=5432 dbname=mcp_ops user={OPS_LOGIN}"
password_file = "{ops_password_file}"
"""


def _override(folder: Path, secret_dir: Path, socket_dir: Path) -> Path:
    """The replicas read the sources file instead of MCP_SQL_DSN (an empty variable is unset), and
    reach the second database over the cluster's socket."""
    mounts = "".join(
        f"      - {secret_dir / name}:{SECRETS_IN}/{name}:ro\n"
        for name in ("sources.toml", "people-password", "ops-password")
    )
    text = "services:\n" + "".join(
        f"""  {service}:
    environment:
      MCP_SQL_DSN: ""
      MCP_SQL_POOLER: ""
      MCP_CONFIG: {SECRETS_IN}/sources.toml
    volumes:
{mounts}      - {socket_dir}:/pgsock:ro
"""
        for service in SERVICES
    )
    path = folder / "compose.http.sources.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _readyz_inside(engine: str, haproxy: str, address: str) -> tuple[str, str]:
    """A replica's /readyz (status, body) as HAProxy's health check asks it, from inside HAProxy."""
    ask = (
        f"import http.client as h; c = h.HTTPConnection({address!r}, 8000, timeout=2); "
        "c.request('GET', '/readyz', headers={'Host': 'mcp-health'}); r = c.getresponse(); "
        "print(r.status); print(r.read().decode())"
    )
    shown = engine_out(engine, "exec", haproxy, "python3", "-c", ask, timeout=30)
    status, _, body = shown.stdout.partition("\n")
    return status.strip(), body.strip()


def _content(answer: Answer) -> tuple[bool, dict[str, Any]]:
    """A tools/call answer's isError and its first text content read as JSON (a problem)."""
    result = answer.body.get("result", {}) if isinstance(answer.body, dict) else {}
    try:
        problem = json.loads(result["content"][0]["text"])
    except (KeyError, IndexError, ValueError, TypeError):
        problem = {}
    return bool(result.get("isError")), problem if isinstance(problem, dict) else {}


def _wait_started(engine: str, containers: dict[str, str], deadline_s: float) -> dict[str, str]:
    """service -> its start-up line about the sources, once each replica serves over HTTP."""
    deadline = time.monotonic() + deadline_s
    said: dict[str, str] = {}
    while len(said) < len(SERVICES) and time.monotonic() < deadline:
        for service in SERVICES:
            logs = engine_out(engine, "logs", containers[service])
            text = logs.stdout + logs.stderr
            if "serving over HTTP" in text:
                said[service] = next(
                    (line for line in text.splitlines() if "sources at start-up" in line), "(no line)"
                )
        time.sleep(0.5)
    return said


def run_sources_stack(
    engine: str,
    compose: Sequence[str],
    image: str,
    data: Path,
    work: Path,
    database: Database,
    project: str,
    report: Checks,
) -> None:
    """Bring the stack up with the two-source file, drive it through HAProxy, tear it down."""
    started = time.monotonic()
    folder = work / "sources"
    folder.mkdir(mode=0o711)
    people_password, ops_password = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
    try:
        issuer = smoke_http._issuer(folder)  # the HTTP part's own helper, shared
        _prepare_roles(work, people_password, ops_password)
    except Exception as exc:  # noqa: BLE001  # reported as a failed check, the smoke goes on
        report.check(False, "sources: the issuer and the two sources' roles are set up", repr(exc))
        return
    secret_dir = folder / "secrets"
    secret_dir.mkdir(mode=0o711)
    write = smoke_http._write_secret
    write(secret_dir / "people-password", people_password + "\n")
    write(secret_dir / "ops-password", ops_password + "\n")
    write(
        secret_dir / "sources.toml",
        _sources_file(f"{SECRETS_IN}/people-password", f"{SECRETS_IN}/ops-password"),
    )
    userlist = write(secret_dir / "userlist", f'"{LOGIN}" "{people_password}"\n')
    pgpass = write(secret_dir / "pgpass", f"pgbouncer:6432:{database.dbname}:{LOGIN}:{people_password}\n")
    port = smoke_http.free_port()
    base = f"http://127.0.0.1:{port}"
    resource = f"{base}/mcp"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_HTTP_", "MCP_STACK_", "MCP_SQL_"))}
    env.pop("MCP_CONFIG", None)
    env.update(
        MCP_SUITE_IMAGE=image,
        MCP_SAFE_DATA_HOST_DIR=str(data),
        MCP_STACK_PUBLISH=f"127.0.0.1:{port}",
        MCP_STACK_PG_HOST="/pgsock",
        MCP_STACK_PG_PORT="5432",
        MCP_STACK_PG_DBNAME=database.dbname,
        MCP_STACK_PG_USER=LOGIN,
        MCP_STACK_PG_SSLMODE="disable",
        MCP_STACK_POOL_SIZE="4",
        MCP_STACK_USERLIST=str(userlist),
        MCP_STACK_PGPASS=str(pgpass),
        MCP_HTTP_RESOURCE_URI=resource,
        MCP_HTTP_ISSUER=smoke_http.ISSUER_URL,
        MCP_HTTP_JWKS_URL=f"{smoke_http.ISSUER_URL}/jwks.json",
    )
    files = [
        "-f",
        str(smoke_http.COMPOSE_FILE),
        "-f",
        str(smoke_http._override(folder, image, database)),  # issuer, PgBouncer's socket
        "-f",
        str(_override(folder, secret_dir, database.socket_dir)),
    ]
    try:
        up = subprocess.run(
            [*compose, "-p", project, *files, "up", "-d", "--no-build"],
            env=env,
            cwd=str(smoke_http.ROOT),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if not report.check(
            up.returncode == 0, "sources: podman-compose up -d (two sources)", up.stderr[-1500:]
        ):
            return
        containers = smoke_http.project_containers(engine, project)
        ready = smoke_http.wait_ready(base, smoke_http.READY_TIMEOUT_S)
        said = _wait_started(engine, containers, smoke_http.READY_TIMEOUT_S)
        if not report.check(
            ready is not None and ready.status == 200 and len(said) == len(SERVICES),
            "sources: the three replicas serve over HTTP behind HAProxy with one source refused",
            (ready, sorted(said)),
        ):
            smoke_http._dump_logs(engine, containers, report)
            return
        if not report.check(
            all("people serving" in line and "ops refused" in line for line in said.values()),
            "sources: each replica's start-up line: people serving, ops refused by the role audit",
            said,
        ):
            logs = engine_out(engine, "logs", "--tail", "20", containers["mcp1"])
            report.check(False, "sources: mcp1's log tail", (logs.stdout + logs.stderr)[-3000:])
        # HAProxy checks every second and needs two passes (`rise 2`); then all three stay in.
        time.sleep(2.5)
        _check_ready(engine, containers, base, report)
        report.figure(f"sources: up to ready through HAProxy: {time.monotonic() - started:.1f} s")
        _check_calls(resource, issuer, report)
        _check_audit(engine, containers, report)
        # Still in rotation after the calls: the refused source takes no replica out.
        states = smoke_http._server_states(engine, containers["haproxy"])
        report.check(
            sorted(service for service, (_, state) in states.items() if state == "2") == list(SERVICES),
            "sources: after the calls HAProxy still routes to all three replicas",
            states,
        )
    finally:
        smoke_http.tear_down(engine, compose, files, project, env)
        left = engine_out(engine, "ps", "-aq", "--filter", f"label=io.podman.compose.project={project}")
        report.check(not left.stdout.split(), "sources: torn down (no container left)", left.stdout)
        report.figure(f"sources: {time.monotonic() - started:.1f} s from set-up to torn down")


def _check_ready(engine: str, containers: dict[str, str], base: str, report: Checks) -> None:
    haproxy = containers["haproxy"]
    for service in SERVICES:
        address = smoke_http._mcp_address(engine, containers[service])
        status, body = _readyz_inside(engine, haproxy, address)
        report.check(
            status == "200" and body.splitlines() == ["ok", "source people: serving", "source ops: refused"],
            f"sources: {service}'s /readyz (HAProxy's check): 200, `source ops: refused`",
            (status, body),
        )
    states = smoke_http._server_states(engine, haproxy)
    report.check(
        sorted(service for service, (_, state) in states.items() if state == "2") == list(SERVICES),
        "sources: HAProxy keeps all three replicas in rotation",
        states,
    )
    seen = [smoke_http.get(f"{base}/readyz") for _ in SERVICES]
    report.check(
        all(a.status == 200 and "source ops: refused" in str(a.body) for a in seen),
        "sources: /readyz through HAProxy's published port: 200 and names the refused source",
        [(a.status, a.body) for a in seen],
    )


def _check_audit(engine: str, containers: dict[str, str], report: Checks) -> None:
    """Each replica's statement records: who ran what, as which role, on which source."""
    ran: dict[str, set[tuple[str, str, str]]] = {}
    for service in SERVICES:
        logs = engine_out(engine, "logs", containers[service])
        ran[service] = {
            (str(r.get("sub")), str(r.get("source")), str(r.get("role")))
            for r in smoke_http.records_of(logs.stdout + logs.stderr)
            if r.get("event") == "statement" and r.get("sub") in (ANN, BO)
        }
    every = set().union(*ran.values())
    report.check(
        {(ANN, "people", RED), (BO, "people", BLUE)} <= every
        and all(role in (RED, BLUE) for _, source, role in every if source == "people"),
        "sources: the statement audit records name each person, `people` and their mapped role",
        sorted(every),
    )
    report.check(
        sum(1 for seen in ran.values() if any(source == "people" for _, source, _ in seen)) >= 2,
        "sources: the mapped calls were served by more than one replica",
        {service: len(seen) for service, seen in ran.items()},
    )


def _call(url: str, token: str, source: str, request_id: int) -> Answer:
    arguments = {"source": source, "sql": NOTES_SQL if source == "people" else "SELECT 1 AS one"}
    return modern(
        url, token, "tools/call", {"name": "read_only_sql", "arguments": arguments}, request_id=request_id
    )


def _check_calls(url: str, issuer: Any, report: Checks) -> None:
    ann = issuer.token(url, sub=ANN, scope="sql:read", expires_in=600, groups=[GROUP])
    bo = issuer.token(url, sub=BO, scope="sql:read", expires_in=600)
    eve = issuer.token(url, sub=NOBODY, scope="sql:read", expires_in=600, groups=["elsewhere"])

    listed = modern(url, ann, "tools/list", {})
    tools = listed.body.get("result", {}).get("tools", []) if isinstance(listed.body, dict) else []
    schema: dict[str, Any] = next(
        (t.get("inputSchema", {}) for t in tools if t.get("name") == "read_only_sql"), {}
    )
    offered = schema.get("properties", {}).get("source", {}).get("enum")
    report.check(
        offered == ["people", "ops"],
        "sources: read_only_sql takes `source`, one of people and ops",
        offered,
    )
    expected = {
        ANN: [[RED, "red: first"], [RED, "red: second"]],
        BO: [[BLUE, "blue: only"]],
    }
    for who, token in ((ANN, ann), (BO, bo)):
        rows = [smoke_http.rows_of(_call(url, token, "people", 100 + n)) for n in range(CALLS_EACH)]
        report.check(
            all(r == expected[who] for r in rows),
            f"sources: {who} reads `people` as their mapped role: that role's rows only ({CALLS_EACH} calls)",
            rows,
        )
    refused, problem = _content(_call(url, eve, "people", 200))
    report.check(
        refused and problem.get("type", "").endswith("access-denied"),
        "sources: a caller no rule maps gets access-denied, in-band",
        problem,
    )
    refused, problem = _content(_call(url, ann, "ops", 300))
    report.check(
        refused
        and problem.get("type", "").endswith("role-refused")
        and (problem.get("metadata") or {}).get("source") == "ops",
        "sources: a call to `ops` gets the in-band role-refused problem naming the source",
        problem,
    )
    # The refusal is the source's alone: the next call to `people` is answered.
    after = smoke_http.rows_of(_call(url, bo, "people", 301))
    report.check(after == expected[BO], "sources: ... and `people` still answers after it", after)
