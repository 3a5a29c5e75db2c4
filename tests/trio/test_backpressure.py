"""Memory stays bounded whatever the client does (docs/wire.md): a flood, a client that never reads.

Both tests use the lockstep transport, which buffers nothing: like a pipe with no room, a send waits
until the other side receives. So whatever the process holds beyond the test's own small bookkeeping
is held by the server.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator

import psutil
import pytest
import trio
import trio.testing

from tests.support.harness import Harness, open_session, ping_line
from tests.support.wire import check_line

FLOOD = 100_000
BATCH = 200
# Long ids make every request and every response ~300 bytes, so holding the flood's responses alone
# would take 100,000 x 300 B = 30 MB (measured: a client that keeps every line grows the process by
# ~32 MB). The server holds at most its bounded channels (16 chunk-batches in, 64 replies out, one
# write batch): a few MB at worst, ~2 MB measured.
_PAD = "x" * 250
FLOOD_GROWTH_BOUND = 10_000_000


def _request_line(n: int) -> bytes:
    request_id = f"{n:06d}-{_PAD}"
    if n % 100 == 0:
        # One in a hundred is a tool call (a task, the limiter), the rest are inline pings.
        params = {"name": "echo", "arguments": {"text": "x"}}
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    else:
        message = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    return json.dumps(message).encode() + b"\n"


def _batches(total: int) -> Iterator[bytes]:
    for first in range(0, total, BATCH):
        yield b"".join(_request_line(n) for n in range(first, min(total, first + BATCH)))


async def _flood(h: Harness, total: int, counts: bytearray) -> int:
    """Send `total` requests while reading; count responses per id; returns the RSS growth seen."""
    process = psutil.Process()
    before = peak = process.memory_info().rss

    async def send_all() -> None:
        await trio.lowlevel.checkpoint()
        for batch in _batches(total):
            await h.send_raw(batch)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_all)
        for received in range(total):
            line = await h.recv_line()
            assert line is not None
            message = check_line(line)
            counts[int(message["id"][:6])] += 1
            if received % 1_000 == 0:
                peak = max(peak, process.memory_info().rss)
    return max(peak, process.memory_info().rss) - before


@pytest.mark.slow
async def test_a_flood_gets_exactly_one_response_per_request_in_bounded_memory() -> None:
    counts = bytearray(FLOOD)
    with trio.fail_after(300):
        async with open_session(transport="lockstep") as h:
            await h.initialize()
            await _flood(h, 5_000, bytearray(FLOOD))  # warm-up: steady-state allocations
            growth = await _flood(h, FLOOD, counts)
            assert counts == b"\x01" * FLOOD, "a request got no response, or more than one"
            assert growth < FLOOD_GROWTH_BOUND, f"the process grew by {growth} bytes"
            assert (await h.request("ping"))["result"] == {}
            assert await h.finish() == []


async def test_a_client_that_stops_reading_blocks_the_server_instead_of_growing_it() -> None:
    with trio.fail_after(120):
        async with open_session(transport="lockstep") as h:
            await h.initialize()
            sent = 0
            tracemalloc.start()
            try:
                baseline, _ = tracemalloc.get_traced_memory()

                async def keep_sending() -> None:
                    nonlocal sent
                    await trio.lowlevel.checkpoint()
                    for n in range(1, FLOOD + 1):
                        await h.send_raw(ping_line(n))
                        sent = n

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(keep_sending)
                    await trio.testing.wait_all_tasks_blocked()
                    stuck_at = sent
                    # Everything is blocked: the writer on stdout, so the dispatcher on the outbound
                    # channel, so the reader on the inbound one, so the client's send on stdin.
                    await trio.testing.wait_all_tasks_blocked()
                    assert sent == stuck_at
                    _, peak = tracemalloc.get_traced_memory()
                    # Bounded by the channels (16 in, 64 out) and one write batch, not by FLOOD.
                    assert stuck_at < 300, stuck_at
                    assert peak - baseline < 500_000, f"peak {peak - baseline} bytes"
                    # The client reads again: every request sent so far is answered, in order.
                    for n in range(1, stuck_at + 1):
                        message = await h.recv()
                        assert message == {"jsonrpc": "2.0", "id": n, "result": {}}
                    nursery.cancel_scope.cancel()
            finally:
                tracemalloc.stop()


async def test_a_client_that_never_reads_cannot_hold_the_session_open_after_eof(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # STYLE habit 1 and 2: every wait has a limit, and awaits in cleanup are bounded. After EOF the
    # drain flushes stdout; a client that never reads must not make that flush wait forever.
    with trio.fail_after(3_600):
        async with open_session(transport="lockstep") as h:
            await h.initialize()
            await h.send_raw(b"".join(ping_line(n) for n in range(1, 200)))
            await h.close_input()
            # Virtual time: if the session waited for ever, the clock would jump to the fail_after.
            await h.server_done.wait()
