"""Slots shared fairly by callers, the one rule the call slots and each SQL source's database
threads follow (issues 47 and 52): `Turns`.

A caller holds at most `share` slots; its further requests wait in a line of its own, FIFO. A freed
slot goes to the head of the line of the waiting caller that holds fewest slots, ties in turn (the
caller served goes to the back), skipping callers at their share. The caller `None` is the one
caller of a transport that tells none apart (stdio, MCP_HTTP_AUTH=none): there is no one to leave
slots to, so it has no share. A place is taken synchronously (`reserve`, in arrival order; a ticket
is granted at once or waits), awaited with `wait`, and given back with `release` in a `finally`.
No bound on the lines here: the call limiter bounds its own (runtime/limiter.py), and a source's
threads are asked for only by calls holding a call slot. No I/O; trio only for the events.
"""

from __future__ import annotations

import collections
import math

import trio

__all__ = ["Ticket", "Turns"]


class Ticket:
    """A place: `granted` once it holds a slot; `abandoned` once it has left (released, or pushed
    out of its line: `pushed_out`). `deadline` is the call limiter's (when it stops waiting)."""

    __slots__ = ("abandoned", "caller", "deadline", "event", "granted", "pushed_out")

    def __init__(self, caller: str | None, deadline: float = math.inf) -> None:
        self.caller = caller
        self.granted = False
        self.abandoned = False
        self.pushed_out = False
        self.deadline = deadline
        self.event: trio.Event | None = None  # made only for a ticket that has to wait


class Turns:
    """`slots` slots, at most `share` of them per caller (None: no share), served in turn."""

    __slots__ = ("_free", "_held", "_lines", "_share", "_waiting", "slots")

    def __init__(self, slots: int, share: int | None = None) -> None:
        self.slots = slots
        self._free = slots
        self._share = slots if share is None else share
        self._held: dict[str | None, int] = {}  # caller -> slots it holds (callers holding none are absent)
        # Every ticket in a line still waits: `release` takes an abandoned one out at once. A caller
        # has a line only while it has tickets waiting; the dict's order is the order of turns.
        self._lines: dict[str | None, collections.deque[Ticket]] = {}
        self._waiting = 0

    @property
    def running(self) -> int:
        return self.slots - self._free

    @property
    def waiting(self) -> int:
        return self._waiting

    def held_by(self, caller: str | None) -> int:
        return self._held.get(caller, 0)

    def free_for(self, caller: str | None) -> bool:
        """Whether `caller` would get a slot now: one is free and it is under its share. Not a
        checkpoint. (A caller under its share never waits while a slot is free: `_hand_on` gives
        free slots out until every caller left waiting is at its share, so no one overtakes its
        own line.)"""
        return self._free > 0 and self._under_share(caller)

    def reserve(self, caller: str | None, deadline: float = math.inf) -> Ticket:
        """A slot now, or a place at the end of `caller`'s line. Not a checkpoint."""
        ticket = Ticket(caller, deadline)
        if self.free_for(caller):
            self._grant(ticket)
            return ticket
        ticket.event = trio.Event()
        self._lines.setdefault(caller, collections.deque()).append(ticket)
        self._waiting += 1
        return ticket

    async def wait(self, ticket: Ticket) -> None:
        """Return once `ticket` holds a slot or has been pushed out of its line (`granted` says
        which); always a checkpoint. Cancellation: the ticket keeps its place until `release`."""
        if ticket.granted:
            await trio.lowlevel.checkpoint()
            return
        assert ticket.event is not None  # a ticket that waits has one
        await ticket.event.wait()

    def release(self, ticket: Ticket) -> None:
        """Give up `ticket` (whether it holds a slot or still waits). Idempotent.

        A slot granted at the very moment its waiter was cancelled is passed on here, so none is lost.
        """
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
            # cancels calls over and over must not grow a line.
            ticket.abandoned = True
            self._leave_line(ticket)

    def push_out(self, caller: str | None) -> Ticket | None:
        """Make room in the lines for one of `caller`'s: take out the last ticket of the longest
        line, if that line is longer than `caller`'s own (ties: the caller next in turn), and wake
        it (not granted, `pushed_out`). None when no line is longer: `caller`'s is among the longest.
        """
        if not self._lines:
            return None
        longest = max(self._lines, key=lambda c: len(self._lines[c]))  # the caller None is one too
        if len(self._lines[longest]) <= len(self._lines.get(caller, ())):
            return None
        ticket = self._lines[longest][-1]
        self._leave_line(ticket)
        ticket.abandoned = ticket.pushed_out = True
        assert ticket.event is not None
        ticket.event.set()
        return ticket

    def _under_share(self, caller: str | None) -> bool:
        return caller is None or self._held.get(caller, 0) < self._share

    def _leave_line(self, ticket: Ticket) -> None:
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
        """Give free slots to the heads of the lines: the waiting caller under its share holding
        fewest first, ties in turn (min keeps the first of equals, in the lines' order)."""
        while self._free > 0:
            callers = [c for c in self._lines if self._under_share(c)]
            if not callers:
                return
            turn = min(callers, key=self.held_by)  # a caller may be None: no `default=None`
            line = self._lines.pop(turn)
            nxt = line.popleft()
            self._waiting -= 1
            if line:
                self._lines[turn] = line  # its next call waits for its next turn
            self._grant(nxt)
            assert nxt.event is not None
            nxt.event.set()
