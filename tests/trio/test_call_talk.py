"""One call's context (`runtime.talk.CallTalk`) over the core's talk table, in virtual time: the
progress task ticks once per interval with what the tool noted, warns once at half the deadline
when the client set a level, and a question waits for its answer, fails closed when it cannot be
sent, and stops waiting on cancel (a late answer then finds nobody)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_suite.problems import ClientCannotAskError, ClientRequestFailedError
from mcp_suite.protocol.jsonrpc import ClientResponse
from mcp_suite.protocol.talk import Facts, TalkTable
from mcp_suite.runtime.talk import CallTalk, Waiters, enter, leave
from mcp_suite.talk import NO_TALK, current

KEY = ("i", 1)


class Wire:
    """What the call sent, as messages; `carries` False: a transport that can carry nothing."""

    def __init__(self, *, carries: bool = True) -> None:
        self.sent: list[dict[str, Any]] = []
        self.carries = carries
        self.asked = trio.Event()

    async def send(self, frame: bytes) -> bool:
        await trio.lowlevel.checkpoint()
        if not self.carries:
            return False
        self.sent.append(json.loads(frame))
        if "id" in self.sent[-1]:
            self.asked.set()
        return True


def _table(*, legacy: bool = True, token: Any = "t", capabilities: dict[str, Any] | None = None) -> TalkTable:
    table = TalkTable()
    table.client_capabilities = capabilities or {}
    params = {"_meta": {"progressToken": token}} if token is not None else {}
    table.call_started(KEY, params, legacy=legacy)
    return table


def _talk(table: TalkTable, wire: Wire, waiters: Waiters | None = None, *, progress: bool = True) -> CallTalk:
    return CallTalk(table, KEY, wire.send, waiters or Waiters(), progress=progress, interval_s=1.0)


async def test_progress_ticks_each_interval_with_what_the_tool_noted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    table, wire = _table(), Wire()
    talk = _talk(table, wire)
    talk.started_at(trio.current_time() + 30)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(talk.serve)
            await trio.sleep(1.5)
            talk.note(rows=40)
            await trio.sleep(1.0)
            talk.note(rows=41, bytes_read=7)
            await trio.sleep(1.0)
            nursery.cancel_scope.cancel()
    assert [m["params"]["message"] for m in wire.sent] == [
        "1.0 s elapsed",
        "2.0 s elapsed; 40 rows fetched",
        "3.0 s elapsed; 41 rows fetched; 7 bytes read",
    ]
    table.call_ended(KEY)
    assert table.progress(KEY, Facts(elapsed_s=99.0)) is None


async def test_half_the_deadline_brings_one_warning_when_the_client_set_a_level(
    autojump_clock: trio.testing.MockClock,
) -> None:
    table, wire = _table(token=None), Wire()
    talk = _talk(table, wire, progress=False)
    assert not talk.has_something_to_say()
    table.set_level({"level": "warning"})
    assert talk.has_something_to_say()
    talk.started_at(trio.current_time() + 4)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(talk.serve)
            await trio.sleep(3.5)
            nursery.cancel_scope.cancel()
    (warning,) = wire.sent
    assert warning["method"] == "notifications/message"
    assert warning["params"]["level"] == "warning"
    assert warning["params"]["data"].startswith("This call has run 2.0 s, half of its deadline")


async def test_a_question_waits_for_its_answer(autojump_clock: trio.testing.MockClock) -> None:
    table, wire, waiters = _table(capabilities={"roots": {}}), Wire(), Waiters()
    talk = _talk(table, wire, waiters)
    got: list[dict[str, Any]] = []

    async def ask() -> None:
        got.append(await talk.ask("roots/list", {}))

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            await wire.asked.wait()
            answered = table.answered(ClientResponse(wire.sent[0]["id"], {"roots": []}, None))
            assert answered is not None
            waiters.deliver(table, answered)
    assert got == [{"roots": []}]


async def test_an_error_answer_is_the_tool_s_problem(autojump_clock: trio.testing.MockClock) -> None:
    table, wire, waiters = _table(capabilities={"roots": {}}), Wire(), Waiters()
    talk = _talk(table, wire, waiters)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:

            async def answer() -> None:
                await wire.asked.wait()
                answered = table.answered(ClientResponse(wire.sent[0]["id"], None, {"code": 7}))
                assert answered is not None
                waiters.deliver(table, answered)

            nursery.start_soon(answer)
            with pytest.raises(ClientRequestFailedError):
                await talk.ask("roots/list", {})


async def test_a_question_the_transport_cannot_carry_fails_closed_and_is_forgotten() -> None:
    table, wire = _table(capabilities={"elicitation": {}}), Wire(carries=False)
    with trio.fail_after(10), pytest.raises(ClientCannotAskError):
        await _talk(table, wire).ask("elicitation/create", {})
    assert table.answered(ClientResponse("mcp-suite-1", {}, None)) is None


async def test_a_cancelled_wait_forgets_its_question(autojump_clock: trio.testing.MockClock) -> None:
    table, wire, waiters = _table(capabilities={"elicitation": {}}), Wire(), Waiters()
    talk = _talk(table, wire, waiters)
    with trio.fail_after(60):
        with trio.move_on_after(5):  # the call's deadline, say
            await talk.ask("elicitation/create", {})
    late = table.answered(ClientResponse(wire.sent[0]["id"], {"action": "accept"}, None))
    assert late is None


async def test_a_log_message_goes_only_when_asked_for() -> None:
    table, wire = _table(), Wire()
    talk = _talk(table, wire)
    with trio.fail_after(10):
        await talk.log("error", "x")
        table.set_level({"level": "error"})
        await talk.log("error", "y")
    assert [m["params"]["data"] for m in wire.sent] == ["y"]


async def test_a_tool_outside_a_call_talks_to_nobody_and_is_refused_an_answer() -> None:
    assert current() is NO_TALK
    NO_TALK.note(rows=1)
    with trio.fail_after(10):
        await NO_TALK.log("error", "x")
        with pytest.raises(ClientCannotAskError):
            await NO_TALK.ask("elicitation/create", {})
    talk = _talk(_table(), Wire())
    entered = enter(talk)
    try:
        assert current() is talk
        assert await trio.to_thread.run_sync(current) is talk  # a worker thread sees it too
    finally:
        leave(entered)
    assert current() is NO_TALK


async def test_a_tool_reports_its_own_progress_at_most_once_per_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    table, wire = _table(), Wire()
    talk = _talk(table, wire)
    talk.started_at(trio.current_time() + 30)
    with trio.fail_after(60):
        await talk.report_progress(0, 100)
        await trio.sleep(0.5)
        await talk.report_progress(50, 100, "half")  # within the interval (1 s): not sent
        await trio.sleep(0.6)
        await talk.report_progress(100, 100, "done")
        await NO_TALK.report_progress(1)
    assert [m["params"] for m in wire.sent] == [
        {"progressToken": "t", "progress": 0, "total": 100},
        {"progressToken": "t", "progress": 100, "total": 100, "message": "done"},
    ]
