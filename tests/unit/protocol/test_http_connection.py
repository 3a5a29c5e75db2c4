"""A connection's own decisions, without I/O (`protocol.connection`): what its first bytes open,
whether a write switches protocols, a refusal as HTTP/1.1 bytes, and the caps per peer and in all."""

from __future__ import annotations

import h11
import pytest

from mcp_suite.protocol.connection import (
    H2_REFUSAL,
    ConnectionStatistics,
    ConnectionTable,
    Opening,
    opening_of,
    response_bytes,
    switches_protocol,
)
from mcp_suite.protocol.exchange import Reply, connection_refused

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@pytest.mark.parametrize(
    ("head", "opening"),
    [
        (b"", Opening.UNDECIDED),
        (b"P", Opening.UNDECIDED),
        (PREFACE[:15], Opening.UNDECIDED),
        (PREFACE[:16], Opening.HTTP2),
        (PREFACE, Opening.HTTP2),
        (b"POST /mcp HTTP/1.1\r\n", Opening.HTTP1),
        (b"PRI /mcp HTTP/1.1\r\n", Opening.HTTP1),
        (b"GET / HTTP/1.1\r\n\r\n", Opening.HTTP1),
    ],
)
def test_the_first_bytes_open_http2_only_with_the_preface_s_first_line(head: bytes, opening: Opening) -> None:
    assert opening_of(head) is opening


def test_h11_sees_no_request_in_bytes_that_leave_the_opening_undecided() -> None:
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(PREFACE[:15])
    assert connection.next_event() is h11.NEED_DATA


def test_the_refusal_of_http2_is_settings_then_goaway_http_1_1_required() -> None:
    settings, goaway = H2_REFUSAL[:9], H2_REFUSAL[9:]
    assert (settings[:3], settings[3]) == (b"\x00\x00\x00", 0x4)
    assert (int.from_bytes(goaway[:3], "big"), goaway[3], goaway[5:9]) == (8, 0x7, b"\x00\x00\x00\x00")
    assert (int.from_bytes(goaway[9:13], "big"), int.from_bytes(goaway[13:17], "big")) == (0, 0xD)


def test_only_an_informational_101_switches_protocols() -> None:
    assert switches_protocol(b"HTTP/1.1 101 \r\nupgrade: h2c\r\n\r\n")
    assert not switches_protocol(b"HTTP/1.1 100 \r\n\r\n")
    assert not switches_protocol(b"HTTP/1.1 200 \r\ncontent-length: 3\r\n\r\n101")
    assert not switches_protocol(b'{"jsonrpc":"2.0"}')


def test_a_refusal_is_written_as_a_whole_http_1_1_answer_h11_reads() -> None:
    reply = connection_refused("at most 1 connections at once from one address", "127.0.0.1")
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(response_bytes(reply))
    response = client.next_event()
    assert isinstance(response, h11.Response)
    assert (response.status_code, response.reason) == (429, b"Too Many Requests")
    assert dict(response.headers)[b"connection"] == b"close"
    body = client.next_event()
    assert isinstance(body, h11.Data)
    assert bytes(body.data) == reply.body
    assert isinstance(client.next_event(), h11.EndOfMessage)
    assert response_bytes(Reply(204)) == b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n"


def test_connections_are_capped_per_peer_and_in_all_and_released() -> None:
    table = ConnectionTable(per_peer=2, total=3)
    assert table.admit("a") is None
    assert table.admit("a") is None
    assert table.admit("a") == "at most 2 connections at once from one address"
    assert table.admit("b") is None
    assert table.admit("c") == "the server holds its maximum of 3 connections"
    assert table.statistics() == ConnectionStatistics(connections=3, peers=2)
    table.release("a")
    assert table.admit("c") is None
    table.release("b")
    assert table.statistics() == ConnectionStatistics(connections=2, peers=2)
    for peer in ("a", "c"):
        table.release(peer)
    assert table.statistics() == ConnectionStatistics(connections=0, peers=0)
