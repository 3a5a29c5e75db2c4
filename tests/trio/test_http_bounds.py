"""The HTTP endpoint under hostile load, in-process over real loopback sockets (issue 52): every
connection is bounded in time whatever it sends (HTTP/2 refused, caps per peer address and in all),
and every answer is bounded (a write its client does not take closes the connection; unread answer
bytes are bounded per caller and in all). The process-level half (the audit record of a cut-off
answer, SIGTERM with a client that never reads) is tests/e2e/test_http_bounds_process.py."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx2
import pytest
import trio

from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.issuer import TestIssuer, open_issuer
from tests.trio.test_http_app import assert_refused, modern, modern_headers, raw_answer, refusal_body, serving

H2_PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_PING: Final = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"12345678"
# HEADERS on stream 1 without END_HEADERS: a block never finished.
H2_OPEN_HEADERS: Final = b"\x00\x00\x01\x01\x00\x00\x00\x00\x01" + b"\x82"
H2_EMPTY_SETTINGS: Final = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SCOPES: Final = "files:read metrics:read test:call"
BIG_FILE: Final = "big.txt"
BIG_FILE_BYTES: Final = 6_000_000  # an answer of twice that: more than loopback's socket buffers hold
SMALL_FILE: Final = "small.txt"


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / BIG_FILE).write_text("a" * BIG_FILE_BYTES)
    (tmp_path / SMALL_FILE).write_text("b" * 100_000)  # an answer over the 64 KiB that always go
    return tmp_path


def h2_frames(data: bytes) -> list[tuple[int, bytes]]:
    """The (type, payload) of each whole HTTP/2 frame in `data`."""
    frames = []
    while len(data) >= 9:
        length = int.from_bytes(data[:3], "big")
        frames.append((data[3], data[9 : 9 + length]))
        data = data[9 + length :]
    return frames


async def read_to_eof(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as a close)."""
    received = b""
    try:
        while chunk := await stream.receive_some(65_536):
            received += chunk
    except trio.BrokenResourceError:
        pass
    return received


def call_read(path: str, request_id: int = 1) -> bytes:
    return json.dumps(
        modern(
            "tools/call",
            {"name": "sandbox_fs_read", "arguments": {"relative_path": path, "max_bytes": 8_000_000}},
            request_id,
        )
    ).encode()


def raw_post(body: bytes, token: str | None = None, name: str = "sandbox_fs_read") -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
        f"MCP-Protocol-Version: {MODERN_VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n{auth}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def open_never_reading(host: str, port: int) -> trio.SocketStream:
    """A connection whose receive window is a few kilobytes and which never reads."""
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4_096)
    await sock.connect((host, port))
    return trio.SocketStream(sock)


async def healthz(stream: trio.SocketStream) -> bytes:
    """GET /healthz on a kept-alive connection: the first bytes of its answer."""
    await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    return await stream.receive_some(65_536)


# -- HTTP/2 is not served ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "then",
    [b"", H2_EMPTY_SETTINGS + H2_OPEN_HEADERS, H2_EMPTY_SETTINGS + H2_PING],
    ids=["preface-alone", "headers-never-finished", "pings"],
)
async def test_an_http2_preface_is_answered_goaway_http_1_1_required_and_closed(then: bytes) -> None:
    with trio.fail_after(30):
        # A long idle bound: only the refusal can end the connection within the test's bound.
        async with serving(http_idle_timeout_s=60) as server, httpx2.AsyncClient() as http:
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                await stream.send_all(H2_PREFACE + then)
                with trio.fail_after(10):
                    received = await read_to_eof(stream)
            frames = h2_frames(received)
            goaway = [payload for kind, payload in frames if kind == 0x7]
            assert goaway, frames
            assert struct.unpack(">II", goaway[0][:8]) == (0, 0xD)  # no stream; HTTP_1_1_REQUIRED
            ok = await http.get(f"http://{server.host}:{server.port}/healthz")
            assert ok.status_code == 200


