"""Over stdio, a stderr read more slowly than the server answers holds the client back once audit
records fill MCP_LOG_BUFFER_BYTES (issue 52): its next request waits, unread, and no record is lost;
once stderr is read, everything is answered and every record written."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest
import trio

from mcp_suite.runtime.log_sink import configure_logging, current_sink, shutdown_logging
from tests.support.harness import open_session


class BlockedStream(io.StringIO):
    """A stderr whose reader has stopped reading until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.release.wait(timeout=30)
        return super().write(text)


@pytest.fixture
def stderr() -> Iterator[BlockedStream]:
    ours, root = logging.getLogger("mcp_suite"), logging.getLogger()
    saved = (ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level)
    stream = BlockedStream()
    configure_logging("INFO", stream, buffer_bytes=16_384)
    yield stream
    stream.release.set()
    shutdown_logging()
    logging.captureWarnings(False)
    ours.handlers[:], ours.level, ours.propagate, root.handlers[:], root.level = saved


async def test_a_lagging_stderr_holds_the_stdio_client_back_and_loses_no_record(
    stderr: BlockedStream,
) -> None:
    answered = 0
    with trio.fail_after(30):
        async with open_session() as h:
            await h.initialize()
            stalled = False
            for n in range(1, 1_000):
                await h.send_request("ping", request_id=n)
                with trio.move_on_after(1):
                    assert (await h.response(n))["result"] == {}
                    answered = n
                    continue
                stalled = True  # the sink is full of records: this request waits, unread
                break
            assert stalled, "the records never filled the sink"
            sink = current_sink()
            assert sink is not None
            assert sink.statistics().requests_refused >= 1
            stderr.release.set()  # the reader catches up: the waiting request is answered
            assert (await h.response(answered + 1))["result"] == {}
    shutdown_logging()
    records = [json.loads(line) for line in stderr.getvalue().splitlines()]
    pings = [r["id"] for r in records if r.get("event") == "request" and r.get("method") == "ping"]
    assert pings == list(range(1, answered + 2))
