"""`mcp-suite serve-http` as a process with a client that never reads its answer (issue 52): the write
timeout closes the connection and the call keeps its audit record, and SIGTERM ends the process within
its drain's grace whatever that client does. The in-process half is tests/trio/test_http_bounds.py."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.http_server import HttpServer, open_http_server

pytestmark = pytest.mark.e2e

BIG_FILE: Final = "big.txt"
BIG_FILE_BYTES: Final = 6_000_000  # an answer of twice that: more than loopback's socket buffers hold
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / BIG_FILE).write_text("a" * BIG_FILE_BYTES)
    return tmp_path


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    return {"MCP_SAFE_DATA_DIR": str(data_dir), "MCP_FS_MAX_BYTES": "8000000", **extra}


def never_reading(server: HttpServer) -> socket.socket:
    """A connection with a receive window of a few kilobytes that sends a read of the big file and
    never reads the answer."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "sandbox_fs_read",
                "arguments": {"relative_path": BIG_FILE, "max_bytes": 8_000_000},
                "_meta": META,
            },
        }
    ).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
        f"MCP-Protocol-Version: {MODERN_VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: sandbox_fs_read\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4_096)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(head + body)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """What the server sent until it closed the connection (a reset counts as a close)."""
    sock.settimeout(20)
    received = b""
    try:
        while chunk := sock.recv(1 << 20):
            received += chunk
    except ConnectionResetError:
        pass
    return received


@pytest.fixture
def cleanup() -> Iterator[list[socket.socket]]:
    sockets: list[socket.socket] = []
    yield sockets
    for sock in sockets:
        sock.close()


def test_an_answer_its_client_does_not_read_is_cut_off_by_the_write_timeout_and_audited(
    data_dir: Path, cleanup: list[socket.socket]
) -> None:
    with open_http_server(None, env_for(data_dir, MCP_HTTP_WRITE_TIMEOUT_S="1")) as server:
        sock = never_reading(server)
        cleanup.append(sock)
        [record] = server.audit(1)  # written before the answer goes out
        assert (record["tool"], record["outcome"]) == ("sandbox_fs_read", "ok"), record
        deadline = time.monotonic() + 20
        while not any("did not take a write within 1.0 s" in r.get("msg", "") for r in server.records()):
            assert time.monotonic() < deadline, server.records()[-5:]
            time.sleep(0.05)
        received = read_all(sock)
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        length = next(int(line[16:]) for line in head.split(b"\r\n") if line.startswith(b"content-length: "))
        assert len(body) < length  # cut off, not delivered


def test_sigterm_ends_the_process_within_its_grace_whatever_a_client_that_never_reads_does(
    data_dir: Path, cleanup: list[socket.socket]
) -> None:
    # A write timeout far beyond the test: only the drain's grace can end the write.
    env = env_for(data_dir, MCP_HTTP_WRITE_TIMEOUT_S="300", MCP_DRAIN_GRACE_S="1")
    with open_http_server(None, env) as server:
        sock = never_reading(server)
        cleanup.append(sock)
        [record] = server.audit(1)
        assert record["tool"] == "sandbox_fs_read", record
        time.sleep(0.5)  # the answer is being written, and not taken
        server.process.send_signal(signal.SIGTERM)
        try:
            code = server.process.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            pytest.fail("SIGTERM did not end the server while a client did not read its answer")
        assert code == 0, server.records()[-5:]
        assert any("still open after the drain" in r.get("msg", "") for r in server.records())