async def test_an_upgrade_to_h2c_is_answered_400_over_http_1_1_never_101() -> None:
    with trio.fail_after(30):
        async with serving(http_idle_timeout_s=60) as server:
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                await stream.send_all(
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"
                )
                with trio.fail_after(10):
                    status_line, body = await raw_answer(stream)
            assert status_line.startswith(b"HTTP/1.1 400"), status_line
            refusal_body(body, 400, "invalid-request")


# -- connection caps --------------------------------------------------------------------------------


async def test_connections_over_the_per_peer_cap_are_refused_429_while_another_peer_is_served() -> None:
    with trio.fail_after(30):
        async with serving(
            http_max_connections=12, http_max_connections_per_peer=8, http_idle_timeout_s=60
        ) as server:
            held = [await trio.open_tcp_stream(server.host, server.port) for _ in range(8)]
            try:
                for stream in held:  # each answered, and kept open
                    assert (await healthz(stream)).startswith(b"HTTP/1.1 200")
                extra = await trio.open_tcp_stream(server.host, server.port)
                async with extra:
                    with trio.fail_after(10):
                        status_line, body = await raw_answer(extra)
                assert status_line.startswith(b"HTTP/1.1 429"), status_line
                assert (
                    "one address" in refusal_body(body, 429, "concurrency-limit")["error"]["data"]["detail"]
                )
                transport = httpx2.AsyncHTTPTransport(local_address="127.0.0.2")
                async with httpx2.AsyncClient(transport=transport) as other:
                    ok = await other.post(
                        server.url, json=modern("tools/list"), headers=modern_headers("tools/list")
                    )
                    assert ok.status_code == 200
            finally:
                for stream in held:
                    await stream.aclose()


async def test_connections_over_the_server_cap_are_refused_429_and_a_closed_one_makes_room() -> None:
    with trio.fail_after(30):
        async with serving(
            http_max_connections=6, http_max_connections_per_peer=4, http_idle_timeout_s=60
        ) as server:
            held = []
            for local in ("127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.3"):
                stream = await trio.open_tcp_stream(server.host, server.port, local_address=local)
                held.append(stream)
                assert (await healthz(stream)).startswith(b"HTTP/1.1 200")
            try:
                extra = await trio.open_tcp_stream(server.host, server.port, local_address="127.0.0.4")
                async with extra:
                    with trio.fail_after(10):
                        status_line, body = await raw_answer(extra)
                assert status_line.startswith(b"HTTP/1.1 429"), status_line
                assert (
                    "maximum of 6" in refusal_body(body, 429, "concurrency-limit")["error"]["data"]["detail"]
                )
                await held.pop().aclose()
                with trio.fail_after(10):
                    while True:  # the server sees the close a moment later
                        stream = await trio.open_tcp_stream(
                            server.host, server.port, local_address="127.0.0.4"
                        )
                        answer = await healthz(stream)
                        if answer.startswith(b"HTTP/1.1 200"):
                            held.append(stream)
                            break
                        await stream.aclose()
                        await trio.sleep(0.05)
            finally:
                for stream in held:
                    await stream.aclose()


# -- answers ----------------------------------------------------------------------------------------


async def test_a_write_its_client_does_not_take_closes_the_connection_and_the_server_serves_on(
    data_dir: Path,
) -> None:
    with trio.fail_after(60):
        async with (
            serving(safe_data_dir=data_dir, fs_max_bytes=8_000_000, http_write_timeout_s=1) as server,
            httpx2.AsyncClient() as http,
        ):
            stuck = await open_never_reading(server.host, server.port)
            async with stuck:
                await stuck.send_all(raw_post(call_read(BIG_FILE)))
                await trio.sleep(3)  # never reading, past the write timeout
                with trio.fail_after(10):
                    received = await read_to_eof(stuck)
            # The answer was cut off: its head and part of its body, then the close.
            head, _, body = received.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            length = next(
                int(line[15:]) for line in head.split(b"\r\n") if line.startswith(b"content-length: ")
            )
            assert len(body) < length
            ok = await http.post(server.url, json=modern("tools/list"), headers=modern_headers("tools/list"))
            assert ok.status_code == 200


