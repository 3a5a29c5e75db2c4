"""completion/complete through the runtime (the in-memory harness): a names completion is a call of
its resource's completer, in line at the call limiter like a tool (completion, "Security":
completions are rate limited), under the call deadline, and cancellable."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import trio
import trio.testing

from mcp_suite.settings import Settings
from mcp_suite.tools.base import ResourceSpec, Toolset
from mcp_suite.tools.registry import ToolOpener
from tests.support.harness import TEST_SCOPE, open_session
from tests.support.wire import slug_of

URI = "postgres://main/schema"
NAMES = ["orders", "orgs", "pages"]


def completing_opener(asked: list[tuple[str, str, str | None]]) -> ToolOpener:
    """A resource of the source `main` whose completer matches `NAMES` (a prefix `slow` sleeps 60 s)."""

    async def read() -> str:
        await trio.lowlevel.checkpoint()
        return "{}"

    async def complete(argument: str, prefix: str, schema: str | None) -> tuple[list[str], int]:
        asked.append((argument, prefix, schema))
        if prefix == "slow":
            await trio.sleep(60)
        await trio.lowlevel.checkpoint()
        matches = [name for name in NAMES if name.startswith(prefix)]
        return matches, len(matches)

    @contextlib.contextmanager
    def open_names(settings: Settings) -> Iterator[Toolset | None]:
        resource = ResourceSpec(
            uri=URI,
            name="schema",
            title="Schema",
            description="A completing resource.",
            mime_type="application/json",
            read=read,
            scope=TEST_SCOPE,
            source="main",
            complete=complete,
        )
        yield Toolset(tools=(), resources=(resource,))

    return open_names


def params(name: str, value: str, **context: str) -> dict[str, Any]:
    given: dict[str, Any] = {
        "ref": {"type": "ref/resource", "uri": URI},
        "argument": {"name": name, "value": value},
    }
    if context:
        given["context"] = {"arguments": context}
    return given


async def test_a_names_completion_runs_the_resource_s_completer_and_answers_its_names() -> None:
    asked: list[tuple[str, str, str | None]] = []
    with trio.fail_after(10):
        async with open_session(extra_tools=[completing_opener(asked)]) as h:
            init = await h.initialize()
            assert init["result"]["capabilities"]["completions"] == {}
            answer = await h.request("completion/complete", params("table", "or", schema="sales"))
            assert answer["result"] == {
                "completion": {"values": ["orders", "orgs"], "total": 2, "hasMore": False}
            }
            sources = await h.request(
                "completion/complete",
                {
                    "ref": {"type": "ref/resource", "uri": "postgres://{source}/schema"},
                    "argument": {"name": "source", "value": ""},
                },
            )
            assert sources["result"]["completion"]["values"] == ["main"]
            assert asked == [("table", "or", "sales")]


async def test_a_names_completion_waits_in_line_at_the_call_limiter_and_is_refused_past_its_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    settings = Settings(max_concurrency=1, queue_wait_s=5, call_deadline_s=30)
    asked: list[tuple[str, str, str | None]] = []
    with trio.fail_after(120):
        async with open_session(settings=settings, extra_tools=[completing_opener(asked)]) as h:
            await h.initialize()
            held = await h.call("sleep", {"seconds": 20, "tag": 1})  # holds the only slot
            waiting = await h.send_request("completion/complete", params("table", ""))
            refused = await h.response(waiting)
            assert slug_of(refused["error"]["data"]) == "concurrency-limit"
            assert asked == []  # the completer never ran
            assert (await h.response(held))["result"]["structuredContent"] == {"tag": 1, "slept": 20.0}


async def test_a_names_completion_past_the_deadline_is_an_internal_error_and_a_cancelled_one_gets_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    settings = Settings(call_deadline_s=30)
    with trio.fail_after(120):
        async with open_session(settings=settings, extra_tools=[completing_opener([])]) as h:
            await h.initialize()
            late = await h.response(await h.send_request("completion/complete", params("table", "slow")))
            assert late["error"]["code"] == -32603
            assert "completed within the call deadline" in late["error"]["data"]["detail"]
            cancelled = await h.send_request("completion/complete", params("table", "slow"))
            await trio.sleep(1)
            await h.notify("notifications/cancelled", {"requestId": cancelled})
            await trio.sleep(5)
            assert (await h.request("ping"))["result"] == {}
            assert cancelled not in h._pending  # nothing came for the call
