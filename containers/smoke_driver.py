"""Runtime half of containers/smoke.sh: drive the built image and check the hardened profile for real.

Standard library only (it runs on the host's python3), except the HTTP parts. Five parts (`--parts`):

1. probe   `podman run` with the full profile and python as the entrypoint: identity, read-only root
           and venv, writable but noexec /tmp, no pip / package manager / compiler / setuid file, no
           capabilities, no-new-privileges, loopback only, and the cgroup limits as the kernel sees them;
2. stdio   an MCP session over container stdio, once through containers/run.sh (what
           `make run-container` runs) and once through the compose file: initialize, initialized,
           tools/list, a tools/call of each enabled tool, sandbox escapes, then SIGTERM via the engine's
           stop (exit 0 within the drain grace);
3. http    with --http-project: the compose stack of compose.http.yaml and `run.sh http`, driven
           through their published ports (containers/smoke_http.py; it needs the project's venv);
4. sources with --http-project: the same stack again with a configuration file of two sources, one
           with an identity map, the other's role refused by the audit (containers/smoke_sources.py);
5. report  one line per check, then "smoke: N passed, N failed"; exit status 1 on any failure.
"""

# A test driver: it runs the container engine by design and probes /tmp inside the container.
# ruff: noqa: S603, S108

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import smoke_http  # containers/smoke_http.py, beside this file
import smoke_sources  # containers/smoke_sources.py, beside this file

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESPONSE_TIMEOUT_S = 60.0
DRAIN_GRACE_S = 5.0
HELLO = "hello from the read-only data folder\n"
DEEP = "nested file, two levels down\n"
# What tools/list shows: the SQL family's tools with a DSN, the others always
# (tests/unit/tooling/test_tool_convention.py holds both to the tools the server serves).
SQL_TOOLS = ["sql_schema", "read_only_sql", "explain_sql"]
OTHER_TOOLS = ["sandbox_fs_list", "sandbox_fs_read", "system_metrics"]

# Runs inside the container (python as the entrypoint, same profile). Prints one JSON object.
PROBE = r"""
import errno, importlib.util, json, os, shutil, stat, subprocess, sys, sysconfig
out = {"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "groups": os.getgroups()}
def try_write(path):
    try:
        with open(path, "x") as f:
            f.write("x")
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    os.unlink(path)
    return "written"
site = sysconfig.get_path("purelib")
out["write"] = {p: try_write(p) for p in (
    "/probe", "/etc/probe", "/opt/mcp-suite/bin/probe", os.path.join(site, "probe.py"),
    os.path.join(site, "mcp_suite", "probe.py"), "/safe_data_dir/probe", "/tmp/probe")}
shutil.copy("/bin/true", "/tmp/true-copy")
os.chmod("/tmp/true-copy", 0o755)
try:
    subprocess.run(["/tmp/true-copy"], check=True)
    out["tmp_exec"] = "executed"
except OSError as exc:
    out["tmp_exec"] = errno.errorcode.get(exc.errno, str(exc.errno))
os.unlink("/tmp/true-copy")
tools = ["pip", "pip3", "pip3.11", "easy_install", "apt", "apt-get", "aptitude", "dpkg", "dpkg-deb",
         "gcc", "cc", "c++", "g++", "clang", "as", "ld", "make", "cpp", "sudo", "su"]
out["tools_on_path"] = {t: shutil.which(t, path="/opt/mcp-suite/bin:/usr/local/sbin:/usr/local/bin:"
                                          "/usr/sbin:/usr/bin:/sbin:/bin") for t in tools}
out["tools_on_path"] = {k: v for k, v in out["tools_on_path"].items() if v}
out["modules"] = {m: importlib.util.find_spec(m) is not None
                  for m in ("pip", "ensurepip", "setuptools", "wheel", "mcp_suite")}
setuid = []
for top, dirs, files in os.walk("/"):
    if top in ("/proc", "/sys", "/dev", "/tmp"):
        dirs[:] = []
        continue
    for name in files:
        path = os.path.join(top, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            setuid.append(path)
out["setuid"] = setuid
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
out["caps"] = {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
out["no_new_privs"] = status.get("NoNewPrivs", "").strip()
out["seccomp"] = status.get("Seccomp", "").strip()
out["net"] = sorted(os.listdir("/sys/class/net"))
def first(*paths):
    for p in paths:
        try:
            return open(p).read().strip()
        except OSError:
            pass
    return None
out["pids_max"] = first("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max")
import resource
out["rlimits"] = {
    "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
    "nproc": list(resource.getrlimit(resource.RLIMIT_NPROC)),
}
out["memory_max"] = first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
out["cpu_max"] = first("/sys/fs/cgroup/cpu.max")
quota = first("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
period = first("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
if out["cpu_max"] is None and quota and period:
    out["cpu_max"] = quota + " " + period
mounts = [line.split() for line in open("/proc/self/mounts")]
out["mounts"] = {m[1]: m[3] for m in mounts if m[1] in ("/", "/tmp", "/safe_data_dir")}
out["env_safe_data_dir"] = os.environ.get("MCP_SAFE_DATA_DIR")
print(json.dumps(out))
"""


