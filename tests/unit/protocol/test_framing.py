"""Framing: any chunking gives the same frames; oversized lines are dropped without being buffered."""

from __future__ import annotations

from mcp_suite.protocol.framing import HEAD_BYTES, TAIL_BYTES, Frame, FrameEvent, LineDecoder, OversizedFrame

LIMIT = 1_048_576


def test_decoder_splits_lines_and_strips_one_cr() -> None:
    decoder = LineDecoder(LIMIT)
    assert decoder.feed(b'{"a":1}\r\n{"b":2}\n') == [Frame(b'{"a":1}'), Frame(b'{"b":2}')]


def test_decoder_ignores_blank_lines() -> None:
    decoder = LineDecoder(LIMIT)
    assert decoder.feed(b"\n\r\n  \n{}\n") == [Frame(b"{}")]


def test_decoder_keeps_partial_line_until_newline() -> None:
    decoder = LineDecoder(LIMIT)
    assert decoder.feed(b'{"a"') == []
    assert decoder.feed(b":1}\n") == [Frame(b'{"a":1}')]


def test_decoder_drops_partial_line_at_eof() -> None:
    decoder = LineDecoder(LIMIT)
    assert decoder.feed(b'{"a":') == []
    decoder.feed_eof()
    assert decoder.buffered == 0
    assert decoder.feed(b"{}\n") == [Frame(b"{}")]


def test_decoder_accepts_a_line_of_exactly_the_limit() -> None:
    decoder = LineDecoder(16)
    line = b"x" * 16
    assert decoder.feed(line + b"\r\n") == [Frame(line)]
    assert decoder.feed(line + b"\n") == [Frame(line)]


def test_decoder_drops_oversized_line_without_buffering_it() -> None:
    decoder = LineDecoder(LIMIT)
    chunk = b"x" * 65_536
    events = []
    for _ in range(40):  # 2.5 MiB of one line, streamed
        events += decoder.feed(chunk)
        assert decoder.buffered <= LIMIT + 1
    assert events == []
    assert decoder.buffered == 0  # once over the limit nothing is kept
    events = decoder.feed(b'xx\n{"next":true}\n')
    assert events == [
        OversizedFrame(40 * 65_536 + 2, b"x" * HEAD_BYTES, b"x" * TAIL_BYTES),
        Frame(b'{"next":true}'),
    ]


def test_decoder_reports_line_one_byte_over_the_limit() -> None:
    decoder = LineDecoder(16)
    assert decoder.feed(b"y" * 17 + b"\n{}\n") == [OversizedFrame(17, b"y" * 17, b"y" * 17), Frame(b"{}")]


def test_decoder_oversized_in_one_chunk_then_continues() -> None:
    decoder = LineDecoder(8)
    events = decoder.feed(b"a" * 100 + b"\n" + b"b" * 3 + b"\n")
    assert events == [OversizedFrame(100, b"a" * 100, b"a" * 100), Frame(b"bbb")]


def test_decoder_keeps_only_the_head_of_an_oversized_line_fed_in_small_pieces() -> None:
    decoder = LineDecoder(4096)
    line = b'{"jsonrpc":"2.0","id":42,' + b"z" * 10_000
    events = []
    for start in range(0, len(line), 700):
        events += decoder.feed(line[start : start + 700])
        assert decoder.buffered <= 4097
    events += decoder.feed(b"\n")
    assert events == [OversizedFrame(len(line), line[:HEAD_BYTES], line[-TAIL_BYTES:])]


def test_the_head_of_a_line_that_passed_a_small_limit_early_stops_at_head_bytes() -> None:
    decoder = LineDecoder(8)
    line = bytes(range(48, 58)) * 300  # 3,000 bytes: over the limit in the first piece
    events = []
    for start in range(0, len(line), 500):
        events += decoder.feed(line[start : start + 500])
    events += decoder.feed(b"\n")
    assert events == [OversizedFrame(len(line), line[:HEAD_BYTES], line[-TAIL_BYTES:])]


def test_each_oversized_line_reports_its_own_size_and_head() -> None:
    decoder = LineDecoder(8)
    first, second = b"a" * 2000, b"b" * 20
    events = decoder.feed(first[:1000]) + decoder.feed(first[1000:] + b"\n" + second[:10])
    events += decoder.feed(second[10:] + b"\n")
    assert events == [
        OversizedFrame(2000, b"a" * HEAD_BYTES, b"a" * TAIL_BYTES),
        OversizedFrame(20, second, second),
    ]
    decoder.feed(b"c" * 30)
    decoder.feed_eof()  # the partial oversized line is dropped, and forgotten
    assert decoder.feed(b"d" * 12 + b"\n") == [OversizedFrame(12, b"d" * 12, b"d" * 12)]


def test_only_spaces_tabs_and_carriage_returns_make_a_line_blank() -> None:
    # The JSON whitespace, less the newline that ends the line: a line of anything else (a form
    # feed, a vertical tab, a letter) is a frame, which the message guard then judges.
    decoder = LineDecoder(LIMIT)
    for byte in (bytes([value]) for value in range(256) if value != 0x0A):
        expected = [] if byte in (b" ", b"\t", b"\r") else [Frame(byte)]
        assert decoder.feed(byte + b"\n") == expected, byte


def test_the_tail_of_an_oversized_line_fed_in_pieces_is_exactly_its_last_bytes() -> None:
    # The TypeScript SDKs write `id` last: the tail is where a long request's id is.
    line = (
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"t":"' + bytes(range(65, 91)) * 700 + b'"},"id":7}'
    )
    for size in (1, 333, 1500, 5000):  # pieces smaller and larger than the tail, and than the limit
        decoder = LineDecoder(4096)
        events: list[FrameEvent] = []
        for start in range(0, len(line), size):
            events += decoder.feed(line[start : start + size])
        events += decoder.feed(b"\n")
        assert events == [OversizedFrame(len(line), line[:HEAD_BYTES], line[-TAIL_BYTES:])], size
