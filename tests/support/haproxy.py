"""HAProxy from the shipped template (containers/haproxy/haproxy.cfg) in front of serve-http replicas,
for the tests: Debian's `haproxy` (`make test` installs it), the addresses given through the
template's environment variables, listening on a free loopback port, logging to a file, its runtime
API on a Unix socket in a private directory. It runs as this process's user (root in CI: HAProxy
needs no account of its own here) and is stopped when the block ends."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from mcp_suite.demo.process import stop_escalating
from tests.support.client import REPO
from tests.support.issuer import free_port

__all__ = ["HAPROXY_CONFIG", "HaProxy", "check_config", "find_haproxy", "open_haproxy", "template_env"]

HAPROXY_CONFIG = REPO / "containers" / "haproxy" / "haproxy.cfg"
# The template's `server` lines, in order: MCPLB_REPLICA_1 is `mcp1`, and so on.
SERVER_NAMES = ("mcp1", "mcp2", "mcp3")


def find_haproxy() -> Path:
    """Debian's haproxy (PATH, else /usr/sbin); `make system-packages` installs it."""
    found = shutil.which("haproxy", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))
    assert found, "haproxy not found: `make system-packages` installs Debian's haproxy package"
    return Path(found)


def template_env(bind: str, admin_socket: Path, replicas: Sequence[str]) -> dict[str, str]:
    """The variables the template reads: where to listen, the runtime API, each replica's host:port."""
    assert len(replicas) == len(SERVER_NAMES), "the template names three replicas"
    env = {"PATH": "/usr/bin:/bin:/usr/sbin", "MCPLB_BIND": bind, "MCPLB_ADMIN_SOCKET": str(admin_socket)}
    env.update({f"MCPLB_REPLICA_{n}": address for n, address in enumerate(replicas, start=1)})
    return env


def check_config(env: Mapping[str, str], config: Path = HAPROXY_CONFIG) -> subprocess.CompletedProcess[str]:
    """`haproxy -c` on the template with `env`, as an operator checks it before a reload."""
    return subprocess.run(
        [str(find_haproxy()), "-c", "-f", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=dict(env),
    )


class HaProxy:
    """One running HAProxy: `url` of the MCP endpoint through it, `states()` of its servers."""

    def __init__(self, proc: subprocess.Popen[bytes], base: Path, port: int) -> None:
        self.proc = proc
        self.base = base
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"

    @property
    def admin_socket(self) -> Path:
        return self.base / "admin.sock"

    def log_text(self) -> str:
        return (self.base / "haproxy.log").read_text(errors="replace")

    def command(self, line: str) -> str:
        """One runtime API command (`show stat`...) and its whole answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.admin_socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65_536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def states(self) -> dict[str, str]:
        """Each replica's state as the health checks see it (`UP`, `DOWN`, `UP 1/2`...)."""
        lines = self.command("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {row["svname"]: row["status"] for row in rows if row["svname"] in SERVER_NAMES}

    def wait_states(self, wanted: Mapping[str, str], timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            states = self.states()
            if all(states.get(name) == state for name, state in wanted.items()):
                return
            assert time.monotonic() < deadline, f"HAProxy's servers: {states}, wanted {dict(wanted)}"
            time.sleep(0.05)


@contextmanager
def open_haproxy(replicas: Sequence[str], config: Path = HAPROXY_CONFIG) -> Iterator[HaProxy]:
    """HAProxy from `config` on a free loopback port in front of `replicas` (host:port each)."""
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-haproxy-"))
    port = free_port()
    env = template_env(f"127.0.0.1:{port}", base / "admin.sock", replicas)
    try:
        checked = check_config(env, config)
        assert checked.returncode == 0, checked.stderr
        with (base / "haproxy.log").open("wb") as log:
            proc = subprocess.Popen(
                [str(find_haproxy()), "-db", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=base,
                start_new_session=True,
            )
        running = HaProxy(proc, base, port)
        try:
            deadline = time.monotonic() + 15
            while not running.admin_socket.exists() or not _listening(port):
                assert proc.poll() is None, running.log_text()
                assert time.monotonic() < deadline, "HAProxy did not start listening in time"
                time.sleep(0.02)
            yield running
        finally:
            stop_escalating(proc, ((signal.SIGUSR1, 5.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0
