"""Signals in virtual time (docs/wire.md): the first drains for exactly the grace, a second cancels at once.

The session runs in this process with `handle_signals=True`; the test signals its own process once
the session's signal watcher is waiting (trio then owns SIGTERM/SIGINT, so nothing is killed).
"""

from __future__ import annotations

import os
import signal

import pytest
import trio
import trio.testing

from mcp_suite.problems import INTERNAL_ERROR
from mcp_suite.settings import Settings
from tests.support.harness import open_session, ping_line


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """pytest-trio's, but virtual time leaps only after 0.1 s of real idleness: a signal the test
    sends reaches the session's watcher (through trio's wakeup socket) before the clock can leap
    past it. With the default of 0, a second signal was once seen only after the 300 s grace had
    run out in virtual time, when trio no longer owned SIGINT (a KeyboardInterrupt)."""
    return trio.testing.MockClock(autojump_threshold=0.1)


async def test_sigterm_lets_calls_run_for_the_5_s_grace_then_cancels_the_rest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    settings = Settings()
    assert settings.drain_grace_s == 5
    with trio.fail_after(600):
        async with open_session(settings=settings, handle_signals=True) as h:
            await h.initialize()
            quick = await h.call("sleep", {"seconds": 4.5, "tag": 1})
            slow = await h.call("sleep", {"seconds": 20, "tag": 2})
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            os.kill(os.getpid(), signal.SIGTERM)
            answers = {}
            for _ in range(2):
                message = await h.recv()
                answers[message["id"]] = (message, trio.current_time() - start)
            assert answers[quick][0]["result"]["structuredContent"] == {"tag": 1, "slept": 4.5}
            assert answers[quick][1] == pytest.approx(4.5)
            assert answers[slow][0]["error"]["code"] == INTERNAL_ERROR
            assert answers[slow][1] == pytest.approx(5)
            # The input is no longer read: this ping, sent after the signal, is never answered.
            await h.send_raw(ping_line("late"))
            await h.server_done.wait()
            assert await h.recv_line() is None
            assert h.log.cancelled == [2]


async def test_a_second_signal_cancels_in_flight_calls_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    settings = Settings(drain_grace_s=300, call_deadline_s=600)
    with trio.fail_after(600):
        async with open_session(settings=settings, handle_signals=True) as h:
            await h.initialize()
            calls = [await h.call("sleep", {"seconds": 500, "tag": n}) for n in range(3)]
            await trio.testing.wait_all_tasks_blocked()
            os.kill(os.getpid(), signal.SIGTERM)
            await trio.sleep(1)
            start = trio.current_time()
            os.kill(os.getpid(), signal.SIGINT)
            answers = [await h.recv() for _ in calls]
            assert trio.current_time() == start  # at once
            assert sorted(m["id"] for m in answers) == sorted(calls)
            assert {m["error"]["code"] for m in answers} == {INTERNAL_ERROR}
            await h.server_done.wait()
            assert sorted(h.log.cancelled) == [0, 1, 2]


async def test_a_signal_after_eof_cancels_the_drain_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    settings = Settings(drain_grace_s=300, call_deadline_s=600)
    with trio.fail_after(600):
        async with open_session(settings=settings, handle_signals=True) as h:
            await h.initialize()
            calls = [await h.call("sleep", {"seconds": 500, "tag": n}) for n in range(2)]
            await trio.testing.wait_all_tasks_blocked()
            await h.close_input()  # EOF starts the drain
            await trio.sleep(1)
            start = trio.current_time()
            os.kill(os.getpid(), signal.SIGTERM)  # the first signal, but during a drain
            answers = [await h.recv() for _ in calls]
            assert trio.current_time() == start  # at once, not after the 300 s grace
            assert {m["error"]["code"] for m in answers} == {INTERNAL_ERROR}
            await h.server_done.wait()
            assert sorted(h.log.cancelled) == [0, 1]


async def test_two_signals_end_a_session_whose_client_never_reads(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(600):
        async with open_session(transport="lockstep", handle_signals=True) as h:
            await h.initialize()
            await h.call("sleep", {"seconds": 500, "tag": 1})
            # Fill everything between the dispatcher and the client, who reads nothing from now on.
            async with trio.open_nursery() as nursery:

                async def flood() -> None:
                    await trio.lowlevel.checkpoint()
                    for n in range(100_000):
                        await h.send_raw(ping_line(n))

                nursery.start_soon(flood)
                await trio.testing.wait_all_tasks_blocked()
                os.kill(os.getpid(), signal.SIGTERM)
                await trio.testing.wait_all_tasks_blocked()
                os.kill(os.getpid(), signal.SIGTERM)
                # Virtual time: were the session stuck for ever, the clock would run to the fail_after.
                await h.server_done.wait()
                nursery.cancel_scope.cancel()
