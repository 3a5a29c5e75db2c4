"""Newline framing of the stdio byte stream (docs/wire.md). No I/O, no trio: bytes in, frames out.

`LineDecoder.feed()` turns any chunking of the input into the same sequence of events. A line longer
than `max_frame_bytes` is never buffered whole: once the limit is passed, the decoder stops keeping
bytes and only looks for the next newline, then reports one `OversizedFrame` with the line's first
`HEAD_BYTES` bytes and its last `TAIL_BYTES` (enough to read a request id that comes first, as the
Python SDK writes it, or last, as the TypeScript SDKs do; never the whole line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "Frame", "FrameEvent", "LineDecoder", "OversizedFrame"]

# How much of a discarded line's start and end is kept to find its `id` (the error then names the
# request, and the client stops waiting for it).
HEAD_BYTES: Final = 1024
TAIL_BYTES: Final = 1024


@dataclass(frozen=True, slots=True)
class Frame:
    """One complete line, without its newline (and without one trailing CR)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """A line longer than the limit was discarded while it streamed; `size` counts what was seen,
    `head` holds its first `HEAD_BYTES` bytes, `tail` its last `TAIL_BYTES`."""

    size: int
    head: bytes = b""
    tail: bytes = b""


FrameEvent = Frame | OversizedFrame


class LineDecoder:
    """Incremental splitter of `\\n`-terminated lines with a hard size cap.

    Limits: holds at most `max_frame_bytes + 1` bytes (the +1 lets a trailing CR be stripped from a
    line of exactly the limit) plus the chunk being fed.
    """

    __slots__ = ("_buffer", "_discarded", "_discarding", "_head", "_max", "_tail")

    def __init__(self, max_frame_bytes: int) -> None:
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._discarding = False
        # Set when discarding starts and read only while it lasts, so never reset.
        self._discarded = 0
        self._head = b""
        self._tail = b""

    @property
    def buffered(self) -> int:
        """Bytes currently held (for tests and memory checks)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[FrameEvent]:
        events: list[FrameEvent] = []
        start = 0
        end = len(data)
        while start < end:
            newline = data.find(b"\n", start)
            if newline == -1:
                self._keep(data, start, end)
                break
            self._keep(data, start, newline)
            self._finish_line(events)
            start = newline + 1
        return events

    def feed_eof(self) -> None:
        """EOF: a partial last line is dropped (docs/wire.md), nothing is reported for it."""
        self._buffer.clear()
        self._discarding = False

    # -- internals ----------------------------------------------------------------------------

    def _keep(self, data: bytes, start: int, stop: int) -> None:
        if self._discarding:
            self._discarded += stop - start
            if len(self._head) < HEAD_BYTES:
                self._head += data[start : min(stop, start + HEAD_BYTES - len(self._head))]
            self._tail = (self._tail + data[max(start, stop - TAIL_BYTES) : stop])[-TAIL_BYTES:]
            return
        room = self._max + 1 - len(self._buffer)
        if stop - start <= room:
            self._buffer += data[start:stop]
            return
        # Over the limit: stop buffering, remember only how much we have seen.
        self._discarded = len(self._buffer) + (stop - start)
        head = bytes(self._buffer[:HEAD_BYTES])
        self._head = head + data[start : min(stop, start + HEAD_BYTES - len(head))]
        kept = bytes(self._buffer[-TAIL_BYTES:])
        self._tail = (kept + data[max(start, stop - TAIL_BYTES) : stop])[-TAIL_BYTES:]
        self._buffer.clear()
        self._discarding = True

    def _finish_line(self, events: list[FrameEvent]) -> None:
        if self._discarding:
            events.append(OversizedFrame(self._discarded, self._head, self._tail))
            self._discarding = False
            return
        line = bytes(self._buffer)
        self._buffer.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self._max:
            events.append(OversizedFrame(len(line), line[:HEAD_BYTES], line[-TAIL_BYTES:]))
            return
        if not line.strip(b" \t\r"):
            return  # blank lines are ignored
        events.append(Frame(line))
