"""Regression: waiters that leave the line (cancelled) leave the queue at once.

Before, an abandoned ticket stayed in the limiter's deque until it reached the front, so a client
that queued calls and cancelled them, over and over while the slots stayed busy, grew the queue
without bound.
"""

from __future__ import annotations

import trio

from mcp_suite.runtime.limiter import CallLimiter


async def test_queued_then_cancelled_waiters_do_not_accumulate() -> None:
    with trio.fail_after(10):
        limiter = CallLimiter(slots=1, max_waiters=4, wait_s=100)
        held = limiter.reserve()
        assert held.granted
        patient = limiter.reserve()  # a waiter at the front that stays in line
        for _ in range(10_000):
            ticket = limiter.reserve()  # never refused: each waiter leaves before the next comes
            assert not ticket.granted
            limiter.release(ticket)  # what a cancelled call's task does
        assert limiter.statistics().waiting == 1  # the length of the line itself
        limiter.release(held)
        assert patient.granted
        limiter.release(patient)
        assert limiter.statistics().running == 0


async def test_the_slot_passes_over_a_waiter_that_left() -> None:
    with trio.fail_after(10):
        limiter = CallLimiter(slots=1, max_waiters=4, wait_s=100)
        held = limiter.reserve()
        first, second = limiter.reserve(), limiter.reserve()
        limiter.release(first)  # leaves the line
        limiter.release(held)
        assert second.granted
        assert not first.granted
        await limiter.wait(second)
        limiter.release(second)
        assert limiter.statistics().running == 0
