"""The concurrency limiter around tool calls (docs/wire.md): N slots, at most M of them per caller,
bounded wait, bounded queue, and waiting callers served in turn.

A place in line is reserved synchronously by the dispatcher, in arrival order (`reserve`), because
trio deliberately randomises the order in which newly spawned tasks first run: a queue joined from
inside the call tasks would not be FIFO. The call task then waits for its ticket (`hold`). A call
that cannot get a slot within `wait_s` of arriving gets `concurrency-limit`; when `max_waiters` calls
are already queued, the next one is refused at once, so a flood cannot grow memory.

Fair by construction (issue 47): each caller (an HTTP token's subject; stdio has one) holds at most
`per_caller` slots and waits in a line of its own, FIFO; a freed slot goes to the head of the next
line in turn whose caller is under its share, and that caller's line then goes to the back. So one
caller using its whole share leaves the other slots to the others, and with every slot taken, a
caller that arrives waits for about one call to end, not for another caller's queue (bench_fairness).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

import trio

from mcp_suite.problems import ConcurrencyLimitError

__all__ = ["CallLimiter", "CallLimiterStatistics", "Ticket"]


class Ticket:
    """A place in line. `granted` once it holds a slot; `abandoned` if it left the queue."""

    __slots__ = ("abandoned", "caller", "deadline", "event", "granted")

    def __init__(self, caller: str, deadline: float) -> None:
        self.caller = caller
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
    __slots__ = ("_free", "_held", "_lines", "_max_waiters", "_per_caller", "_slots", "_wait_s", "_waiting")

    def __init__(self, *, slots: int, max_waiters: int, wait_s: float, per_caller: int | None = None) -> None:
        self._slots = slots
        self._free = slots
        self._per_caller = slots if per_caller is None else per_caller
        self._max_waiters = max_waiters
        self._wait_s = wait_s
        self._held: dict[str, int] = {}  # caller -> slots it holds (callers holding none are absent)
        # Every ticket in a line still waits: `release` takes an abandoned one out at once. A caller
        # has a line only while it has tickets waiting; the dict's order is the order of turns.
        self._lines: dict[str, collections.deque[Ticket]] = {}
        self._waiting = 0

    def statistics(self) -> CallLimiterStatistics:
        return CallLimiterStatistics(running=self._slots - self._free, waiting=self._waiting)

    def reserve(self, caller: str = "") -> Ticket:
        """Take a slot now or a place at the end of `caller`'s line. Not a checkpoint.

        Raises `ConcurrencyLimitError` at once when `max_waiters` tickets already wait.
        """
        ticket = Ticket(caller, trio.current_time() + self._wait_s)
        if self._free > 0 and caller not in self._lines and self._held.get(caller, 0) < self._per_caller:
            self._grant(ticket)
            return ticket
        waiting = self._waiting
        if waiting >= self._max_waiters:
            raise ConcurrencyLimitError(
                f"The server is busy: {self._slots - self._free} calls are running and {waiting} are "
                "queued. Retry later.",
                metadata={"queued": waiting, "slots": self._slots},
            )
        ticket.event = trio.Event()
        self._lines.setdefault(caller, collections.deque()).append(ticket)
        self._waiting += 1
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
            held = self._held[ticket.caller] - 1
            if held:
                self._held[ticket.caller] = held
            else:
                del self._held[ticket.caller]
            self._free += 1
            self._hand_on()
        elif not ticket.abandoned:
            # Leave the line now (not when it reaches the front): a client that queues and
            # cancels calls over and over must not grow the queue beyond `max_waiters`.
            ticket.abandoned = True
            line = self._lines[ticket.caller]
            line.remove(ticket)
            self._waiting -= 1
            if not line:
                del self._lines[ticket.caller]

    def _grant(self, ticket: Ticket) -> None:
        ticket.granted = True
        self._free -= 1
        self._held[ticket.caller] = self._held.get(ticket.caller, 0) + 1

    def _hand_on(self) -> None:
        """Give free slots to the heads of the lines, in turn, skipping callers at their share."""
        while self._free > 0:
            turn = next((c for c in self._lines if self._held.get(c, 0) < self._per_caller), None)
            if turn is None:
                return
            line = self._lines.pop(turn)
            nxt = line.popleft()
            self._waiting -= 1
            if line:
                self._lines[turn] = line  # its next call waits for its next turn
            self._grant(nxt)
            assert nxt.event is not None
            nxt.event.set()
