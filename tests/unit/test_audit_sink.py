"""The stderr sink: bounded, never blocks its caller, batches lines, counts what it had to drop."""

from __future__ import annotations

import io
import json
import threading

from mcp_suite.runtime.audit import StderrSink


class BlockedStream(io.StringIO):
    """A stderr whose reader has stopped reading: writes block until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.writes = 0

    def write(self, text: str) -> int:
        self.release.wait(timeout=30)
        self.writes += 1
        return super().write(text)


def test_sink_writes_every_line_in_order() -> None:
    stream = BlockedStream()
    stream.release.set()
    sink = StderrSink(stream, capacity=100)
    for n in range(50):
        sink.write_line(f"line {n}")
    sink.close()
    assert stream.getvalue().splitlines() == [f"line {n}" for n in range(50)]
    assert stream.writes <= 50  # batched, never more writes than lines


def test_a_blocked_stderr_never_blocks_the_writer_and_drops_are_counted() -> None:
    stream = BlockedStream()
    sink = StderrSink(stream, capacity=10)
    for n in range(1_000):  # returns at once although nothing can be written
        sink.write_line(f"line {n}")
    assert sink.dropped >= 1_000 - 10 - 10  # at most one batch in flight plus the buffer
    stream.release.set()
    sink.close()
    lines = stream.getvalue().splitlines()
    notice = json.loads(lines[-1])
    assert notice["level"] == "warning"
    assert notice["msg"].endswith("log line(s) dropped")
    assert len(lines) <= 10 + 10 + 1
