"""Property: the frames of a byte stream do not depend on how the stream is chunked."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_suite.protocol.framing import FrameEvent, LineDecoder
from tests.support.properties import security_property

lines = st.lists(
    st.one_of(
        st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
        st.just(b""),
        st.binary(min_size=60, max_size=120).map(lambda b: b.replace(b"\n", b"")),  # over the limit
    ),
    max_size=20,
)


def _decode(stream: bytes, cuts: list[int], limit: int) -> list[FrameEvent]:
    decoder = LineDecoder(limit)
    events: list[FrameEvent] = []
    previous = 0
    for cut in [*sorted(cuts), len(stream)]:
        events += decoder.feed(stream[previous:cut])
        assert decoder.buffered <= limit + 1
        previous = cut
    decoder.feed_eof()
    return events


@given(lines, st.lists(st.integers(min_value=0, max_value=4000), max_size=30), st.booleans())
def test_any_rechunking_yields_the_same_frames(parts: list[bytes], raw_cuts: list[int], crlf: bool) -> None:
    ending = b"\r\n" if crlf else b"\n"
    stream = b"".join(part + ending for part in parts)
    cuts = [c % (len(stream) + 1) for c in raw_cuts]
    whole = _decode(stream, [], 50)
    assert _decode(stream, cuts, 50) == whole
    one_byte = _decode(stream, list(range(len(stream))), 50)
    assert one_byte == whole


@security_property
@given(st.binary(max_size=200))
def test_decoder_never_holds_more_than_the_limit(data: bytes) -> None:
    decoder = LineDecoder(16)
    for i in range(0, len(data), 7):
        decoder.feed(data[i : i + 7])
        assert decoder.buffered <= 17
