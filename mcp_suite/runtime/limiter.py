"""The concurrency limiter around tool calls (SPEC §5.2): N slots, FIFO, bounded wait, bounded queue.

A call that cannot get a slot within `wait_s` gets `concurrency-limit`; when `max_waiters` calls are
already queued, the next one is refused at once, so a flood cannot grow memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from mcp_suite.problems import ConcurrencyLimitError

__all__ = ["CallLimiter"]


class CallLimiter:
    __slots__ = ("_limiter", "_max_waiters", "_wait_s", "waiting")

    def __init__(self, *, slots: int, max_waiters: int, wait_s: float) -> None:
        # trio's CapacityLimiter hands tokens to waiters in FIFO order and never lets a newcomer
        # overtake a queued task, which is the fairness SPEC §5.2 asks for.
        self._limiter = trio.CapacityLimiter(slots)
        self._max_waiters = max_waiters
        self._wait_s = wait_s
        self.waiting = 0

    @property
    def running(self) -> int:
        return self._limiter.borrowed_tokens

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the duration of the block.

        Cancellation: cancelling a waiter removes it from the queue without taking a slot.
        """
        borrower = object()
        try:
            self._limiter.acquire_on_behalf_of_nowait(borrower)
        except trio.WouldBlock:
            if self.waiting >= self._max_waiters:
                raise ConcurrencyLimitError(
                    f"The server is busy: {self._limiter.total_tokens} calls are running and "
                    f"{self.waiting} are queued. Retry later.",
                    metadata={"queued": self.waiting, "slots": self._limiter.total_tokens},
                ) from None
            self.waiting += 1
            try:
                with trio.move_on_after(self._wait_s) as wait:
                    await self._limiter.acquire_on_behalf_of(borrower)
            finally:
                self.waiting -= 1
            if wait.cancelled_caught:
                raise ConcurrencyLimitError(
                    f"No call slot became free within {self._wait_s:g} s; retry later.",
                    metadata={"waited_s": self._wait_s, "slots": self._limiter.total_tokens},
                ) from None
        try:
            yield
        finally:
            self._limiter.release_on_behalf_of(borrower)