@dataclass
class Report:
    results: list[tuple[bool, str]] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)

    def check(self, ok: object, what: str, detail: object = "") -> bool:
        passed = bool(ok)
        self.results.append((passed, what if passed or not detail else f"{what}: {detail}"))
        mark = "ok  " if passed else "FAIL"
        shown = what if passed or detail == "" else f"{what}  ({str(detail)[:300]})"
        sys.stdout.write(f"{mark} {shown}\n")
        sys.stdout.flush()
        return passed

    def figure(self, text: str) -> None:
        self.figures.append(text)
        sys.stdout.write(f"     {text}\n")
        sys.stdout.flush()


# --- part 1: the probe -----------------------------------------------------------------------------


def run_probe(engine: str, image: str, profile: Sequence[str], data: Path, report: Report) -> None:
    argv = [
        engine,
        "run",
        "--rm",
        *profile,
        "-v",
        f"{data}:/safe_data_dir:ro",
        "--entrypoint",
        "/opt/mcp-suite/bin/python",
        image,
        "-I",
        "-c",
        PROBE,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if not report.check(done.returncode == 0, "probe: python runs inside the profile", done.stderr):
        return
    probe: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    report.check(
        (probe["uid"], probe["gid"], probe["euid"]) == (10001, 10001, 10001),
        "probe: the process runs as 10001:10001",
        probe,
    )
    writes = probe["write"]
    for path, outcome in writes.items():
        if path == "/tmp/probe":
            report.check(outcome == "written", "probe: /tmp accepts writes", outcome)
        else:
            report.check(outcome in ("EROFS", "EACCES"), f"probe: {path} rejects writes ({outcome})", outcome)
    report.check(probe["tmp_exec"] == "EACCES", "probe: /tmp is noexec", probe["tmp_exec"])
    report.check(
        not probe["tools_on_path"],
        "probe: no pip, package manager, compiler, sudo/su",
        probe["tools_on_path"],
    )
    modules = probe["modules"]
    report.check(
        modules == {"pip": False, "ensurepip": False, "setuptools": False, "wheel": False, "mcp_suite": True},
        "probe: pip/ensurepip/setuptools/wheel not importable; mcp_suite is",
        modules,
    )
    report.check(not probe["setuid"], "probe: no setuid/setgid file anywhere", probe["setuid"][:10])
    zero = "0" * 16
    report.check(
        all(v == zero for v in probe["caps"].values()), "probe: no capabilities at all", probe["caps"]
    )
    report.check(probe["no_new_privs"] == "1", "probe: no_new_privs is set", probe["no_new_privs"])
    report.check(probe["seccomp"] == "2", "probe: a seccomp filter is active", probe["seccomp"])
    report.check(probe["net"] == ["lo"], "probe: network namespace has loopback only", probe["net"])
    report.check(probe["pids_max"] == "64", "probe: pids limit 64", probe["pids_max"])
    report.check(
        probe["rlimits"] == {"nofile": [1024, 1024], "nproc": [1024, 1024]},
        "probe: 1024 open files and 1024 processes (the profile's --ulimit)",
        probe["rlimits"],
    )
    report.check(
        probe["memory_max"] == str(256 * 1024 * 1024), "probe: memory limit 256 MiB", probe["memory_max"]
    )
    cpu = (probe["cpu_max"] or "").split()
    report.check(len(cpu) == 2 and cpu[0] == cpu[1], "probe: CPU quota of one CPU", probe["cpu_max"])
    mounts = probe["mounts"]
    report.check("ro" in mounts.get("/", "").split(","), "probe: root mounted read-only", mounts)
    report.check(
        {"noexec", "nosuid"} <= set(mounts.get("/tmp", "").split(",")),
        "probe: /tmp mounted noexec,nosuid",
        mounts,
    )
    report.check(
        "ro" in mounts.get("/safe_data_dir", "").split(","), "probe: /safe_data_dir mounted read-only", mounts
    )
    report.check(probe["env_safe_data_dir"] == "/safe_data_dir", "probe: MCP_SAFE_DATA_DIR=/safe_data_dir")


# --- part 2: MCP over container stdio --------------------------------------------------------------


class StdioPeer:
    """The container (through some launcher command) as an MCP server on stdin/stdout."""

    def __init__(self, argv: Sequence[str], env: dict[str, str]) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(ROOT),
        )
        self.lines: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
        self.junk: list[bytes] = []
        self.early: dict[object, dict[str, Any]] = {}
        self.stderr: list[str] = []
        self._ids = iter(range(1, 1_000_000))
        threading.Thread(target=self._pump_out, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line))
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + RESPONSE_TIMEOUT_S
        while True:
            try:
                item = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no response to {method} within {RESPONSE_TIMEOUT_S} s") from None
            if item is None:
                raise EOFError(f"stdout closed before the response to {method}")
            at, line = item
            try:
                frame = json.loads(line)
            except ValueError:
                self.junk.append(line)
                continue
            if isinstance(frame, dict) and frame.get("id") == request_id:
                return frame, at
            if isinstance(frame, dict) and "id" in frame and ("result" in frame or "error" in frame):
                self.early[frame["id"]] = frame  # out of order: another request's response
            else:
                self.junk.append(line)

    def send_request(self, method: str, params: dict[str, Any]) -> int:
        request_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def drain_responses(self) -> None:
        """After exit: file every remaining response by id."""
        while True:
            try:
                item = self.lines.get(timeout=5)
            except queue.Empty:
                return
            if item is None:
                return
            with contextlib.suppress(ValueError):
                frame = json.loads(item[1])
                if isinstance(frame, dict) and "id" in frame:
                    self.early[frame["id"]] = frame
                    continue
            self.junk.append(item[1])

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        response, _ = self.request("tools/call", {"name": name, "arguments": arguments})
        result = response.get("result")
        if not isinstance(result, dict):
            raise TypeError(f"tools/call {name}: no result: {response}")
        return result

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait(timeout=30)


