"""The concurrency limiter (docs/wire.md): seen by a client (16 slots, FIFO, 5 s of waiting, 4 x 16
waiters), then driven directly."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_suite.problems import ConcurrencyLimitError
from mcp_suite.runtime.limiter import CallLimiter, CallLimiterStatistics
from mcp_suite.settings import Settings
from tests.support.harness import Harness, open_session
from tests.support.wire import slug_of

SETTINGS = Settings(max_concurrency=16, queue_wait_s=5, call_deadline_s=30)


def _call_line(request_id: int, seconds: float) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"seconds": seconds, "tag": request_id}},
    }
    return json.dumps(message).encode() + b"\n"


async def _pipeline(h: Harness, calls: list[tuple[int, float]]) -> None:
    """Send the calls in one write, as a client pipelining requests does."""
    await h.send_raw(b"".join(_call_line(request_id, seconds) for request_id, seconds in calls))


def _slug(response: dict[str, Any]) -> str:
    result = response["result"]
    assert result["isError"] is True, response
    return slug_of(json.loads(result["content"][0]["text"]))


async def test_waiters_get_slots_in_arrival_order_and_late_ones_get_concurrency_limit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(120):
        async with open_session(settings=SETTINGS) as h:
            await h.initialize()
            start = trio.current_time()
            # 16 holders; holder k frees its slot at t = k/4, one at a time, so each grant is visible.
            holders = [(100 + k, k / 4) for k in range(1, 17)]
            await _pipeline(h, holders)
            await trio.testing.wait_all_tasks_blocked()
            assert h.session is not None
            assert h.session.limiter.statistics().running == 16
            # 20 waiters arrive together (one write); each would hold its slot for 10 s.
            await _pipeline(h, [(n, 10) for n in range(1, 21)])
            await trio.testing.wait_all_tasks_blocked()
            assert h.session.limiter.statistics().waiting == 20
            assert trio.current_time() == start

            responses: dict[int, dict[str, Any]] = {}
            arrived: dict[int, float] = {}
            for _ in range(16 + 20):
                message = await h.recv()
                responses[message["id"]] = message
                arrived[message["id"]] = trio.current_time() - start

            # FIFO: the k-th freed slot went to the k-th waiter in arrival order.
            assert h.log.started[16:] == list(range(1, 17))
            for n in range(1, 17):
                assert h.log.start_times[n] - start == pytest.approx(n / 4)
                assert responses[n]["result"]["structuredContent"] == {"tag": n, "slept": 10.0}
            # The rest were still waiting after 5 s.
            for n in range(17, 21):
                assert _slug(responses[n]) == "concurrency-limit"
                assert arrived[n] == pytest.approx(5)
                assert n not in h.log.started
            assert all(responses[k]["result"]["isError"] is False for k, _ in holders)
            assert h.session.limiter.statistics().waiting == 0


async def test_waiters_beyond_four_times_the_slots_are_refused_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(120):
        async with open_session(settings=SETTINGS) as h:
            await h.initialize()
            await _pipeline(h, [(100 + k, 20) for k in range(16)])
            await trio.testing.wait_all_tasks_blocked()
            await _pipeline(h, [(n, 1) for n in range(1, 65)])  # exactly 4 x 16 waiters
            await trio.testing.wait_all_tasks_blocked()
            assert h.session is not None
            assert h.session.limiter.statistics().waiting == 64
            start = trio.current_time()
            await _pipeline(h, [(n, 1) for n in range(65, 70)])  # one too many, five times
            refused = [await h.recv() for _ in range(5)]
            assert trio.current_time() == start  # at once, not after the 5 s wait
            assert sorted(r["id"] for r in refused) == list(range(65, 70))
            for response in refused:
                assert _slug(response) == "concurrency-limit"
            assert h.session.limiter.statistics().waiting == 64
            # The queued ones give up at t=5; the holders finish at t=20, undisturbed.
            timed_out = [await h.recv() for _ in range(64)]
            assert trio.current_time() - start == pytest.approx(5)
            assert sorted(r["id"] for r in timed_out) == list(range(1, 65))
            assert {_slug(r) for r in timed_out} == {"concurrency-limit"}
            holders = [await h.recv() for _ in range(16)]
            assert {r["id"] for r in holders} == set(range(100, 116))
            assert all(r["result"]["isError"] is False for r in holders)
            assert len(h.log.started) == 16


async def test_a_cancelled_waiter_leaves_the_queue_and_no_slot_is_lost(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(120):
        async with open_session(settings=SETTINGS) as h:
            await h.initialize()
            start = trio.current_time()
            await _pipeline(h, [(100 + k, 1) for k in range(16)])  # all 16 slots free up at t=1
            await _pipeline(h, [(1, 2), (2, 2), (3, 2)])
            await trio.testing.wait_all_tasks_blocked()
            assert h.session is not None
            assert h.session.limiter.statistics().waiting == 3
            await h.notify("notifications/cancelled", {"requestId": 2})
            await trio.testing.wait_all_tasks_blocked()
            assert h.session.limiter.statistics().waiting == 2
            # Cancel another waiter at the very moment the slots are handed out.
            await trio.sleep(1 - (trio.current_time() - start))
            await h.notify("notifications/cancelled", {"requestId": "3"})
            answered = {}
            for _ in range(16 + 1):
                message = await h.recv()
                answered[message["id"]] = message
            assert 2 not in h.log.started
            assert answered[1]["result"]["structuredContent"] == {"tag": 1, "slept": 2.0}
            # 3 either never started or was cancelled while running: in both cases, no answer.
            leftovers = await _drain_idle(h)
            assert 3 not in answered
            assert leftovers == []
            assert h.session.limiter.statistics().running == 0
            assert h.session.limiter.statistics().waiting == 0
            # Every slot is still there: 16 new calls all start at once.
            now = trio.current_time()
            await _pipeline(h, [(200 + k, 1) for k in range(16)])
            for _ in range(16):
                assert (await h.recv())["result"]["isError"] is False
            assert all(h.log.start_times[200 + k] == now for k in range(16))


async def _drain_idle(h: Harness) -> list[dict[str, Any]]:
    """Wait until no call is in flight; return nothing if no stray answer came meanwhile."""
    assert h.session is not None
    await h.session.all_idle.wait()
    await trio.testing.wait_all_tasks_blocked()
    ping = await h.send_request("ping", request_id="idle-check")
    extra = []
    while (message := await h.recv())["id"] != ping:
        extra.append(message)
    return extra


# --- the limiter itself, driven directly ----------------------------------------------------------


async def test_a_full_queue_is_refused_with_the_counts_in_detail_and_metadata() -> None:
    limiter = CallLimiter(slots=2, max_waiters=3, wait_s=5)
    held = [limiter.reserve() for _ in range(2)]
    queued = [limiter.reserve() for _ in range(3)]
    assert limiter.statistics() == CallLimiterStatistics(running=2, waiting=3)
    with pytest.raises(ConcurrencyLimitError) as caught:
        limiter.reserve()
    assert caught.value.detail == "The server is busy: 2 calls are running and 3 are queued. Retry later."
    assert caught.value.metadata == {"queued": 3, "slots": 2}
    for ticket in queued + held:
        limiter.release(ticket)
    assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)


async def test_a_waiter_that_gets_no_slot_in_time_is_refused_with_the_wait_in_metadata(
    autojump_clock: trio.testing.MockClock,
) -> None:
    limiter = CallLimiter(slots=1, max_waiters=4, wait_s=2.5)
    held = limiter.reserve()
    late = limiter.reserve()
    start = trio.current_time()
    with pytest.raises(ConcurrencyLimitError) as caught:
        await limiter.wait(late)
    assert trio.current_time() - start == pytest.approx(2.5)
    assert caught.value.detail == "No call slot became free within 2.5 s; retry later."
    assert caught.value.metadata == {"waited_s": 2.5, "slots": 1}
    limiter.release(late)
    limiter.release(held)
    assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)


async def test_releasing_a_held_ticket_twice_frees_one_slot_only() -> None:
    limiter = CallLimiter(slots=2, max_waiters=4, wait_s=5)
    first, second = limiter.reserve(), limiter.reserve()
    limiter.release(first)
    limiter.release(first)
    assert limiter.statistics() == CallLimiterStatistics(running=1, waiting=0)
    limiter.release(second)
    limiter.release(second)
    assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)
    again = [limiter.reserve() for _ in range(2)]
    assert all(ticket.granted for ticket in again)
    assert not limiter.reserve().granted  # still two slots, not more


async def test_releasing_a_queued_ticket_twice_leaves_the_queue_once() -> None:
    limiter = CallLimiter(slots=1, max_waiters=4, wait_s=5)
    held = limiter.reserve()
    queued, behind = limiter.reserve(), limiter.reserve()
    limiter.release(queued)
    limiter.release(queued)
    assert limiter.statistics() == CallLimiterStatistics(running=1, waiting=1)
    limiter.release(held)  # the slot goes to the ticket behind, not to the one that left
    assert behind.granted
    assert not queued.granted
    assert limiter.statistics() == CallLimiterStatistics(running=1, waiting=0)
    limiter.release(behind)
    assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)


# --- fair by caller (issue 47) ---------------------------------------------------------------------


async def test_a_caller_holds_at_most_its_share_and_the_others_take_the_rest_at_once() -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=4, max_waiters=16, wait_s=5, per_caller=2)
        mine = [limiter.reserve("a") for _ in range(3)]
        assert [t.granted for t in mine] == [True, True, False]  # a's third waits though slots are free
        assert limiter.statistics() == CallLimiterStatistics(running=2, waiting=1)
        theirs = [limiter.reserve("b") for _ in range(2)]
        assert all(t.granted for t in theirs)  # b does not wait behind a's line
        assert limiter.statistics() == CallLimiterStatistics(running=4, waiting=1)
        limiter.release(theirs[0])  # a is at its share: the slot stays free
        assert not mine[2].granted
        assert limiter.statistics() == CallLimiterStatistics(running=3, waiting=1)
        limiter.release(mine[0])  # now a is under it: its next call runs
        assert [t.granted for t in mine] == [False, True, True]
        assert limiter.statistics() == CallLimiterStatistics(running=3, waiting=0)


async def test_waiting_callers_are_served_in_turn_one_call_each() -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=1, max_waiters=16, wait_s=5, per_caller=1)
        held = limiter.reserve("x")
        a = [limiter.reserve("a") for _ in range(3)]  # a queues three calls first
        b = [limiter.reserve("b") for _ in range(2)]
        c = limiter.reserve("c")
        order: list[str | None] = []
        running = held
        for _ in range(6):
            limiter.release(running)
            (running,) = [t for t in (*a, *b, c) if t.granted]
            order.append(running.caller)
        assert order == ["a", "b", "c", "a", "b", "a"]
        limiter.release(running)
        assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)


async def test_a_caller_that_leaves_the_line_loses_its_turn_and_keeps_no_line() -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=1, max_waiters=16, wait_s=5, per_caller=1)
        held = limiter.reserve("x")
        a1, a2, b = limiter.reserve("a"), limiter.reserve("a"), limiter.reserve("b")
        limiter.release(a1)  # a's head leaves; a2 keeps a's turn
        limiter.release(a2)  # a's line is empty: a has no turn at all
        limiter.release(held)
        assert b.granted
        limiter.release(b)
        assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)
        # And a caller that comes back later gets a slot at once.
        assert limiter.reserve("a").granted


async def test_the_caller_at_its_share_is_skipped_and_keeps_its_turn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=3, max_waiters=16, wait_s=5, per_caller=2)
        a_running = [limiter.reserve("a") for _ in range(2)]
        b_running = limiter.reserve("b")
        a_waiting, b_waiting = limiter.reserve("a"), limiter.reserve("b")
        limiter.release(b_running)  # a's line is first, but a holds its share: b's waiter runs
        assert (a_waiting.granted, b_waiting.granted) == (False, True)
        limiter.release(a_running[0])
        assert a_waiting.granted
        with trio.fail_after(1):
            await limiter.wait(a_waiting)
        for ticket in (*a_running, a_waiting, b_waiting):
            limiter.release(ticket)
        assert limiter.statistics() == CallLimiterStatistics(running=0, waiting=0)


async def test_without_a_share_every_caller_is_one_fifo_line() -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=2, max_waiters=4, wait_s=5)
        first = [limiter.reserve() for _ in range(4)]
        assert [t.granted for t in first] == [True, True, False, False]
        limiter.release(first[0])
        assert [t.granted for t in first[2:]] == [True, False]


# --- the waiting room shared by caller (issue 52) ---------------------------------------------------


async def test_a_newcomer_to_a_full_queue_takes_the_last_place_of_the_longest_line(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(30):
        limiter = CallLimiter(slots=2, max_waiters=5, wait_s=10, per_caller=1)
        held = [limiter.reserve("a"), limiter.reserve("b")]
        a = [limiter.reserve("a") for _ in range(3)]
        b = [limiter.reserve("b") for _ in range(2)]
        assert limiter.statistics() == CallLimiterStatistics(running=2, waiting=5)
        newcomer = limiter.reserve("c")  # the room is full: a's last place is given to c
        assert limiter.statistics() == CallLimiterStatistics(running=2, waiting=5)
        with pytest.raises(ConcurrencyLimitError) as caught:
            await limiter.wait(a[2])
        assert trio.current_time() == 0  # at once, not after the wait
        assert caught.value.detail == (
            "The server is busy: this call gave its place in the queue to another caller's (its "
            "caller had the most calls waiting). Retry later."
        )
        assert caught.value.metadata == {"slots": 2}
        limiter.release(a[2])
        assert limiter.statistics().waiting == 5
        limiter.release(held[0])  # a and c hold none: a's line is first in turn
        limiter.release(held[1])  # b's line came before c's
        assert [t.granted for t in (a[0], b[0], newcomer)] == [True, True, False]
        limiter.release(a[0])  # c's line is next in turn now, and c holds none
        assert newcomer.granted
        await limiter.wait(newcomer)
        assert [t.pushed_out for t in (a[1], b[1])] == [False, False]


async def test_a_full_queue_refuses_the_caller_with_the_longest_line_at_once() -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=1, max_waiters=2, wait_s=5, per_caller=1)
        limiter.reserve("a")
        queued = [limiter.reserve("a"), limiter.reserve("b")]
        with pytest.raises(ConcurrencyLimitError):
            limiter.reserve("a")  # a's line is as long as any: its own call is refused
        with pytest.raises(ConcurrencyLimitError):
            limiter.reserve("b")
        assert not any(t.pushed_out for t in queued)
        assert not limiter.reserve("c").granted  # c has no line: a's, first in turn, gives its place
        assert [t.pushed_out for t in queued] == [True, False]


async def test_a_full_queue_refuses_a_caller_at_its_share_though_a_slot_is_free() -> None:
    with trio.fail_after(5):
        limiter = CallLimiter(slots=2, max_waiters=1, wait_s=5, per_caller=1)
        limiter.reserve("a")
        queued = limiter.reserve("a")  # the room's one place; the second slot stays free
        assert limiter.statistics() == CallLimiterStatistics(running=1, waiting=1)
        with pytest.raises(ConcurrencyLimitError):
            limiter.reserve("a")  # the free slot is not a's to take, and a's line is the longest
        assert limiter.statistics() == CallLimiterStatistics(running=1, waiting=1)
        assert not queued.pushed_out
        assert limiter.reserve("b").granted  # the free slot is another caller's at once
