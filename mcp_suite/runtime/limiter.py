"""The concurrency limiter around tool calls (docs/wire.md): N slots, FIFO, bounded wait, bounded queue.

A place in line is reserved synchronously by the dispatcher, in arrival order (`reserve`), because
trio deliberately randomises the order in which newly spawned tasks first run: a queue joined from
inside the call tasks would not be FIFO. The call task then waits for its ticket (`hold`). A call
that cannot get a slot within `wait_s` of arriving gets `concurrency-limit`; when `max_waiters` calls
are already queued, the next one is refused at once, so a flood cannot grow memory.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

import trio

from mcp_suite.problems import ConcurrencyLimitError

__all__ = ["CallLimiter", "CallLimiterStatistics", "Ticket"]


class Ticket:
    """A place in line. `granted` once it holds a slot; `abandoned` if it left the queue."""

    __slots__ = ("abandoned", "deadline", "event", "granted")

    def __init__(self, deadline: float) -> None:
        self.granted = False
        self.abandoned = False
        self.deadline = deadline
        self.event: trio.Event | None = None  # made only for a ticket that has to wait


@dataclass(frozen=True, slots=True)
class CallLimiterStatistics:
    """What `CallLimiter.statistics()` returns: the calls holding a slot and those in line, now."""

    running: int
    waiting: int


class CallLimiter:
    __slots__ = ("_free", "_max_waiters", "_queue", "_slots", "_wait_s")

    def __init__(self, *, slots: int, max_waiters: int, wait_s: float) -> None:
        self._slots = slots
        self._free = slots
        self._max_waiters = max_waiters
        self._wait_s = wait_s
        # Every ticket in the queue still waits: `release` takes an abandoned one out at once, so the
        # line is the queue itself.
        self._queue: collections.deque[Ticket] = collections.deque()

    def statistics(self) -> CallLimiterStatistics:
        return CallLimiterStatistics(running=self._slots - self._free, waiting=len(self._queue))

    def reserve(self) -> Ticket:
        """Take a slot now or a place at the end of the queue. Not a checkpoint.

        Raises `ConcurrencyLimitError` at once when the queue is full.
        """
        ticket = Ticket(trio.current_time() + self._wait_s)
        if self._free > 0 and not self._queue:
            self._free -= 1
            ticket.granted = True
            return ticket
        waiting = len(self._queue)
        if waiting >= self._max_waiters:
            raise ConcurrencyLimitError(
                f"The server is busy: {self._slots} calls are running and {waiting} are queued. Retry later.",
                metadata={"queued": waiting, "slots": self._slots},
            )
        ticket.event = trio.Event()
        self._queue.append(ticket)
        return ticket

    async def wait(self, ticket: Ticket) -> None:
        """Return once `ticket` holds a slot; the caller must `release` it in a `finally`.

        Raises `ConcurrencyLimitError` when the slot did not come within `wait_s` of arrival.
        Cancellation: a cancelled waiter must still be released; `release` then leaves the queue
        (or, if a slot was granted at the same moment, passes it on), so no slot is ever lost.
        """
        if ticket.granted:
            await trio.lowlevel.checkpoint()
            return
        with trio.move_on_at(ticket.deadline):
            assert ticket.event is not None  # queued tickets have one
            await ticket.event.wait()
        if not ticket.granted:
            raise ConcurrencyLimitError(
                f"No call slot became free within {self._wait_s:g} s; retry later.",
                metadata={"waited_s": self._wait_s, "slots": self._slots},
            )

    def release(self, ticket: Ticket) -> None:
        """Give up `ticket` (whether it holds a slot or still waits). Idempotent."""
        if ticket.granted:
            ticket.granted = False
            ticket.abandoned = True
            self._hand_on()
        elif not ticket.abandoned:
            # Leave the line now (not when it reaches the front): a client that queues and
            # cancels calls over and over must not grow the queue beyond `max_waiters`.
            ticket.abandoned = True
            self._queue.remove(ticket)

    def _hand_on(self) -> None:
        if not self._queue:
            self._free += 1
            return
        nxt = self._queue.popleft()
        nxt.granted = True
        assert nxt.event is not None
        nxt.event.set()