def _problem_type(result: dict[str, Any]) -> str:
    try:
        text = result["content"][0]["text"]
        return str(json.loads(text).get("type", ""))
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return ""


def mcp_session(
    label: str,
    engine: str,
    argv: Sequence[str],
    env: dict[str, str],
    container: str,
    report: Report,
    *,
    sql: bool,
) -> None:
    peer = StdioPeer(argv, env)
    try:
        _conversation(label, peer, report, sql=sql)
        _stop(label, engine, peer, container, report)
    except (TimeoutError, EOFError, AssertionError, KeyError, ValueError, TypeError) as exc:
        report.check(False, f"{label}: session", exc)
        report.check(False, f"{label}: server stderr tail", "\n".join(peer.stderr[-15:]))
    finally:
        if peer.proc.poll() is None:
            subprocess.run([engine, "rm", "-f", container], capture_output=True, check=False)
            peer.kill()


def _conversation(label: str, peer: StdioPeer, report: Report, *, sql: bool) -> None:
    response, at = peer.request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-suite-smoke", "version": "1"},
        },
    )
    result = response.get("result", {})
    report.check(
        result.get("serverInfo", {}).get("name") == "mcp-suite"
        and result.get("protocolVersion") == "2025-11-25",
        f"{label}: initialize answered",
        response,
    )
    report.figure(f"{label}: launch to initialize response: {(at - peer.started) * 1000:.0f} ms")
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    pong, _ = peer.request("ping")
    report.check(pong.get("result") == {}, f"{label}: ping", pong)

    listed, _ = peer.request("tools/list")
    names = sorted(tool["name"] for tool in listed.get("result", {}).get("tools", []))
    expected = sorted([*OTHER_TOOLS, *(SQL_TOOLS if sql else [])])
    report.check(names == expected, f"{label}: tools/list = {', '.join(expected)}", names)

    metrics = peer.call_tool("system_metrics", {})
    report.check(
        metrics.get("isError") is False and isinstance(metrics.get("structuredContent"), dict),
        f"{label}: tools/call system_metrics",
        metrics,
    )

    hello = peer.call_tool("sandbox_fs_read", {"relative_path": "hello.txt"})
    report.check(
        hello.get("isError") is False and hello.get("structuredContent", {}).get("content") == HELLO,
        f"{label}: tools/call sandbox_fs_read reads the mounted data",
        hello,
    )
    deep = peer.call_tool("sandbox_fs_read", {"relative_path": "notes/deep.txt"})
    report.check(
        deep.get("isError") is False and deep.get("structuredContent", {}).get("content") == DEEP,
        f"{label}: sandbox_fs_read reads a nested file",
        deep,
    )
    listing = peer.call_tool("sandbox_fs_list", {"recursive": True})
    entries = listing.get("structuredContent", {}).get("entries", [])
    leaves = {str(e.get("name")).rsplit("/", 1)[-1] for e in entries}
    report.check(
        listing.get("isError") is False and {"hello.txt", "deep.txt"} <= leaves,
        f"{label}: tools/call sandbox_fs_list lists the mounted data",
        listing,
    )
    for attempt in ("../../etc/passwd", "/etc/passwd", "escape/passwd", "notes/../../etc/passwd"):
        denied = peer.call_tool("sandbox_fs_read", {"relative_path": attempt})
        text = json.dumps(denied)
        report.check(
            denied.get("isError") is True
            and _problem_type(denied).endswith(":access-denied")
            and "root:x:" not in text,
            f"{label}: sandbox_fs_read cannot leave the data folder ({attempt})",
            denied,
        )
    if sql:
        one = peer.call_tool("read_only_sql", {"sql": "SELECT 1 AS one"})
        report.check(
            one.get("isError") is False and one.get("structuredContent", {}).get("rows") == [[1]],
            f"{label}: tools/call read_only_sql",
            one,
        )
        pages = peer.call_tool("read_only_sql", {"sql": "SELECT count(*) AS n FROM docs.pages"})
        report.check(
            pages.get("structuredContent", {}).get("rows") == [[30]],
            f"{label}: read_only_sql reads the demo data through the mounted socket",
            pages,
        )
        for statement, slug in (
            ("CREATE TABLE smoke_probe (x int)", ":query-violation"),
            ("DELETE FROM docs.pages", ":query-violation"),
            ("SELECT email FROM docs.editors", ":access-denied"),
        ):
            refused = peer.call_tool("read_only_sql", {"sql": statement})
            report.check(
                refused.get("isError") is True and _problem_type(refused).endswith(slug),
                f"{label}: read_only_sql refuses {statement!r}",
                refused,
            )
    report.check(not peer.junk, f"{label}: stdout carries only JSON-RPC responses", peer.junk[:3])


