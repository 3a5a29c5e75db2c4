"""The HTTP bench's load generator: its response reader (pieces in, whole responses out), the
request it builds, and its loop against a loopback server that answers in awkward pieces."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from bench.http_client import (
    HttpProtocolError,
    HttpResponse,
    ResponseReader,
    chunked_body,
    drive,
    parse_head,
    post_request,
)

JSON_RESPONSE = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"id":1234}'
CHUNKED_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
    b"6\r\nevent:\r\n5;ext=1\r\n data\r\n0\r\nX-Trailer: yes\r\n\r\n"
)


def test_a_response_with_a_length_comes_out_whole_however_it_is_split() -> None:
    for cut in range(1, len(JSON_RESPONSE)):
        reader = ResponseReader()
        assert reader.feed(JSON_RESPONSE[:cut]) == []
        (response,) = reader.feed(JSON_RESPONSE[cut:])
        assert response == HttpResponse(
            200, {"content-type": "application/json", "content-length": "11"}, b'{"id":1234}'
        )


def test_a_chunked_response_is_joined_its_extensions_and_trailers_dropped() -> None:
    for cut in range(1, len(CHUNKED_RESPONSE)):
        reader = ResponseReader()
        first = reader.feed(CHUNKED_RESPONSE[:cut])
        assert first == []
        (response,) = reader.feed(CHUNKED_RESPONSE[cut:])
        assert response.status == 200
        assert response.body == b"event: data"


def test_two_responses_in_one_piece_come_out_in_order_and_the_rest_waits() -> None:
    reader = ResponseReader()
    got = reader.feed(JSON_RESPONSE + CHUNKED_RESPONSE + JSON_RESPONSE[:20])
    assert [r.body for r in got] == [b'{"id":1234}', b"event: data"]
    (last,) = reader.feed(JSON_RESPONSE[20:])
    assert last.body == b'{"id":1234}'


def test_a_body_without_length_or_chunks_is_refused() -> None:
    with pytest.raises(HttpProtocolError, match="neither Content-Length nor chunks"):
        ResponseReader().feed(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")


def test_a_no_content_answer_has_an_empty_body() -> None:
    (response,) = ResponseReader().feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert (response.status, response.body) == (204, b"")


def test_a_status_line_that_is_not_http_1_is_refused() -> None:
    with pytest.raises(HttpProtocolError, match="status line"):
        parse_head(b"SSH-2.0-OpenSSH_9.6")
    with pytest.raises(HttpProtocolError, match="without a colon"):
        parse_head(b"HTTP/1.1 200 OK\r\nno colon here")


def test_endless_headers_are_refused_past_64_kib() -> None:
    reader = ResponseReader()
    with pytest.raises(HttpProtocolError, match="64 KiB"):
        reader.feed(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 20_000)


def test_a_chunk_size_that_is_not_hex_or_a_chunk_without_crlf_is_refused() -> None:
    with pytest.raises(HttpProtocolError, match="chunk size"):
        chunked_body(bytearray(b"zz\r\nabc\r\n"))
    with pytest.raises(HttpProtocolError, match="CRLF"):
        chunked_body(bytearray(b"3\r\nabcXY0\r\n\r\n"))
    assert chunked_body(bytearray(b"3\r\nab")) is None
    assert chunked_body(bytearray(b"3\r\nabc\r\n0\r\n")) is None  # the last CRLF not yet in
    assert chunked_body(bytearray(b"3\r\nabc\r\n0\r\n\r\nnext")) == (b"abc", 13)


def test_the_request_carries_its_length_host_and_headers() -> None:
    request = post_request("127.0.0.1", 8123, "/mcp", [("Mcp-Method", "tools/call")], '{"a":"é"}'.encode())
    head, _, body = request.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /mcp HTTP/1.1"
    assert "Host: 127.0.0.1:8123" in lines
    assert f"Content-Length: {len(body)}" in lines
    assert "Mcp-Method: tools/call" in lines
    assert body == '{"a":"é"}'.encode()


# --- the loop, against a loopback server ---------------------------------------------------------


@pytest.fixture
def answering_server() -> Iterator[tuple[tuple[str, int], list[bytes]]]:
    """Answers every request (read up to its 4-byte body) with the chunked response, sent one
    byte at a time for the first request of each connection; keeps the bodies it was sent."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    served: list[bytes] = []
    lock = threading.Lock()

    def serve(conn: socket.socket) -> None:
        buffer = b""
        first = True
        with conn, contextlib.suppress(OSError):  # the client closed first: the test is over
            while True:
                while b"\r\n\r\n" not in buffer or len(buffer.partition(b"\r\n\r\n")[2]) < 4:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                _head, _, rest = buffer.partition(b"\r\n\r\n")
                buffer = rest[4:]
                with lock:
                    served.append(rest[:4])
                if first:
                    for byte in CHUNKED_RESPONSE:
                        conn.sendall(bytes([byte]))
                    first = False
                else:
                    conn.sendall(CHUNKED_RESPONSE)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname(), served
    finally:
        listener.close()


def test_drive_makes_exactly_the_calls_asked_plus_one_untimed_per_client(
    answering_server: tuple[tuple[str, int], list[bytes]],
) -> None:
    address, served = answering_server
    seen: list[bytes] = []
    request = post_request(address[0], address[1], "/mcp", [], b"ping")
    run = drive(address, [request], clients=5, calls=37, check=lambda r: seen.append(r.body))
    assert len(run.latencies_ms) == 37
    assert all(latency > 0 for latency in run.latencies_ms)
    assert served == [b"ping"] * (37 + 5)
    assert seen == [b"event: data"] * (37 + 5)
    assert run.wall_s > 0
    assert run.client_cpu_s >= 0


def test_drive_stops_on_the_first_answer_its_check_refuses(
    answering_server: tuple[tuple[str, int], list[bytes]],
) -> None:
    address, _ = answering_server
    calls = [0]

    def check(response: HttpResponse) -> None:
        calls[0] += 1
        if calls[0] == 4:
            raise RuntimeError("refused")

    request = post_request(address[0], address[1], "/mcp", [], b"ping")
    with pytest.raises(RuntimeError, match="refused"):
        drive(address, [request], clients=2, calls=10, check=check)
    assert calls[0] == 4


def test_drive_gives_client_i_the_request_i_modulo_their_number(
    answering_server: tuple[tuple[str, int], list[bytes]],
) -> None:
    address, served = answering_server
    requests = [post_request(address[0], address[1], "/mcp", [], body) for body in (b"aaaa", b"bbbb")]
    drive(address, requests, clients=1, calls=6, check=lambda r: None)
    assert served == [b"aaaa"] * 7
    served.clear()
    drive(address, requests, clients=3, calls=30, check=lambda r: None)
    assert len(served) == 33
    assert set(served) == {b"aaaa", b"bbbb"}
    assert served.count(b"aaaa") >= 2  # clients 0 and 2 at least warmed up with it
