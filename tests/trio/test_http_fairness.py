"""Fairness all the way down (issue 52), seen through `serve-http` in process on a loopback port with
two (and three) verified callers: the call limiter's waiting room is shared per caller, so callers
filling it leave a newcomer a place. (The database threads' share: tests/pg/test_http_fairness.py.)"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import trio
import trio.testing

from tests.support.harness import TEST_SCOPE
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.wire import slug_of
from tests.trio.test_http_app import RESOURCE, modern, modern_headers, serving


def _sleep(seconds: float, tag: int, token: str) -> dict[str, Any]:
    body = modern("tools/call", {"name": "sleep", "arguments": {"seconds": seconds, "tag": tag}}, tag)
    return {"json": body, "headers": modern_headers("tools/call", "sleep", token)}


def _outcome(answer: httpx2.Response) -> str:
    """ "ok", or the slug of the problem the call's answer carries (a tool error or a refusal)."""
    message = answer.json()
    if "error" in message:
        return slug_of(message["error"]["data"])
    result = message["result"]
    if result.get("isError"):
        return slug_of(json.loads(result["content"][0]["text"]))
    return "ok"


async def test_callers_filling_the_waiting_room_leave_a_newcomer_a_place() -> None:
    with open_issuer() as issuer:
        await _fill_the_room_then_call_as_a_newcomer(issuer)


async def _fill_the_room_then_call_as_a_newcomer(issuer: TestIssuer) -> None:
    tokens = {who: issuer.token(RESOURCE, sub=who, scope=TEST_SCOPE) for who in ("alice", "bob", "carol")}
    answers: dict[int, httpx2.Response] = {}

    async def post(http: httpx2.AsyncClient, url: str, seconds: float, tag: int, who: str) -> None:
        answers[tag] = await http.post(url, **_sleep(seconds, tag, tokens[who]))

    # Two slots, one per caller; the waiting room holds 4 x 2 = 8 calls; five requests per caller.
    with trio.fail_after(60):
        async with (
            serving(
                issuer, max_concurrency=2, http_max_calls_per_identity=1, http_max_requests_per_identity=5
            ) as server,
            httpx2.AsyncClient(timeout=60) as busy_http,
            httpx2.AsyncClient(timeout=60) as carol_http,
            trio.open_nursery() as carols,
        ):
            async with trio.open_nursery() as busy:
                # Alice and Bob each run one long call and queue four more: the room is full.
                for who, first_tag in (("alice", 10), ("bob", 20)):
                    for tag in range(first_tag, first_tag + 5):
                        busy.start_soon(post, busy_http, server.url, 60, tag, who)
                    await trio.testing.wait_all_tasks_blocked(cushion=0.2)
                assert len(server.log.started) == 2
                assert answers == {}
                carols.start_soon(post, carol_http, server.url, 0, 30, "carol")
                await trio.testing.wait_all_tasks_blocked(cushion=0.2)
                # Carol's call is not refused: it waits, in the place of the last call of the
                # longest line (Alice's, first in turn of two equals), which is refused at once.
                assert 30 not in answers
                assert len(answers) == 1, {tag: a.content for tag, a in answers.items()}
                ((pushed, answer),) = answers.items()
                assert pushed in range(10, 15)
                assert _outcome(answer) == "concurrency-limit"
                assert b"gave its place in the queue" in answer.content
                # Alice and Bob go away (closing their connections cancels their calls).
                busy.cancel_scope.cancel()
            with trio.fail_after(10):
                while 30 not in answers:
                    await trio.sleep(0.01)
            assert _outcome(answers[30]) == "ok"  # Carol's call ran
            assert 30 in server.log.finished