async def test_a_caller_whose_answer_is_unread_gets_429_for_new_requests_and_another_caller_is_served(
    issuer: TestIssuer, data_dir: Path
) -> None:
    alice = issuer.token("http://127.0.0.1/mcp", sub="alice", scope=SCOPES)
    bob = issuer.token("http://127.0.0.1/mcp", sub="bob", scope=SCOPES)
    with trio.fail_after(60):
        async with (
            serving(
                issuer, safe_data_dir=data_dir, fs_max_bytes=8_000_000, http_write_timeout_s=60
            ) as server,
            httpx2.AsyncClient() as http,
        ):
            stuck = await open_never_reading(server.host, server.port)
            async with stuck:
                await stuck.send_all(raw_post(call_read(BIG_FILE), alice))
                while True:  # until the answer is being written and not taken
                    busy = await http.post(
                        server.url,
                        json=modern("tools/list"),
                        headers=modern_headers("tools/list", token=alice),
                    )
                    if busy.status_code != 200:
                        break
                    await trio.sleep(0.05)
                detail = assert_refused(busy, 429, "concurrency-limit")["error"]["data"]["detail"]
                assert "not read yet" in detail
                assert busy.headers["retry-after"] == "1"
                ok = await http.post(
                    server.url, json=modern("tools/list"), headers=modern_headers("tools/list", token=bob)
                )
                assert ok.status_code == 200


async def test_an_answer_past_the_server_s_unread_bound_is_withheld_with_429_until_the_stuck_one_is_cut_off(
    issuer: TestIssuer, data_dir: Path
) -> None:
    alice = issuer.token("http://127.0.0.1/mcp", sub="alice", scope=SCOPES)
    bob = issuer.token("http://127.0.0.1/mcp", sub="bob", scope=SCOPES)
    settings: dict[str, Any] = {
        "safe_data_dir": data_dir,
        "fs_max_bytes": 8_000_000,
        "http_write_timeout_s": 5,
        "http_max_unread_bytes": 1_048_576,
        "http_max_unread_bytes_per_identity": 1_048_576,
    }
    with trio.fail_after(60):
        async with serving(issuer, **settings) as server, httpx2.AsyncClient() as http:
            arguments = {"relative_path": SMALL_FILE, "max_bytes": 200_000}
            small = modern("tools/call", {"name": "sandbox_fs_read", "arguments": arguments})
            headers = modern_headers("tools/call", "sandbox_fs_read", token=bob)
            stuck = await open_never_reading(server.host, server.port)
            async with stuck:
                await stuck.send_all(raw_post(call_read(BIG_FILE), alice))
                while True:  # alice's answer goes (the server had none in flight), and is not taken
                    busy = await http.post(
                        server.url,
                        json=modern("tools/list"),
                        headers=modern_headers("tools/list", token=alice),
                    )
                    if busy.status_code != 200:
                        break
                    await trio.sleep(0.05)
                assert_refused(busy, 429, "concurrency-limit")
                withheld = await http.post(server.url, json=small, headers=headers)
                detail = assert_refused(withheld, 429, "concurrency-limit")["error"]["data"]["detail"]
                assert "the server's answers being written are at their bound" in detail
                assert "withheld" in detail
                # A small answer always goes: bob is still served his tools/list.
                listed = await http.post(
                    server.url, json=modern("tools/list"), headers=modern_headers("tools/list", token=bob)
                )
                assert listed.status_code == 200
                await trio.sleep(6)  # never reading, past the write timeout
                with trio.fail_after(20):
                    await read_to_eof(stuck)  # cut off: it ends
            with trio.fail_after(10):
                while True:  # the bytes are given back once the connection is closed
                    again = await http.post(server.url, json=small, headers=headers)
                    if again.status_code == 200:
                        break
                    await trio.sleep(0.05)
            assert again.json()["result"]["structuredContent"]["content"] == "b" * 100_000