def _stop(label: str, engine: str, peer: StdioPeer, container: str, report: Report) -> None:
    # A call in flight when SIGTERM arrives must still be answered (docs/wire.md drain). The ping sent
    # after it is answered inline in arrival order, so once its response is back the call has been
    # read and dispatched: whether it is still running or already done, its response must arrive.
    in_flight = peer.send_request("tools/call", {"name": "system_metrics", "arguments": {}})
    peer.request("ping")
    started = time.monotonic()
    stop = subprocess.run(
        [engine, "stop", "--time", "10", container],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    code = peer.wait(timeout=30)
    elapsed = time.monotonic() - started
    report.check(stop.returncode == 0, f"{label}: `{engine} stop` (SIGTERM) accepted", stop.stderr)
    report.check(code == 0, f"{label}: the container exits 0 on SIGTERM", code)
    report.check(
        elapsed < DRAIN_GRACE_S + 3.0,
        f"{label}: stopped within the drain grace ({DRAIN_GRACE_S:.0f} s)",
        f"{elapsed:.1f} s",
    )
    report.figure(f"{label}: SIGTERM to exit: {elapsed * 1000:.0f} ms")
    peer.drain_responses()
    drained = peer.early.get(in_flight, {})
    report.check(
        drained.get("result", {}).get("isError") is False,
        f"{label}: the call in flight at SIGTERM was answered before exit",
        drained or "no response",
    )
    report.check(
        any("shut down cleanly" in line for line in peer.stderr),
        f"{label}: the server logged a clean drain",
        "\n".join(peer.stderr[-5:]),
    )
    report.check(
        not any("Traceback" in line for line in peer.stderr),
        f"{label}: no traceback on stderr",
    )


# --- fixtures and main -----------------------------------------------------------------------------


@contextlib.contextmanager
def data_folder(base: Path) -> Iterator[Path]:
    """A folder the container user (10001) can read, with a symlink that points out of it."""
    root = base / f"smoke-data-{uuid.uuid4().hex[:8]}"
    (root / "notes").mkdir(parents=True)
    (root / "hello.txt").write_text(HELLO, encoding="utf-8")
    (root / "notes" / "deep.txt").write_text(DEEP, encoding="utf-8")
    (root / "escape").symlink_to("/etc")
    for path in (root, root / "notes"):
        path.chmod(0o755)
    for path in (root / "hello.txt", root / "notes" / "deep.txt"):
        path.chmod(0o644)
    base.chmod(base.stat().st_mode | 0o711)
    try:
        yield root
    finally:
        for path in (root / "escape", root / "notes" / "deep.txt", root / "hello.txt"):
            path.unlink(missing_ok=True)
        for path in (root / "notes", root):
            with contextlib.suppress(OSError):
                path.rmdir()


class SocketRelay:
    """Unix socket on the host -> the demo cluster's loopback TCP port, byte for byte.

    With --network none the container cannot reach 127.0.0.1 of the host; a mounted Unix socket is
    the one way in (the same way an operator would give it a local PostgreSQL: docs/operations).
    """

    def __init__(self, directory: Path, port: int) -> None:
        self.path = directory / ".s.PGSQL.5432"
        self.port = port
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.path.chmod(0o777)  # the container user (10001) must be able to connect
        self.server.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.server.close()
        self.path.unlink(missing_ok=True)


@contextlib.contextmanager
def demo_sql(work: Path, report: Report) -> Iterator[tuple[str, Path] | None]:
    """A fresh demo cluster (docs/tools/read_only_sql.md) behind a Unix socket.

    Yields (the DSN for the container, the socket folder).

    None when this interpreter cannot run the demo cluster (no project venv): the smoke then checks
    that read_only_sql is not registered without a DSN.
    """
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo  # optional: needs the project venv

        from mcp_suite.demo.cluster import Cluster  # optional: needs the project venv
    except ImportError:
        report.figure("read_only_sql: no project venv here, so no demo cluster: checked absent")
        yield None
        return
    # A private cluster in the scratch folder: the shared one in .cache/devdb may belong to another
    # process (make run, a test session) that can stop it in the middle of this test.
    work.chmod(0o711)  # the cluster's service account must traverse it
    cluster = Cluster.create(work / "devdb")
    sock_dir = work / "pgsock"
    sock_dir.mkdir()
    sock_dir.chmod(0o755)
    relay = SocketRelay(sock_dir, cluster.port)
    try:
        params = conninfo_to_dict(cluster.reader_dsn)
        params.update(host=str(sock_dir), port="5432")
        params.pop("sslmode", None)  # no TLS over a Unix socket
        yield make_conninfo("", **params), sock_dir
    finally:
        relay.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
        cluster.destroy()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="podman")
    parser.add_argument("--image", required=True)
    parser.add_argument(
        "--compose", nargs="*", default=None, help="the compose launcher argv (for example podman-compose)"
    )
    parser.add_argument("--work", type=Path, required=True, help="scratch folder on the host")
    parser.add_argument(
        "--no-sql",
        dest="sql",
        action="store_false",
        help="skip the demo PostgreSQL (read_only_sql must then be absent)",
    )
    parser.add_argument(
        "--http-project",
        default="",
        help="run the HTTP stack (compose.http.yaml) and run.sh http under this compose project name",
    )
    parser.add_argument(
        "--parts",
        default="probe,stdio,http,sources",
        help="comma-separated: probe, stdio, http, sources (default: all)",
    )
    parser.add_argument("profile", nargs=argparse.REMAINDER, help="-- then the run profile flags")
    args = parser.parse_args(argv)
    profile = [flag for flag in args.profile if flag != "--"]
    parts = set(args.parts.split(","))
    report = Report()

    with data_folder(args.work) as data:
        if "probe" in parts:
            run_probe(args.engine, args.image, profile, data, report)

        with contextlib.ExitStack() as stack:
            env = dict(
                os.environ, MCP_SAFE_DATA_HOST_DIR=str(data), MCP_SUITE_IMAGE=args.image, MCP_SKIP_BUILD="1"
            )
            env.pop("MCP_SQL_DSN", None)
            env.pop("MCP_PG_SOCKET_DIR", None)
            compose_files = [str(HERE / "compose.yaml")]
            sql = stack.enter_context(demo_sql(args.work, report)) if args.sql else None
            if sql is not None:
                dsn, sock_dir = sql
                env.update(MCP_SQL_DSN=dsn, MCP_PG_SOCKET_DIR=str(sock_dir))
                # The compose file passes MCP_SQL_DSN through; the socket needs a mount on top.
                override = args.work / "compose.sql.yaml"
                override.write_text(
                    f"services:\n  mcp-suite:\n    volumes:\n      - {sock_dir}:{sock_dir}:ro\n",
                    encoding="utf-8",
                )
                compose_files.append(str(override))

            if "stdio" in parts:
                name = f"mcp-suite-smoke-{uuid.uuid4().hex[:8]}"
                mcp_session(
                    "run.sh",
                    args.engine,
                    [str(HERE / "run.sh")],
                    dict(env, MCP_CONTAINER_NAME=name),
                    name,
                    report,
                    sql=sql is not None,
                )

            if "stdio" in parts and args.compose:
                name = f"mcp-suite-smoke-{uuid.uuid4().hex[:8]}"
                files = [arg for path in compose_files for arg in ("-f", path)]
                compose_argv = [*args.compose, *files, "run", "--rm", "-T", "--name", name, "mcp-suite"]
                mcp_session("compose", args.engine, compose_argv, env, name, report, sql=sql is not None)

            # The HTTP stack reaches the same demo cluster through the same relay's socket.
            if (
                "http" in parts
                and args.http_project
                and report.check(
                    sql is not None and bool(args.compose),
                    "http stack: the demo database and podman-compose are there to run it",
                )
            ):
                assert sql is not None
                smoke_http.run_stack(
                    args.engine,
                    args.compose,
                    args.image,
                    data,
                    args.work,
                    smoke_http.database_of(*sql),
                    args.http_project,
                    report,
                )
            if (
                "sources" in parts
                and args.http_project
                and report.check(
                    sql is not None and bool(args.compose),
                    "sources: the demo database and podman-compose are there to run it",
                )
            ):
                assert sql is not None
                smoke_sources.run_sources_stack(
                    args.engine,
                    args.compose,
                    args.image,
                    data,
                    args.work,
                    smoke_http.database_of(*sql),
                    args.http_project,
                    report,
                )

    failed = sum(1 for ok, _ in report.results if not ok)
    sys.stdout.write(f"smoke: {len(report.results) - failed} passed, {failed} failed\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
