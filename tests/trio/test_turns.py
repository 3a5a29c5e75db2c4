"""The rule every shared slot follows (`mcp_suite.turns.Turns`: the call slots, each source's database
threads), driven directly: shares, one line per caller, the waiting caller holding fewest served
first and equals in turn, the one caller without a share, and the longest line making room."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcp_suite.turns import Ticket, Turns


def _granted(tickets: list[Ticket]) -> list[bool]:
    return [t.granted for t in tickets]


async def test_a_caller_at_its_share_waits_though_a_slot_is_free_and_another_takes_it() -> None:
    with trio.fail_after(5):
        turns = Turns(4, share=3)
        mine = [turns.reserve("a") for _ in range(4)]
        assert _granted(mine) == [True, True, True, False]
        assert (turns.running, turns.waiting, turns.held_by("a")) == (3, 1, 3)
        assert not turns.free_for("a")
        assert turns.free_for("b")
        theirs = turns.reserve("b")
        assert theirs.granted
        assert (turns.running, turns.waiting) == (4, 1)
        assert not turns.free_for("c")  # no slot left at all


async def test_the_caller_none_has_no_share_and_holds_every_slot() -> None:
    with trio.fail_after(5):
        turns = Turns(3, share=1)
        tickets = [turns.reserve(None) for _ in range(4)]
        assert _granted(tickets) == [True, True, True, False]
        turns.release(tickets[0])
        assert tickets[3].granted  # None is never skipped for being at a share
        assert turns.held_by(None) == 3


async def test_without_a_share_one_caller_may_hold_every_slot() -> None:
    with trio.fail_after(5):
        turns = Turns(2)
        assert _granted([turns.reserve("a") for _ in range(3)]) == [True, True, False]


async def test_a_freed_slot_goes_to_the_line_at_once_and_a_caller_under_its_share_takes_one_at_once() -> None:
    with trio.fail_after(5):
        turns = Turns(2, share=2)
        first, second = turns.reserve("a"), turns.reserve("b")
        waiting = turns.reserve("a")
        turns.release(second)  # a slot is free, and a's head takes it at once
        assert waiting.granted
        assert turns.free_for("a") is False  # no slot is free
        turns.release(first)
        late = turns.reserve("a")
        assert late.granted  # under its share again, no line: at once
        assert turns.held_by("a") == 2
        assert not turns.reserve("a").granted


async def test_a_freed_slot_goes_to_the_waiting_caller_holding_fewest_not_the_next_in_turn() -> None:
    with trio.fail_after(5):
        turns = Turns(4, share=3)
        a = [turns.reserve("a") for _ in range(2)]
        b = turns.reserve("b")
        held_by_c = turns.reserve("c")
        # Lines in turn order a, b, d; a holds 2, b 1, d none.
        a_waits, b_waits, d_waits = turns.reserve("a"), turns.reserve("b"), turns.reserve("d")
        assert (turns.running, turns.waiting) == (4, 3)
        turns.release(held_by_c)
        assert _granted([a_waits, b_waits, d_waits]) == [False, False, True]
        turns.release(a[0])  # a and b now hold one each: a's line is next in turn
        assert _granted([a_waits, b_waits]) == [True, False]
        turns.release(b)
        assert b_waits.granted
        for ticket in (a[1], a_waits, b_waits, d_waits):
            turns.release(ticket)
        assert (turns.running, turns.waiting) == (0, 0)


async def test_equals_are_served_in_turn_and_the_caller_served_goes_to_the_back() -> None:
    with trio.fail_after(5):
        turns = Turns(1, share=1)
        running = turns.reserve("x")
        a = [turns.reserve("a") for _ in range(3)]
        b = [turns.reserve("b") for _ in range(2)]
        c = turns.reserve("c")
        order: list[str | None] = []
        for _ in range(6):
            turns.release(running)
            (running,) = [t for t in (*a, *b, c) if t.granted]
            order.append(running.caller)
        assert order == ["a", "b", "c", "a", "b", "a"]


async def test_a_caller_at_its_share_is_skipped_and_keeps_its_place_in_turn() -> None:
    with trio.fail_after(5):
        turns = Turns(3, share=2)
        a = [turns.reserve("a") for _ in range(2)]
        b = turns.reserve("b")
        a_waits, b_waits = turns.reserve("a"), turns.reserve("b")
        turns.release(b)
        assert _granted([a_waits, b_waits]) == [False, True]
        turns.release(a[0])
        assert a_waits.granted
        assert turns.waiting == 0


async def test_a_free_slot_stays_free_when_every_waiting_caller_is_at_its_share() -> None:
    with trio.fail_after(5):
        turns = Turns(3, share=1)
        a, b = turns.reserve("a"), turns.reserve("b")
        a_waits = turns.reserve("a")
        turns.release(b)
        assert not a_waits.granted
        assert (turns.running, turns.waiting) == (1, 1)
        turns.release(a)
        assert a_waits.granted


async def test_release_is_idempotent_for_a_holder_and_for_a_waiter() -> None:
    with trio.fail_after(5):
        turns = Turns(1)
        held, first, behind = turns.reserve("a"), turns.reserve("a"), turns.reserve("a")
        turns.release(first)
        turns.release(first)
        assert turns.waiting == 1
        turns.release(held)
        turns.release(held)
        assert behind.granted
        assert not first.granted
        assert (turns.running, turns.waiting) == (1, 0)
        turns.release(behind)
        assert (turns.running, turns.waiting, turns.held_by("a")) == (0, 0, 0)


async def test_a_caller_whose_only_waiter_leaves_keeps_no_line_and_no_turn() -> None:
    with trio.fail_after(5):
        turns = Turns(1, share=1)
        held = turns.reserve("x")
        a, b = turns.reserve("a"), turns.reserve("b")
        turns.release(a)
        assert turns.free_for("a") is False  # no slot free; but a has no line any more
        turns.release(held)
        assert b.granted
        turns.release(b)
        assert turns.free_for("a")


async def test_the_longest_line_gives_its_last_place_to_a_shorter_one() -> None:
    with trio.fail_after(5):
        turns = Turns(1, share=1)
        held = turns.reserve("x")
        a = [turns.reserve("a") for _ in range(2)]
        b = [turns.reserve("b") for _ in range(3)]
        out = turns.push_out("c")
        assert out is b[2]  # the longest line's last place, not the first line's
        assert (out.pushed_out, out.abandoned, out.granted) == (True, True, False)
        assert out.event is not None
        assert out.event.is_set()
        assert turns.waiting == 4
        turns.release(out)  # a no-op: it has already left
        assert turns.waiting == 4
        assert not any(t.pushed_out for t in (*a, *b[:2]))
        turns.release(held)
        assert a[0].granted


async def test_no_place_is_made_for_a_caller_whose_line_is_as_long_as_the_longest() -> None:
    with trio.fail_after(5):
        turns = Turns(1, share=1)
        turns.reserve("x")
        a = [turns.reserve("a") for _ in range(2)]
        b = [turns.reserve("b") for _ in range(2)]
        assert turns.push_out("a") is None
        assert turns.push_out("b") is None
        out = turns.push_out("c")
        assert out is a[1]  # equals: the line next in turn gives
        assert turns.push_out("a") is b[1]  # now b's line is the longer one
        assert [t.pushed_out for t in (*a, *b)] == [False, True, False, True]


async def test_a_line_of_one_that_gives_its_place_is_gone() -> None:
    with trio.fail_after(5):
        turns = Turns(1, share=1)
        held = turns.reserve("x")
        only = turns.reserve("a")
        assert turns.push_out("c") is only
        assert turns.waiting == 0
        assert turns.push_out("c") is None  # no line at all
        late = turns.reserve("a")
        assert not late.granted
        turns.release(held)
        assert late.granted  # a's new line, served


async def test_wait_returns_when_granted_and_when_pushed_out(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(5):
        turns = Turns(1, share=1)
        held = turns.reserve("x")
        await turns.wait(held)  # granted: a checkpoint only
        waiter, pushed = turns.reserve("a"), turns.reserve("a")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(turns.wait, waiter)
            nursery.start_soon(turns.wait, pushed)
            await trio.sleep(1)
            assert turns.push_out("b") is pushed
            await trio.sleep(1)
            turns.release(held)
        assert waiter.granted
        assert not pushed.granted


async def test_waiting_for_a_granted_ticket_is_a_checkpoint() -> None:
    with trio.fail_after(5):
        turns = Turns(1)
        ticket = turns.reserve("a")
        with trio.CancelScope() as scope:
            scope.cancel()
            await turns.wait(ticket)
        assert scope.cancelled_caught


@pytest.mark.parametrize("share", [None, 2])
async def test_a_deadline_is_kept_on_the_ticket(share: int | None) -> None:
    with trio.fail_after(5):
        turns = Turns(2, share)
        assert turns.reserve("a", 12.5).deadline == 12.5
        assert turns.reserve("a").deadline == float("inf")


async def test_the_caller_none_can_wait_and_give_its_last_place_too() -> None:
    with trio.fail_after(5):
        turns = Turns(1)
        held = turns.reserve(None)
        first, last = turns.reserve(None), turns.reserve(None)
        assert turns.push_out("c") is last
        turns.release(held)
        assert first.granted
