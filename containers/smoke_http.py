"""The HTTP half of containers/smoke.sh: the compose stack of containers/compose.http.yaml and the HTTP
mode of containers/run.sh, started for real and driven through their published ports.

Called by containers/smoke_driver.py with the demo PostgreSQL behind its Unix-socket relay. What it
starts, all with podman-compose under one project name, and tears down at the end (even on failure):

  issuer      a test issuer's key set (tests/support/issuer.py), served by the server's image
              (`python -m http.server`, read-only) as http://issuer:8080 on the stack's egress network
  pgbouncer   the stack's PgBouncer, reaching the demo cluster through the relay's socket folder
  mcp1..3     the replicas, haproxy: as shipped, only HAProxy's port published (127.0.0.1)

Then: initialize, tools/list and read_only_sql through HAProxy with a bearer token; a request
without one gets 401 with `WWW-Authenticate`; a narrower token sees and calls less; every call's
audit record names the token's subject, the calls reached more than one replica, and no log line
holds the token; every container of the stack runs read-only, without capabilities, as 10001, with
a bounded restart policy, and only one port is published. Then mcp2 is removed and created again:
HAProxy must route to its new address within a bound while calls through it are all answered, and
the new mcp2 must run some tagged calls. Then `containers/run.sh http` on the stack's egress
network, the same way. Standard library, plus the project's venv for the tokens (joserfc).
"""

# A test driver: it runs the container engine by design.
# ruff: noqa: S603

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COMPOSE_FILE = HERE / "compose.http.yaml"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
SUBJECT = "smoke-http-alice"
NARROW_SUBJECT = "smoke-http-bob"
# Every scope and every tool the stack serves (tests/unit/tooling/test_tool_convention.py holds both to the
# tools the server serves and their families' scopes).
ALL_SCOPES = "sql:read files:read metrics:read"
ALL_TOOLS = sorted(
    ["read_only_sql", "sql_schema", "explain_sql", "sandbox_fs_read", "sandbox_fs_list", "system_metrics"]
)
TAGGED_CALLS = 9
READY_TIMEOUT_S = 90.0
SERVICE_ACCOUNT = 10001
ISSUER_URL = "http://issuer:8080"  # the issuer service's name on the stack's egress network
ZERO_CAPS = "0" * 16


class Checks(Protocol):
    def check(self, ok: object, what: str, detail: object = "") -> bool: ...

    def figure(self, text: str) -> None: ...


@dataclass(frozen=True)
class Database:
    """The demo cluster as the stack reaches it: a socket folder on the host, and who connects."""

    socket_dir: Path
    dbname: str
    user: str
    password: str


# --- HTTP through the published port ---------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


def post(url: str, message: dict[str, Any], headers: dict[str, str]) -> Answer:
    data = json.dumps(message).encode()
    request = urllib.request.Request(url, data=data, method="POST")  # noqa: S310  # http://127.0.0.1 only
    for name, value in {"Content-Type": "application/json", "Accept": "application/json", **headers}.items():
        request.add_header(name, value)
    return _send(request)


def get(url: str) -> Answer:
    return _send(urllib.request.Request(url, method="GET"))  # noqa: S310  # http://127.0.0.1 only


def _send(request: urllib.request.Request) -> Answer:
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310  # the scheme is http
            status, headers, raw = reply.status, dict(reply.headers.items()), reply.read()
    except urllib.error.HTTPError as exc:
        status, headers, raw = exc.code, dict(exc.headers.items()), exc.read()
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode("utf-8", "replace")
    return Answer(status, {k.lower(): v for k, v in headers.items()}, body)


def modern(
    url: str, token: str | None, method: str, params: dict[str, Any], *, request_id: int = 1
) -> Answer:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = str(params["name"])
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
    return post(url, message, headers)


def tool_names(answer: Answer) -> list[str]:
    tools = (answer.body or {}).get("result", {}).get("tools", []) if isinstance(answer.body, dict) else []
    return sorted(str(tool.get("name")) for tool in tools)


def rows_of(answer: Answer) -> Any:
    if not isinstance(answer.body, dict):
        return None
    return answer.body.get("result", {}).get("structuredContent", {}).get("rows")


def wait_ready(base: str, deadline_s: float) -> Answer | None:
    """The resource metadata document through the published port, once it answers 200."""
    deadline = time.monotonic() + deadline_s
    last: Answer | None = None
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            last = get(f"{base}/.well-known/oauth-protected-resource")
            if last.status == 200:
                return last
        time.sleep(0.5)
    return last


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the engine's view ----------------------------------------------------------------------------


