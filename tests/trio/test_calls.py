"""tools/call as tasks: out-of-order answers, cancellation, duplicate ids, deadline, drain (docs/wire.md).

Virtual time (autojump_clock): a tool "sleeping 60 s" costs nothing, and times are exact.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_suite.problems import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from mcp_suite.settings import Settings
from tests.support.harness import SECRET_IN_BOOM, TRANSPORTS, Transport, open_session
from tests.support.wire import slug_of


def _problem(response: dict[str, Any]) -> dict[str, Any]:
    result = response["result"]
    assert result["isError"] is True, response
    document: dict[str, Any] = json.loads(result["content"][0]["text"])
    return document


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_concurrent_calls_are_answered_out_of_order(
    transport: Transport, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(60):
        async with open_session(transport=transport) as h:
            await h.initialize()
            start = trio.current_time()
            slow = await h.call("sleep", {"seconds": 3, "tag": 1})
            medium = await h.call("sleep", {"seconds": 2, "tag": 2})
            fast = await h.call("sleep", {"seconds": 1, "tag": 3})
            # ping is answered inline while the calls run (docs/wire.md).
            ping = await h.send_request("ping")
            order = [(await h.recv())["id"] for _ in range(4)]
            assert order == [ping, fast, medium, slow]
            assert trio.current_time() - start == pytest.approx(3)  # they ran side by side
            assert sorted(h.log.started) == [1, 2, 3]
            assert h.log.finished == [3, 2, 1]


async def test_call_results_carry_structured_content_and_identical_text() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            response = await h.response(
                await h.call("echo", {"text": "h\u00e9llo \u2603 \U0001f600", "tags": ["a"]})
            )
            result = response["result"]
            assert result["isError"] is False
            assert result["structuredContent"] == {"text": "h\u00e9llo \u2603 \U0001f600", "tags": ["a"]}
            # check_line already proved the line is ASCII and the text block holds the same JSON.


@pytest.mark.parametrize(("call_id", "cancel_id"), [(7, 7), (7, "7"), ("7", 7), ("7", "7")])
async def test_cancelled_call_gets_no_response(
    call_id: int | str, cancel_id: int | str, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(120):
        async with open_session() as h:
            await h.initialize()
            await h.call("sleep", {"seconds": 10, "tag": 7}, request_id=call_id)
            await trio.testing.wait_all_tasks_blocked()
            assert h.log.started == [7]
            await h.notify("notifications/cancelled", {"requestId": cancel_id, "reason": "user"})
            await trio.testing.wait_all_tasks_blocked()
            assert h.log.cancelled == [7]
            assert h.session is not None
            assert not h.session.in_flight
            # Well past the tool's own end: nothing ever arrives for the cancelled call.
            await trio.sleep(30)
            ping = await h.request("ping")
            assert ping["id"] == 2
            # The id is free again once the call is gone.
            again = await h.response(await h.call("sleep", {"seconds": 1, "tag": 8}, request_id=call_id))
            assert again["result"]["structuredContent"] == {"tag": 8, "slept": 1.0}
            assert await h.finish() == []
            assert h.log.finished == [8]


async def test_cancelling_an_unknown_or_finished_id_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with open_session() as h:
            await h.initialize()
            done = await h.response(await h.call("sleep", {"seconds": 1, "tag": 1}))
            assert done["result"]["isError"] is False
            running = await h.call("sleep", {"seconds": 5, "tag": 2})
            for request_id in (done["id"], 12345, "nope", None, True, 1.5, {"id": running}):
                await h.notify("notifications/cancelled", {"requestId": request_id})
            response = await h.response(running)
            assert response["result"]["structuredContent"] == {"tag": 2, "slept": 5.0}
            assert h.log.cancelled == []


async def test_duplicate_in_flight_id_is_refused_and_the_first_call_is_undisturbed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with open_session() as h:
            await h.initialize()
            start = trio.current_time()
            await h.call("sleep", {"seconds": 10, "tag": 1}, request_id=5)
            await h.call("sleep", {"seconds": 1, "tag": 2}, request_id=5)
            refused = await h.recv()
            assert refused["id"] == 5
            assert refused["error"]["code"] == INVALID_REQUEST
            assert slug_of(refused["error"]["data"]) == "invalid-request"
            assert trio.current_time() == start  # at once
            # "5" is a different JSON-RPC id from 5: it may run alongside.
            other = await h.response(await h.call("sleep", {"seconds": 1, "tag": 3}, request_id="5"))
            assert other["result"]["structuredContent"] == {"tag": 3, "slept": 1.0}
            first = await h.recv()
            assert first["id"] == 5
            assert first["result"]["structuredContent"] == {"tag": 1, "slept": 10.0}
            assert trio.current_time() - start == pytest.approx(10)
            assert h.log.started == [1, 3]
            assert h.log.cancelled == []


async def test_deadline_turns_into_execution_timeout(autojump_clock: trio.testing.MockClock) -> None:
    settings = Settings(call_deadline_s=30)
    with trio.fail_after(120):
        async with open_session(settings=settings) as h:
            await h.initialize()
            start = trio.current_time()
            response = await h.response(await h.call("sleep", {"seconds": 60, "tag": 1}))
            assert trio.current_time() - start == pytest.approx(30)
            problem = _problem(response)
            assert slug_of(problem) == "execution-timeout"
            assert problem["status"] == 504
            assert problem["code"] == "MCP_EXECUTION_TIMEOUT"
            assert problem["metadata"] == {"deadline_s": 30.0}
            assert h.log.cancelled == [1]
            # The session goes on.
            assert (await h.request("ping"))["result"] == {}


async def test_the_deadline_counts_from_the_slot_not_from_arrival(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # One slot: the second call waits 10 s in line, then runs 25 s. Its 30 s deadline starts when it
    # gets the slot (t = 10), so it ends at t = 35 with a result; the third call, which would run
    # 25 s more after waiting 35 s, is refused by the 20 s queue wait instead.
    settings = Settings(max_concurrency=1, queue_wait_s=20, call_deadline_s=30)
    with trio.fail_after(120):
        async with open_session(settings=settings) as h:
            await h.initialize()
            start = trio.current_time()
            first = await h.call("sleep", {"seconds": 10, "tag": 1})
            second = await h.call("sleep", {"seconds": 25, "tag": 2})
            third = await h.call("sleep", {"seconds": 25, "tag": 3})
            responses = {}
            for _ in range(3):
                response = await h.recv()
                responses[response["id"]] = (response, trio.current_time() - start)
            assert responses[first][0]["result"]["structuredContent"] == {"tag": 1, "slept": 10.0}
            assert responses[second][0]["result"]["structuredContent"] == {"tag": 2, "slept": 25.0}
            assert responses[second][1] == pytest.approx(35)
            assert slug_of(_problem(responses[third][0])) == "concurrency-limit"
            assert responses[third][1] == pytest.approx(20)
            assert h.log.cancelled == []


async def test_a_call_cancelled_just_before_its_deadline_gets_no_answer_not_a_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The deadline and the client's cancel act on the call's one scope. A cancel sent a second
    # before the deadline gets no answer at all (docs/wire.md), and no execution-timeout follows.
    settings = Settings(call_deadline_s=30)
    with trio.fail_after(120):
        async with open_session(settings=settings) as h:
            await h.initialize()
            request_id = await h.call("sleep", {"seconds": 60, "tag": 1})
            await trio.sleep(29)
            await h.notify("notifications/cancelled", {"requestId": request_id})
            await trio.sleep(5)
            assert (await h.request("ping"))["result"] == {}
            assert request_id not in h._pending  # nothing came for the call
            assert h.log.cancelled == [1]


async def test_in_band_refusals_and_envelope_errors() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            denied = _problem(await h.response(await h.call("deny")))
            assert slug_of(denied) == "access-denied"
            assert denied["metadata"] == {"why": "test"}

            bad_args = _problem(await h.response(await h.call("echo", {"text": 5, "extra": True})))
            assert slug_of(bad_args) == "validation-error"
            assert set(bad_args["invalid_params"]) == {"text", "extra"}

            unsanitary = _problem(await h.response(await h.call("echo", {"text": "a\u202eb"})))
            assert slug_of(unsanitary) == "validation-error"
            assert unsanitary["invalid_params"] == ["text"]

            unknown = await h.response(await h.call("no_such_tool"))
            assert unknown["error"]["code"] == INVALID_PARAMS
            assert slug_of(unknown["error"]["data"]) == "validation-error"

            no_name = await h.request("tools/call", {"arguments": {}})
            assert no_name["error"]["code"] == INVALID_PARAMS
            not_object = await h.request("tools/call", {"name": "echo", "arguments": [1]})
            assert not_object["error"]["code"] == INVALID_PARAMS
            assert h.log.started == []


async def test_a_crashing_tool_is_an_internal_error_with_an_incident_id_only() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            await h.call("boom", request_id="b")
            line = await h.recv_line()
            assert line is not None
            assert SECRET_IN_BOOM.encode() not in line
            assert b"RuntimeError" not in line
            response = json.loads(line)
            error = response["error"]
            assert error["code"] == INTERNAL_ERROR
            incident = error["data"]["metadata"]["incident"]
            assert isinstance(incident, str)
            assert incident in error["data"]["detail"]
            assert (await h.request("ping"))["result"] == {}


async def test_eof_drains_in_flight_calls_before_the_session_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with open_session() as h:
            await h.initialize()
            call = await h.call("sleep", {"seconds": 3, "tag": 1})
            start = trio.current_time()
            rest = await h.finish()
            assert [m["id"] for m in rest] == [call]
            assert rest[0]["result"]["structuredContent"] == {"tag": 1, "slept": 3.0}
            assert trio.current_time() - start == pytest.approx(3)


async def test_drain_cancels_calls_still_running_after_the_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    settings = Settings(drain_grace_s=5, call_deadline_s=300)
    with trio.fail_after(60):
        async with open_session(settings=settings) as h:
            await h.initialize()
            short = await h.call("sleep", {"seconds": 2, "tag": 1})
            long = await h.call("sleep", {"seconds": 200, "tag": 2})
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            rest = await h.finish()
            assert trio.current_time() - start == pytest.approx(5)
            by_id = {m["id"]: m for m in rest}
            assert set(by_id) == {short, long}
            assert by_id[short]["result"]["isError"] is False
            # Cancelled by the shutdown, not by the client: it gets an answer saying so.
            assert by_id[long]["error"]["code"] == INTERNAL_ERROR
            assert h.log.cancelled == [2]


async def test_nothing_after_eof_is_read_but_everything_before_is_answered() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            await h.initialize()
            await h.send_raw(b'{"jsonrpc":"2.0","id":"a","method":"ping"}\n{"jsonrpc":"2.0","id":"b","met')
            rest = await h.finish()
            assert [m["id"] for m in rest] == ["a"]  # the partial last line is dropped (docs/wire.md)
