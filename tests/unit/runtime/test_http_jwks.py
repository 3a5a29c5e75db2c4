"""`fetch_jwks`, the blocking fetch of the issuer's key set: at most `max_bytes` are read and a
document one byte longer is refused; anything but a JWKS document (an object with a `keys` list) is
refused. The documents are files, read through the same `urllib` call as an issuer's URL; what
needs the network (the request's header, a peer that never answers or never stops) is served on
loopback by a socket the test drives."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcp_suite.runtime.http_auth import fetch_jwks

KEY = {"kty": "EC", "crv": "P-256", "kid": "k1", "x": "x", "y": "y"}


def _served(tmp_path: Path, body: bytes) -> str:
    path = tmp_path / "jwks.json"
    path.write_bytes(body)
    return path.as_uri()


def test_a_document_of_exactly_max_bytes_is_read_whole(tmp_path: Path) -> None:
    body = json.dumps({"keys": [KEY]}).encode()
    assert fetch_jwks(_served(tmp_path, body), 5.0, len(body)) == {"keys": [KEY]}


def test_a_document_one_byte_over_max_bytes_is_refused(tmp_path: Path) -> None:
    body = json.dumps({"keys": [KEY]}).encode()
    with pytest.raises(ValueError, match=rf"^the key set is larger than {len(body) - 1} bytes$"):
        fetch_jwks(_served(tmp_path, body), 5.0, len(body) - 1)


@pytest.mark.parametrize(
    "document",
    [
        [KEY],  # a list, not an object
        {"key": [KEY]},  # no `keys`
        {"keys": KEY},  # `keys` not a list
        {"keys": None},
        "keys",
    ],
)
def test_anything_but_an_object_with_a_keys_list_is_refused(tmp_path: Path, document: object) -> None:
    with pytest.raises(ValueError, match=r"^the key set is not a JWKS document$"):
        fetch_jwks(_served(tmp_path, json.dumps(document).encode()), 5.0, 10_000)


def test_an_empty_keys_list_is_a_document_the_verifier_then_finds_no_key_in(tmp_path: Path) -> None:
    assert fetch_jwks(_served(tmp_path, b'{"keys": []}'), 5.0, 100) == {"keys": []}


def test_what_is_not_json_is_refused_as_json_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Expecting value"):
        fetch_jwks(_served(tmp_path, b"<html>not a key set</html>"), 5.0, 100)


@contextmanager
def _peer(serve: Callable[[socket.socket], object]) -> Iterator[str]:
    """A loopback HTTP peer: `serve` gets each connection (closed after it returns); yields the
    URL. Stopping closes the listening socket, so a connection still served ends with it."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                serve(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/jwks.json"
    finally:
        stop.set()
        listener.close()


def _in_a_thread(work: Callable[[], object], *, bound_s: float = 20) -> BaseException | object:
    """`work()`'s result or exception, from a thread; fails the test if it takes over `bound_s`
    (what this checks is that it ends at all, not how fast)."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound_s)
    assert outcome, f"still running after {bound_s} s"
    return outcome[0]


def test_the_key_set_is_asked_for_as_json(tmp_path: Path) -> None:
    asked: list[bytes] = []
    body = json.dumps({"keys": [KEY]}).encode()

    def answer(conn: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(4096)
        asked.append(request)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        )
        conn.sendall(b"Connection: close\r\n\r\n" + body)

    with _peer(answer) as url:
        assert fetch_jwks(url, 5.0, 10_000) == {"keys": [KEY]}
    headers = [line.lower() for line in asked[0].split(b"\r\n")]
    assert b"accept: application/json" in headers


def test_a_peer_that_never_answers_is_given_up_on(tmp_path: Path) -> None:
    let_go = threading.Event()
    with _peer(lambda conn: let_go.wait(30)) as url:
        try:
            failed = _in_a_thread(lambda: fetch_jwks(url, 0.2, 10_000))
        finally:
            let_go.set()
    assert isinstance(failed, TimeoutError | OSError), failed
    assert "timed out" in str(failed)


def test_a_body_that_never_ends_is_read_only_up_to_the_bound(tmp_path: Path) -> None:
    def endless(conn: socket.socket) -> None:
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        try:
            while True:
                conn.sendall(b" " * 4096)
        except OSError:  # the client closed its end
            return

    with _peer(endless) as url:
        failed = _in_a_thread(lambda: fetch_jwks(url, 5.0, 10_000))
    assert isinstance(failed, ValueError), failed
    assert str(failed) == "the key set is larger than 10000 bytes"


def test_a_body_that_trickles_in_is_given_up_on_at_the_deadline(tmp_path: Path) -> None:
    """A peer that sends a byte now and then, each within the read timeout, does not keep the
    fetch's thread: the whole body must come within the timeout of the answer's headers. The
    fetch's clock is the test's: every look at it is a second later."""
    ticks = iter(range(1_000))
    let_go = threading.Event()

    def trickle(conn: socket.socket) -> None:
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(100_000):
            try:
                conn.sendall(b" ")
            except OSError:  # the client closed its end
                return
            if let_go.wait(0.01):
                return

    with _peer(trickle) as url:
        try:
            failed = _in_a_thread(lambda: fetch_jwks(url, 3.0, 10_000, clock=lambda: float(next(ticks))))
        finally:
            let_go.set()
    assert isinstance(failed, TimeoutError), failed
    assert str(failed) == "the key set did not arrive within 3 s"
    assert next(ticks) == 5  # the deadline read once, then one look per piece until past it