def engine_out(engine: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([engine, *argv], capture_output=True, text=True, timeout=timeout, check=False)


def project_containers(engine: str, project: str) -> dict[str, str]:
    """service name -> container name, for the project's containers (running or not)."""
    listed = engine_out(
        engine,
        "ps",
        "-a",
        "--filter",
        f"label=io.podman.compose.project={project}",
        "--format",
        '{{.Names}} {{index .Labels "com.docker.compose.service"}}',
    )
    found: dict[str, str] = {}
    for line in listed.stdout.splitlines():
        name, _, service = line.partition(" ")
        if service:
            found[service] = name
    return found


def records_of(log_text: str) -> list[dict[str, Any]]:
    records = []
    for line in log_text.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                records.append(json.loads(line))
    return records


def check_hardened(engine: str, label: str, container: str, report: Checks) -> list[tuple[str, str]]:
    """The profile as the engine recorded it and as the container's PID 1 sees it; returns its
    published ports as (container port, host address) pairs."""
    inspected = engine_out(engine, "inspect", container)
    if not report.check(inspected.returncode == 0, f"{label}: inspect", inspected.stderr):
        return []
    info = json.loads(inspected.stdout)[0]
    host = info.get("HostConfig", {})
    config = info.get("Config", {})
    report.check(host.get("ReadonlyRootfs") is True, f"{label}: read-only root", host.get("ReadonlyRootfs"))
    report.check(
        not info.get("EffectiveCaps") and not host.get("CapAdd"),
        f"{label}: no capabilities",
        (info.get("EffectiveCaps"), host.get("CapAdd")),
    )
    report.check(
        any("no-new-privileges" in str(opt) for opt in host.get("SecurityOpt") or []),
        f"{label}: no-new-privileges",
        host.get("SecurityOpt"),
    )
    report.check(
        config.get("User") == f"{SERVICE_ACCOUNT}:{SERVICE_ACCOUNT}",
        f"{label}: user 10001",
        config.get("User"),
    )
    report.check(host.get("PidsLimit") == 64, f"{label}: pids limit 64", host.get("PidsLimit"))
    report.check(
        host.get("Memory") == 256 * 1024 * 1024, f"{label}: memory limit 256 MiB", host.get("Memory")
    )
    seen = engine_out(engine, "exec", container, "cat", "/proc/1/status", "/proc/1/mounts")
    status = dict(line.split(":", 1) for line in seen.stdout.splitlines() if ":" in line and "\t" in line)
    uid = status.get("Uid", "").split()
    report.check(
        uid[:1] == [str(SERVICE_ACCOUNT)] and len(set(uid)) == 1,
        f"{label}: PID 1 runs as 10001",
        status.get("Uid", seen.stderr),
    )
    report.check(
        status.get("CapEff", "").strip() == ZERO_CAPS and status.get("CapPrm", "").strip() == ZERO_CAPS,
        f"{label}: PID 1 holds no capability",
        (status.get("CapEff"), status.get("CapPrm")),
    )
    report.check(status.get("NoNewPrivs", "").strip() == "1", f"{label}: PID 1 has no_new_privs")
    root = [line.split() for line in seen.stdout.splitlines() if line.split()[1:2] == ["/"]]
    report.check(bool(root) and "ro" in root[-1][3].split(","), f"{label}: / is mounted read-only", root[-1:])
    published = []
    for port, bindings in (host.get("PortBindings") or {}).items():
        for binding in bindings or []:
            published.append((port, f"{binding.get('HostIp') or '0.0.0.0'}:{binding.get('HostPort')}"))  # noqa: S104  # reading a binding, not binding
    return published


# --- the stack ------------------------------------------------------------------------------------


def _write_secret(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    os.chown(path, SERVICE_ACCOUNT, SERVICE_ACCOUNT)
    path.chmod(0o600)
    return path


def _issuer(work: Path) -> Any:
    """A test issuer named http://issuer:8080 whose key set is written under `work`/jwks."""
    sys.path.insert(0, str(ROOT))
    from tests.support.issuer import TestIssuer  # the project's venv (joserfc)

    issuer = TestIssuer(0, issuer=ISSUER_URL)
    folder = work / "jwks"
    folder.mkdir(mode=0o755)
    (folder / "jwks.json").write_bytes(issuer.jwks())
    (folder / "jwks.json").chmod(0o644)
    return issuer


def _override(work: Path, image: str, database: Database) -> Path:
    """The test's additions: the issuer service, and PgBouncer's way to the demo cluster's socket."""
    text = f"""services:
  pgbouncer:
    volumes:
      - {database.socket_dir}:/pgsock:ro
  issuer:
    image: {image}
    entrypoint: ["/opt/mcp-suite/bin/python", "-m", "http.server", "--directory", "/jwks", "8080"]
    user: "{SERVICE_ACCOUNT}:{SERVICE_ACCOUNT}"
    read_only: true
    cap_drop:
      - ALL
    security_opt:
      - no-new-privileges:true
    networks:
      - egress
    volumes:
      - {work / "jwks"}:/jwks:ro
"""
    path = work / "compose.http.smoke.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def tear_down(
    engine: str, compose: Sequence[str], files: Sequence[str], project: str, env: dict[str, str]
) -> None:
    """podman-compose down, then whatever is left of the project by its label (a failed `up`)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(
            [*compose, "-p", project, *files, "down", "-t", "10"],
            env=env,
            cwd=str(ROOT),
            capture_output=True,
            timeout=120,
            check=False,
        )
    left = engine_out(engine, "ps", "-aq", "--filter", f"label=io.podman.compose.project={project}")
    if left.stdout.split():
        engine_out(engine, "rm", "-f", "-t", "5", *left.stdout.split(), timeout=120)
    nets = engine_out(engine, "network", "ls", "-q", "--filter", f"label=io.podman.compose.project={project}")
    if nets.stdout.split():
        engine_out(engine, "network", "rm", "-f", *nets.stdout.split())


def run_stack(
    engine: str,
    compose: Sequence[str],
    image: str,
    data: Path,
    work: Path,
    database: Database,
    project: str,
    report: Checks,
) -> None:
    """Bring the stack up, drive it, check it, tear it down."""
    started = time.monotonic()
    try:
        issuer = _issuer(work)
    except ImportError as exc:
        report.check(False, "http: the test issuer needs the project's venv (make venv)", exc)
        return
    secrets = work / "secrets"
    secrets.mkdir(mode=0o711)
    userlist = _write_secret(secrets / "userlist", f'"{database.user}" "{database.password}"\n')
    pgpass = _write_secret(
        secrets / "pgpass", f"pgbouncer:6432:{database.dbname}:{database.user}:{database.password}\n"
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    resource = f"{base}/mcp"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_HTTP_", "MCP_STACK_", "MCP_SQL_"))}
    env.update(
        MCP_SUITE_IMAGE=image,
        MCP_SAFE_DATA_HOST_DIR=str(data),
        MCP_STACK_PUBLISH=f"127.0.0.1:{port}",
        MCP_STACK_PG_HOST="/pgsock",
        MCP_STACK_PG_PORT="5432",
        MCP_STACK_PG_DBNAME=database.dbname,
        MCP_STACK_PG_USER=database.user,
        MCP_STACK_PG_SSLMODE="disable",
        MCP_STACK_POOL_SIZE="4",
        MCP_STACK_USERLIST=str(userlist),
        MCP_STACK_PGPASS=str(pgpass),
        MCP_HTTP_RESOURCE_URI=resource,
        MCP_HTTP_ISSUER=ISSUER_URL,
        MCP_HTTP_JWKS_URL=f"{ISSUER_URL}/jwks.json",
    )
    files = ["-f", str(COMPOSE_FILE), "-f", str(_override(work, image, database))]
    try:
        up = subprocess.run(
            [*compose, "-p", project, *files, "up", "-d", "--no-build"],
            env=env,
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if not report.check(up.returncode == 0, "http stack: podman-compose up -d", up.stderr[-1500:]):
            return
        containers = project_containers(engine, project)
        expected = {"haproxy", "mcp1", "mcp2", "mcp3", "pgbouncer", "issuer"}
        report.check(set(containers) == expected, "http stack: six containers", sorted(containers))
        ready = wait_ready(base, READY_TIMEOUT_S)
        if not report.check(
            ready is not None and ready.status == 200,
            "http stack: HAProxy's published port answers the resource metadata",
            ready,
        ):
            _dump_logs(engine, containers, report)
            return
        report.check(
            isinstance(ready.body, dict) and ready.body.get("resource") == resource,
            "http stack: the metadata names the public resource URI",
            ready.body,
        )
        _wait_replicas_serving(engine, containers, report)
        report.figure(f"http stack: up to ready through HAProxy: {time.monotonic() - started:.1f} s")
        token = issuer.token(resource, sub=SUBJECT, scope=ALL_SCOPES, expires_in=600)
        _drive(resource, token, issuer, report)
        _audit(engine, containers, token, report)
        published: list[tuple[str, str]] = []
        for service, container in sorted(containers.items()):
            if service == "issuer":
                continue  # the test's own helper, not part of the shipped stack
            for port_name, address in check_hardened(engine, f"http stack: {service}", container, report):
                published.append((service, f"{port_name} -> {address}"))
            policy = engine_out(
                engine,
                "inspect",
                "--format",
                "{{.HostConfig.RestartPolicy.Name}}:{{.HostConfig.RestartPolicy.MaximumRetryCount}}",
                container,
            )
            report.check(
                policy.stdout.strip() == "on-failure:5",
                f"http stack: {service}: podman restarts it on failure, 5 times at most",
                policy.stdout.strip() or policy.stderr,
            )
        report.check(
            published == [("haproxy", f"8080/tcp -> 127.0.0.1:{port}")],
            "http stack: one port published, HAProxy's, on 127.0.0.1",
            published,
        )
        _recreate_replica(engine, (*compose, "-p", project, *files), env, containers, resource, token, report)
        run_sh_http(engine, image, data, work, project, database, issuer, report)
    finally:
        tear_down(engine, compose, files, project, env)
        left = engine_out(engine, "ps", "-aq", "--filter", f"label=io.podman.compose.project={project}")
        report.check(not left.stdout.split(), "http stack: torn down (no container left)", left.stdout)
        shutil.rmtree(secrets, ignore_errors=True)
        report.figure(f"http stack: {time.monotonic() - started:.1f} s from up to torn down")


def _wait_replicas_serving(engine: str, containers: dict[str, str], report: Checks) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = {"mcp1", "mcp2", "mcp3"}
    while pending and time.monotonic() < deadline:
        for service in sorted(pending):
            logs = engine_out(engine, "logs", containers[service])
            if "serving over HTTP" in logs.stdout + logs.stderr:
                pending.discard(service)
        if pending:
            time.sleep(0.5)
    report.check(not pending, "http stack: the three replicas are serving", sorted(pending))
    # HAProxy checks each server every second and needs two passes (`rise 2`) after a failure.
    time.sleep(2.5)


def _dump_logs(engine: str, containers: dict[str, str], report: Checks) -> None:
    for service, container in sorted(containers.items()):
        logs = engine_out(engine, "logs", "--tail", "8", container)
        report.check(False, f"http stack: {service} log tail", (logs.stdout + logs.stderr)[-800:])


def _drive(url: str, token: str, issuer: Any, report: Checks) -> None:
    # No token: 401 with the challenge that points at the metadata.
    refused = modern(url, None, "tools/list", {})
    challenge = refused.headers.get("www-authenticate", "")
    report.check(
        refused.status == 401 and challenge.startswith("Bearer ") and "resource_metadata=" in challenge,
        "http stack: no token: 401 with WWW-Authenticate: Bearer resource_metadata=...",
        (refused.status, challenge),
    )
    forged = modern(url, token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"), "tools/list", {})
    report.check(
        forged.status == 401 and "invalid_token" in forged.headers.get("www-authenticate", ""),
        "http stack: a token with a broken signature: 401 invalid_token",
        (forged.status, forged.headers.get("www-authenticate")),
    )

    # The 2025-11-25 handshake, then a call in that session (HAProxy keeps it on its replica).
    hello = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "mcp-suite-smoke", "version": "1"},
            },
        },
        {"Authorization": f"Bearer {token}"},
    )
    result = hello.body.get("result", {}) if isinstance(hello.body, dict) else {}
    session = hello.headers.get("mcp-session-id", "")
    report.check(
        hello.status == 200
        and result.get("serverInfo", {}).get("name") == "mcp-suite"
        and result.get("protocolVersion") == LEGACY
        and bool(session),
        "http stack: initialize (2025-11-25) answered with a session id",
        (hello.status, hello.body),
    )
    legacy = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, legacy)
    listed = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, legacy)
    report.check(
        tool_names(listed) == ALL_TOOLS,
        "http stack: tools/list in the session: every tool of the three scopes",
        (listed.status, tool_names(listed)),
    )

    # The 2026-07-28 era: stateless requests, round-robin over the replicas.
    listed = modern(url, token, "tools/list", {})
    report.check(
        listed.status == 200 and tool_names(listed) == ALL_TOOLS,
        "http stack: tools/list (2026-07-28)",
        (listed.status, tool_names(listed)),
    )
    pages = modern(
        url,
        token,
        "tools/call",
        {"name": "read_only_sql", "arguments": {"sql": "SELECT count(*) AS n FROM docs.pages"}},
    )
    report.check(
        pages.status == 200 and rows_of(pages) == [[30]],
        "http stack: read_only_sql through HAProxy and PgBouncer reads the demo data",
        (pages.status, pages.body),
    )
    answered = 0
    for n in range(TAGGED_CALLS):
        sql = f"SELECT 'smoke-http-{n}' AS tag, count(*) AS pages FROM docs.pages"  # noqa: S608  # n is ours
        reply = modern(
            url, token, "tools/call", {"name": "read_only_sql", "arguments": {"sql": sql}}, request_id=10 + n
        )
        answered += reply.status == 200 and rows_of(reply) == [[f"smoke-http-{n}", 30]]
    report.check(
        answered == TAGGED_CALLS, f"http stack: {TAGGED_CALLS} tagged read_only_sql calls answered", answered
    )

    # A narrower token: it sees only its group and is refused the others with 403.
    narrow = issuer.token(url, sub=NARROW_SUBJECT, scope="metrics:read", expires_in=600)
    seen = modern(url, narrow, "tools/list", {})
    report.check(
        tool_names(seen) == ["system_metrics"],
        "http stack: a metrics:read token lists system_metrics only",
        tool_names(seen),
    )
    denied = modern(url, narrow, "tools/call", {"name": "read_only_sql", "arguments": {"sql": "SELECT 1"}})
    report.check(
        denied.status == 403 and 'scope="sql:read"' in denied.headers.get("www-authenticate", ""),
        "http stack: ... and gets 403 insufficient_scope for read_only_sql",
        (denied.status, denied.headers.get("www-authenticate")),
    )


def _audit(engine: str, containers: dict[str, str], token: str, report: Checks) -> None:
    per_replica: dict[str, set[str]] = {}
    leaked = []
    for service in ("mcp1", "mcp2", "mcp3"):
        logs = engine_out(engine, "logs", containers[service])
        text = logs.stdout + logs.stderr
        if token in text:
            leaked.append(service)
        tags = set()
        for record in records_of(text):
            if (
                record.get("event") == "request"
                and record.get("method") == "tools/call"
                and record.get("sub") == SUBJECT
            ):
                excerpt = str(record.get("args_excerpt", ""))
                tags.update(f"smoke-http-{n}" for n in range(TAGGED_CALLS) if f"'smoke-http-{n}'" in excerpt)
        per_replica[service] = tags
    every = set().union(*per_replica.values())
    report.check(
        every == {f"smoke-http-{n}" for n in range(TAGGED_CALLS)},
        f"http stack: each tagged call has an audit record naming the subject {SUBJECT!r}",
        sorted(every),
    )
    serving = sorted(service for service, tags in per_replica.items() if tags)
    report.check(len(serving) >= 2, "http stack: the calls reached more than one replica", per_replica)
    report.figure(
        "http stack: tagged calls per replica: "
        + ", ".join(f"{service} {len(tags)}" for service, tags in sorted(per_replica.items()))
    )
    report.check(not leaked, "http stack: no replica's log holds the token", leaked)


# --- a replica re-created ------------------------------------------------------------------------

RECREATED = "mcp2"
BACKEND = "mcp_replicas"  # the template's backend
RECREATED_CALLS = 6
# HAProxy asks its nameservers every second and needs two health checks (`rise 2`, 1 s apart).
ROUTED_AGAIN_S = 20.0
# A replica re-created within two health checks (`fall 2`) is never marked down: HAProxy shows it
# running at its new address before the new process listens, and a request sent there then fails
# to connect and goes to another replica (`retry-on conn-failure`). So the state is read only once
# the new replica answers, and after the checks that were under way then (`inter 1s`, connect 2 s).
CHECKS_SETTLE_S = 2.5


def _mcp_address(engine: str, container: str) -> str:
    """The container's address on the stack's internal network (`<project>_mcp`)."""
    inspected = engine_out(engine, "inspect", "--format", "{{json .NetworkSettings.Networks}}", container)
    with contextlib.suppress(ValueError, AttributeError):
        for network, settings in json.loads(inspected.stdout).items():
            if network.endswith("_mcp"):
                return str(settings.get("IPAddress", ""))
    return ""


def _server_states(engine: str, haproxy: str) -> dict[str, tuple[str, str]]:
    """server name -> (address, operational state) from the runtime API's `show servers state`
    (state 2 is running), asked inside the HAProxy container (its socket is in its /tmp)."""
    ask = (
        "import socket; s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect('/tmp/haproxy.sock'); "
        f"s.sendall(b'show servers state {BACKEND}\\n'); print(s.makefile().read())"
    )
    shown = engine_out(engine, "exec", haproxy, "python3", "-c", ask, timeout=30)
    states = {}
    for line in shown.stdout.splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == BACKEND:
            states[fields[3]] = (fields[4], fields[5])
    return states


def _replica_answers(engine: str, haproxy: str, address: str) -> bool:
    """Whether the replica at `address` answers HAProxy's own health check (`/readyz`, from
    inside the HAProxy container, on the stack's internal network)."""
    ask = (
        f"import http.client as h; c = h.HTTPConnection({address!r}, 8000, timeout=2); "
        "c.request('GET', '/readyz', headers={'Host': 'mcp-health'}); "
        "print(c.getresponse().status)"
    )
    shown = engine_out(engine, "exec", haproxy, "python3", "-c", ask, timeout=30)
    return shown.stdout.strip() == "200"


def _recreate_replica(
    engine: str,
    compose: Sequence[str],
    env: dict[str, str],
    containers: dict[str, str],
    url: str,
    token: str,
    report: Checks,
) -> None:
    """Remove one replica's container and create it again, as an operator who changes its
    configuration does: it comes back on another address, and HAProxy (MCPLB_RESOLVERS) must find it
    there while the calls in between are answered by the others."""
    started = time.monotonic()
    old = _mcp_address(engine, containers[RECREATED])
    # Calls go on through HAProxy, one after another, from the removal until the new replica is routed.
    answers: list[bool] = []
    slowest = [0.0]
    done = threading.Event()

    def keep_calling() -> None:
        while not done.is_set():
            sent = time.monotonic()
            try:
                listed = modern(url, token, "tools/list", {})
            except OSError:
                answers.append(False)
            else:
                answers.append(listed.status == 200 and tool_names(listed) == ALL_TOOLS)
            slowest[0] = max(slowest[0], time.monotonic() - sent)
            time.sleep(0.1)

    caller = threading.Thread(target=keep_calling, daemon=True)
    caller.start()
    try:
        removed = engine_out(engine, "rm", "-f", "-t", "5", containers[RECREATED])
        up = subprocess.run(
            [*compose, "up", "-d", "--no-build", "--no-deps", RECREATED],
            env=env,
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if not report.check(
            removed.returncode == 0 and up.returncode == 0,
            f"http stack: {RECREATED} removed and created again (podman-compose up -d --no-deps)",
            (removed.stderr, up.stderr[-800:]),
        ):
            return
        new = _mcp_address(engine, containers[RECREATED])
        report.figure(
            f"http stack: {RECREATED}'s address {old} -> {new}"
            + (" (podman reused it)" if old == new else " (a new one)")
        )
        deadline = time.monotonic() + ROUTED_AGAIN_S
        listening = _replica_answers(engine, containers["haproxy"], new)
        while not listening and time.monotonic() < deadline:
            time.sleep(0.25)
            listening = _replica_answers(engine, containers["haproxy"], new)
        report.figure(f"http stack: the new {RECREATED} answered after {time.monotonic() - started:.1f} s")
        time.sleep(CHECKS_SETTLE_S)
        state = _server_states(engine, containers["haproxy"]).get(RECREATED)
        while state != (new, "2") and time.monotonic() < deadline:
            time.sleep(0.5)
            state = _server_states(engine, containers["haproxy"]).get(RECREATED)
    finally:
        done.set()
        caller.join(timeout=60)
    report.check(
        listening and state == (new, "2"),
        f"http stack: the new {RECREATED} answers, and HAProxy routes to it at its new address, within"
        f" {ROUTED_AGAIN_S:.0f} s",
        (old, new, listening, state),
    )
    report.check(
        bool(answers) and all(answers),
        f"http stack: every call meanwhile was answered ({len(answers)} tools/list)",
        f"{answers.count(False)} of {len(answers)} not answered",
    )
    report.figure(
        f"http stack: {RECREATED} removed to routed again: {time.monotonic() - started:.1f} s;"
        f" the slowest call meanwhile: {slowest[0]:.2f} s"
    )
    answered = 0
    for n in range(RECREATED_CALLS):
        sql = f"SELECT 'smoke-recreated-{n}' AS tag"
        reply = modern(url, token, "tools/call", {"name": "read_only_sql", "arguments": {"sql": sql}})
        answered += rows_of(reply) == [[f"smoke-recreated-{n}"]]
    logs = engine_out(engine, "logs", containers[RECREATED])
    tags = {
        n
        for record in records_of(logs.stdout + logs.stderr)
        if record.get("event") == "request" and record.get("sub") == SUBJECT
        for n in range(RECREATED_CALLS)
        if f"'smoke-recreated-{n}'" in str(record.get("args_excerpt", ""))
    }
    report.figure(f"http stack: tagged calls run by the new {RECREATED}: {len(tags)} of {RECREATED_CALLS}")
    proxy_log = engine_out(engine, "logs", containers["haproxy"])
    said = [
        line.strip()
        for line in (proxy_log.stdout + proxy_log.stderr).splitlines()
        if line.startswith((f"{BACKEND}/{RECREATED} ", f"Server {BACKEND}/{RECREATED} "))
    ]
    moved = [n for n, line in enumerate(said) if "changed its IP" in line]
    for line in said[moved[-1] :] if moved else []:
        report.figure(f"http stack: haproxy: {line[:140]}")
    report.check(
        answered == RECREATED_CALLS and bool(tags),
        f"http stack: {RECREATED_CALLS} tagged calls answered, some by the new {RECREATED} (its audit log)",
        (answered, sorted(tags)),
    )


# --- containers/run.sh http ----------------------------------------------------------------------


def run_sh_http(
    engine: str,
    image: str,
    data: Path,
    work: Path,
    project: str,
    database: Database,
    issuer: Any,
    report: Checks,
) -> None:
    """`make run-container-http` on the stack's egress network (where the issuer and PgBouncer are)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    name = f"mcp-suite-smoke-http-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_HTTP_", "MCP_STACK_", "MCP_SQL_"))}
    env.update(
        MCP_SUITE_IMAGE=image,
        MCP_SKIP_BUILD="1",
        MCP_SAFE_DATA_HOST_DIR=str(data),
        MCP_CONTAINER_NAME=name,
        MCP_CONTAINER_NETWORK=f"{project}_egress",
        MCP_CONTAINER_PUBLISH=f"127.0.0.1:{port}",
        MCP_HTTP_RESOURCE_URI=url,
        MCP_HTTP_ISSUER=ISSUER_URL,
        MCP_HTTP_JWKS_URL=f"{ISSUER_URL}/jwks.json",
        MCP_SQL_POOLER="transaction",  # the stack's PgBouncer
        MCP_SQL_DSN=(
            f"host=pgbouncer port=6432 dbname={database.dbname} user={database.user} "
            f"password={database.password}"
        ),
    )
    (data / BIG_FILE).write_text("a" * BIG_FILE_BYTES, encoding="utf-8")
    (data / BIG_FILE).chmod(0o644)
    errlog = (work / "run-http.stderr").open("w+", encoding="utf-8")
    proc = subprocess.Popen(
        [str(HERE / "run.sh"), "http"],
        stdin=subprocess.DEVNULL,
        stdout=errlog,
        stderr=errlog,
        env=env,
        cwd=str(ROOT),
    )
    try:
        ready = wait_ready(f"http://127.0.0.1:{port}", READY_TIMEOUT_S)
        if not report.check(
            ready is not None and ready.status == 200, "run.sh http: the published port answers", ready
        ):
            errlog.seek(0)
            report.check(False, "run.sh http: its stderr", errlog.read()[-1500:])
            return
        token = issuer.token(url, sub=SUBJECT, scope=ALL_SCOPES, expires_in=600)
        refused = modern(url, None, "tools/list", {})
        report.check(
            refused.status == 401 and "resource_metadata=" in refused.headers.get("www-authenticate", ""),
            "run.sh http: no token: 401 with WWW-Authenticate",
            (refused.status, refused.headers),
        )
        listed = modern(url, token, "tools/list", {})
        report.check(tool_names(listed) == ALL_TOOLS, "run.sh http: tools/list", tool_names(listed))
        sql = "SELECT 'run-sh-http' AS tag, count(*) AS pages FROM docs.pages"
        pages = modern(url, token, "tools/call", {"name": "read_only_sql", "arguments": {"sql": sql}})
        report.check(
            rows_of(pages) == [["run-sh-http", 30]], "run.sh http: read_only_sql answered", pages.body
        )
        published = check_hardened(engine, "run.sh http", name, report)
        report.check(
            published == [("8000/tcp", f"127.0.0.1:{port}")],
            "run.sh http: one port published, on 127.0.0.1",
            published,
        )
        good = GoodClient(engine, project_containers(engine, project).get("issuer", ""), name, token)
        with contextlib.ExitStack() as held:
            _floods(engine, name, port, url, issuer, good, held, report)
            # SIGTERM while the answer flood's clients still hold their connections, reading nothing.
            stopping = time.monotonic()
            stop = engine_out(engine, "stop", "--time", "10", name)
            code = proc.wait(timeout=30)
            report.figure(
                f"run.sh http: stopped in {time.monotonic() - stopping:.1f} s with never-reading clients"
            )
        report.check(
            stop.returncode == 0 and code == 0,
            "run.sh http: SIGTERM with clients that never read: exit 0 within the stop timeout",
            (stop.stderr, code),
        )
        errlog.seek(0)
        text = errlog.read()
        report.check(
            any(
                r.get("event") == "request"
                and r.get("sub") == SUBJECT
                and "'run-sh-http'" in str(r.get("args_excerpt"))
                for r in records_of(text)
            ),
            "run.sh http: the call's audit record names the subject",
        )
        report.check(token not in text, "run.sh http: the log does not hold the token")
        report.check("shut down cleanly" in text, "run.sh http: the server logged a clean drain")
    finally:
        if proc.poll() is None:
            engine_out(engine, "rm", "-f", "-t", "5", name)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        errlog.close()
        (data / BIG_FILE).unlink(missing_ok=True)


# --- floods against the shipped profile (issue 52) ------------------------------------------------

FLOOD_CONNECTIONS = 1_100  # more than the profile's 1,024 descriptors
FLOOD_SUBJECTS = 4
FLOOD_READS = 16  # per subject, each an answer of about 2 MB its client never reads
BIG_FILE = "flood-big.txt"
BIG_FILE_BYTES = 1_000_000
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# The good client runs in the issuer's container: another peer address than the floods' (the host's),
# so the per-address cap that stops the floods does not stop it.
_GOOD_CLIENT = """
import json, os, sys, time, urllib.request
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode()
request = urllib.request.Request(sys.argv[1], data=body, method="POST")
for name, value in {"Content-Type": "application/json", "Accept": "application/json",
                    "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/list",
                    "Authorization": "Bearer " + os.environ["TOKEN"]}.items():
    request.add_header(name, value)
started = time.monotonic()
with urllib.request.urlopen(request, timeout=10) as reply:
    status = reply.status
    reply.read()
print(json.dumps({"status": status, "seconds": time.monotonic() - started}))
""".replace("META", json.dumps(META)).replace("VERSION", repr(MODERN))


@dataclass(frozen=True)
class GoodClient:
    """A tools/list from inside `container` (on the server's network) to the server `server`."""

    engine: str
    container: str
    server: str
    token: str

    def ask(self) -> dict[str, Any]:
        env = {**os.environ, "TOKEN": self.token}
        done = subprocess.run(
            [
                self.engine,
                "exec",
                "-e",
                "TOKEN",
                self.container,
                "/opt/mcp-suite/bin/python",
                "-c",
                _GOOD_CLIENT,
                f"http://{self.server}:8000/mcp",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
        try:
            answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"status": None, "seconds": None, "stderr": done.stderr[-500:]}
        return answer


def _answered_in_time(good: GoodClient, what: str, report: Checks) -> None:
    answer = good.ask()
    report.check(
        answer.get("status") == 200 and (answer.get("seconds") or 99) < 1.0,
        f"run.sh http: {what}: a good client is answered within a second",
        answer,
    )


def _memory(engine: str, name: str) -> str:
    read = engine_out(engine, "stats", "--no-stream", "--format", "{{.MemUsage}}", name)
    return read.stdout.strip() or read.stderr.strip()[-200:]


def _connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError:
        return None


def _floods(
    engine: str,
    name: str,
    port: int,
    url: str,
    issuer: Any,
    good: GoodClient,
    held: contextlib.ExitStack,
    report: Checks,
) -> None:
    """The connection and answer floods of issue 52 against the shipped profile: 1,100 HTTP/2 prefaces,
    1,100 idle connections, then 64 answers of about 2 MB their clients never read (4 subjects x 16);
    after each, a good client is answered within a second and the container still runs. The answer
    flood's connections stay open in `held` for the SIGTERM that follows."""
    import resource  # the host's side holds 1,100 sockets at once

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4_096)), hard))
    held.callback(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))
    # HTTP/2 with prior knowledge: each answered GOAWAY and closed, at once.
    started = time.monotonic()
    prefaces = []
    for _ in range(FLOOD_CONNECTIONS):
        sock = _connect(port)
        if sock is not None:
            prefaces.append(sock)
            with contextlib.suppress(OSError):
                sock.sendall(H2_PREFACE)
    refused = 0
    deadline = time.monotonic() + 20  # for them all: a server that holds them must not hold the test
    for sock in prefaces:
        with contextlib.suppress(OSError):
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            received = b""
            while chunk := sock.recv(4096):
                received += chunk
            refused += b"\x00\x00\x08\x07" in received or received.startswith(b"HTTP/1.1 429")
        sock.close()
    report.check(
        refused == FLOOD_CONNECTIONS,
        "run.sh http: 1,100 HTTP/2 prefaces: each refused (GOAWAY, or 429 over the cap) and closed",
        (refused, len(prefaces)),
    )
    report.figure(f"run.sh http: HTTP/2 preface flood: {time.monotonic() - started:.1f} s")
    _answered_in_time(good, "after the HTTP/2 flood", report)
    # Idle connections from one address: 64 held (the per-peer cap), the rest 429 and closed.
    idle = [sock for _ in range(FLOOD_CONNECTIONS) if (sock := _connect(port)) is not None]
    try:
        _answered_in_time(good, "1,100 idle connections from one address", report)
        closed = 0
        deadline = time.monotonic() + 30  # the idle timeout (5 s) and a margin, for them all
        for sock in idle:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            with contextlib.suppress(OSError):
                while sock.recv(4096):
                    pass
                closed += 1
        report.check(
            closed == len(idle) == FLOOD_CONNECTIONS,
            "run.sh http: 1,100 idle connections: all closed by the server (cap, then idle timeout)",
            (closed, len(idle)),
        )
    finally:
        for sock in idle:
            sock.close()
    # Answers never read: 4 subjects x 16 reads of a 1 MB file.
    report.check(_alive(engine, name), "run.sh http: the server survived the connection floods")
    for subject in range(FLOOD_SUBJECTS):
        token = issuer.token(url, sub=f"flood-{subject}", scope=ALL_SCOPES, expires_in=600)
        for _ in range(FLOOD_READS):
            sock = _connect(port)
            if sock is None:
                continue
            held.callback(sock.close)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4_096)
            arguments = {"relative_path": BIG_FILE, "max_bytes": 1_048_576}
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "sandbox_fs_read", "arguments": arguments, "_meta": META},
                }
            ).encode()
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Accept: application/json\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\n"
                f"Mcp-Name: sandbox_fs_read\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            with contextlib.suppress(OSError):
                sock.sendall(head + body)
    time.sleep(3)  # the reads run, and their answers wait for clients that never read
    memory = _memory(engine, name)
    report.figure(f"run.sh http: memory under the answer flood: {memory}")
    report.check(_alive(engine, name), "run.sh http: the server survived 64 answers nobody reads")
    _answered_in_time(good, "64 answers nobody reads", report)


def _alive(engine: str, name: str) -> bool:
    state = engine_out(engine, "inspect", "--format", "{{.State.Running}} {{.State.OOMKilled}}", name)
    return state.stdout.strip() == "true false"


def database_of(dsn: str, socket_dir: Path) -> Database:
    """The demo cluster's DSN (as the stdio part gives it) as the stack needs it."""
    from psycopg.conninfo import conninfo_to_dict  # the project's venv

    params = conninfo_to_dict(dsn)
    return Database(socket_dir, str(params["dbname"]), str(params["user"]), str(params["password"]))
