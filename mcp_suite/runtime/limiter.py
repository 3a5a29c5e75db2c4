"""The concurrency limiter around tool calls (docs/wire.md): N slots, at most M of them per caller,
bounded wait, bounded queue, and waiting callers served in turn.

A place in line is reserved synchronously by the dispatcher, in arrival order (`reserve`), because
trio deliberately randomises the order in which newly spawned tasks first run: a queue joined from
inside the call tasks would not be FIFO. The call task then waits for its ticket (`wait`). A call
that cannot get a slot within `wait_s` of arriving gets `concurrency-limit`.

Fair by construction (issues 47 and 52): the slots are shared by `mcp_suite.turns.Turns` (each
caller, an HTTP token's subject, holds at most `per_caller` and waits in a line of its own; a freed
slot goes to the waiting caller holding fewest, in turn), and so is the waiting room: at most
`max_waiters` calls wait, and when they do, a caller whose line is shorter than the longest takes
the place of that line's last call (which gets `concurrency-limit` at once), so a few callers
filling the room leave a newcomer a place; a call of a caller with the longest line is refused at
once, so a flood cannot grow memory (bench_fairness).
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

from mcp_suite.problems import ConcurrencyLimitError
from mcp_suite.turns import Ticket, Turns

__all__ = ["CallLimiter", "CallLimiterStatistics", "Ticket"]


@dataclass(frozen=True, slots=True)
class CallLimiterStatistics:
    """What `CallLimiter.statistics()` returns: the calls holding a slot and those in line, now."""

    running: int
    waiting: int


class CallLimiter:
    __slots__ = ("_max_waiters", "_turns", "_wait_s")

    def __init__(self, *, slots: int, max_waiters: int, wait_s: float, per_caller: int | None = None) -> None:
        self._turns = Turns(slots, per_caller)
        self._max_waiters = max_waiters
        self._wait_s = wait_s

    def statistics(self) -> CallLimiterStatistics:
        return CallLimiterStatistics(running=self._turns.running, waiting=self._turns.waiting)

    def reserve(self, caller: str = "") -> Ticket:
        """Take a slot now or a place at the end of `caller`'s line. Not a checkpoint.

        Raises `ConcurrencyLimitError` at once when `max_waiters` tickets already wait and no line
        is longer than `caller`'s; otherwise the longest line's last ticket makes room.
        """
        turns = self._turns
        waiting = turns.waiting
        if not turns.free_for(caller) and waiting >= self._max_waiters and turns.push_out(caller) is None:
            raise ConcurrencyLimitError(
                f"The server is busy: {turns.running} calls are running and {waiting} are "
                "queued. Retry later.",
                metadata={"queued": waiting, "slots": turns.slots},
            )
        return turns.reserve(caller, trio.current_time() + self._wait_s)

    async def wait(self, ticket: Ticket) -> None:
        """Return once `ticket` holds a slot; the caller must `release` it in a `finally`.

        Raises `ConcurrencyLimitError` when the slot did not come within `wait_s` of arrival, or
        when another caller's call took the ticket's place in line.
        Cancellation: a cancelled waiter must still be released; `release` then leaves the queue
        (or, if a slot was granted at the same moment, passes it on), so no slot is ever lost.
        """
        with trio.move_on_at(ticket.deadline):
            await self._turns.wait(ticket)
        if ticket.pushed_out:
            raise ConcurrencyLimitError(
                "The server is busy: this call gave its place in the queue to another caller's "
                "(its caller had the most calls waiting). Retry later.",
                metadata={"slots": self._turns.slots},
            )
        if not ticket.granted:
            raise ConcurrencyLimitError(
                f"No call slot became free within {self._wait_s:g} s; retry later.",
                metadata={"waited_s": self._wait_s, "slots": self._turns.slots},
            )

    def release(self, ticket: Ticket) -> None:
        """Give up `ticket` (whether it holds a slot or still waits). Idempotent."""
        self._turns.release(ticket)
