"""A small synchronous JSON-RPC client that drives the real server process over stdio (e2e tests).

    with ServerProcess(env={"MCP_SAFE_DATA_DIR": str(root)}) as server:
        server.initialize()
        result = server.call_tool("sandbox_fs_read", {"relative_path": "a.txt"})

stdout lines are read by a thread into a queue; stderr is collected into `server.stderr_lines`.
Every stdout line is checked against the wire contract (`tests.support.wire.check_line`) when read.
`STRAY_ARGV` runs the test-only entry point with misbehaving tools (tests/support/stray_server.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.wire import check_line

REPO = Path(__file__).resolve().parents[2]
SERVER_ARGV = (sys.executable, "-X", "dev", "-m", "mcp_suite")
STRAY_ARGV = (sys.executable, "-X", "dev", "-m", "tests.support.stray_entry")
BASE_ENV_DROP = ("MCP_SQL_DSN", "MCP_SAFE_DATA_DIR", "MCP_METRICS_ENABLED")


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("MCP_LOG_LEVEL", "INFO")
    env.update(extra or {})
    return env


class ServerProcess:
    """The server as a child process. `argv` defaults to `python -X dev -m mcp_suite`; with
    `new_group` it leads a process group of its own (a terminal's Ctrl-C signals a whole group)."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        argv: Sequence[str] | None = None,
        cwd: Path | None = None,
        *,
        new_group: bool = False,
        content_blocks: bool = False,
    ) -> None:
        """`content_blocks`: the server's tool results may be content blocks (`wire.check_line`),
        for the conformance fixture server."""
        self.content_blocks = content_blocks
        self.argv = list(argv or SERVER_ARGV)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=server_env(env),
            cwd=str(cwd or REPO),
            process_group=0 if new_group else None,  # its own group: a test may signal all of it
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr_lines: list[str] = []
        self._ids = itertools.count(1)
        self._pending: dict[object, dict[str, Any]] = {}
        self._out_thread = threading.Thread(target=self._pump_stdout, daemon=True)
        self._err_thread = threading.Thread(target=self._pump_stderr, daemon=True)
        self._out_thread.start()
        self._err_thread.start()

    # -- pumps --------------------------------------------------------------------------------
    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    # -- sending ------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.send(message)

    def send_request(self, method: str, params: Mapping[str, Any] | None = None, id: object = None) -> object:
        request_id = next(self._ids) if id is None else id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.send(message)
        return request_id

    # -- receiving ----------------------------------------------------------------------------
    def recv_line(self, timeout: float = 10.0) -> bytes | None:
        return self.lines.get(timeout=timeout)

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self.recv_line(timeout)
        if line is None:
            raise EOFError("server closed stdout")
        return check_line(line, content_blocks=self.content_blocks)

    def response(self, request_id: object, timeout: float = 10.0) -> dict[str, Any]:
        """The response to `request_id`; other responses seen meanwhile are kept for later."""
        if request_id in self._pending:
            return self._pending.pop(request_id)
        while True:
            message = self.recv(timeout)
            if message.get("id") == request_id:
                return message
            self._pending[message.get("id")] = message

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, timeout: float = 10.0
    ) -> dict[str, Any]:
        return self.response(self.send_request(method, params), timeout)

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        response = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}},
        )
        self.notify("notifications/initialized")
        return response

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        response = self.request("tools/call", {"name": name, "arguments": dict(arguments or {})}, timeout)
        if "error" in response:
            raise AssertionError(f"JSON-RPC error: {response['error']}")
        result: dict[str, Any] = response["result"]
        return result

    def read_to_eof(self, timeout: float = 15.0) -> list[dict[str, Any]]:
        """Every message still to come (checked), until the server closes its stdout."""
        messages = list(self._pending.values())
        self._pending.clear()
        while (line := self.recv_line(timeout)) is not None:
            messages.append(check_line(line, content_blocks=self.content_blocks))
        return messages

    # -- inspecting ---------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.proc.pid

    def open_fds(self) -> int:
        """Descriptors the process has open, counted from outside (/proc)."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/task"))

    def stderr_text(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for_stderr(self, needle: str, timeout: float = 10.0) -> None:
        """Block until `needle` shows up on the server's stderr (the audit trail, a log line)."""
        deadline = time.monotonic() + timeout
        while needle not in self.stderr_text():
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} never appeared on stderr:\n{self.stderr_text()}")
            time.sleep(0.01)

    # -- ending -------------------------------------------------------------------------------
    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 15.0) -> int:
        code = self.proc.wait(timeout=timeout)
        self._out_thread.join(timeout)
        self._err_thread.join(timeout)
        return code

    def stop(self, timeout: float = 15.0) -> int:
        """EOF on stdin, then wait for the exit status (killing the process if it does not exit)."""
        with contextlib.suppress(BrokenPipeError):
            self.close_stdin()
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.wait(timeout)
            raise

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.stop()
            except Exception:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(BrokenPipeError):
            self.close_stdin()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def problem_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The problem document of an in-band error result."""
    assert result.get("isError") is True, result
    document: dict[str, Any] = json.loads(result["content"][0]["text"])
    return document
