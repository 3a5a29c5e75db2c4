"""Lazy models and the warm-up (docs/architecture.md): nothing a call needs is built before `initialize`
is answered; right after it, one worker thread builds every tool's models, the advertised schemas
and each toolset's own warm-up steps, once; a call that comes first builds what it needs itself.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import pytest
import trio

from mcp_suite.lazy import Lazy
from mcp_suite.settings import Settings
from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.models import StrictModel
from mcp_suite.tools.registry import ToolOpener
from tests.support.harness import open_session


class LazyArgs(StrictModel):
    text: str


class LazyResult(StrictModel):
    text: str


class Probe:
    """Counts model loads and warm-up steps; `gate` holds the loader until the test opens it, and
    `step_gate` holds the warm-up step."""

    def __init__(self, *, step_fails: bool = False) -> None:
        self.loads = 0
        self.steps = 0
        self.gate = threading.Event()
        self.gate.set()
        self.step_gate = threading.Event()
        self.step_gate.set()
        self.step_entered = threading.Event()
        self.step_left = threading.Event()
        self.step_fails = step_fails
        self.events: list[str] = []

    def load(self) -> tuple[type[LazyArgs], type[LazyResult]]:
        assert self.gate.wait(10)
        self.loads += 1
        self.events.append("load")
        return LazyArgs, LazyResult

    def step(self) -> None:
        try:
            self.step_entered.set()
            assert self.step_gate.wait(10)
            self.steps += 1
            self.events.append("step")
            if self.step_fails:
                raise RuntimeError("warm-up step failed")
        finally:
            self.step_left.set()

    def opener(self) -> ToolOpener:
        @contextlib.contextmanager
        def open_lazy(settings: Settings) -> Iterator[Toolset | None]:
            async def call(args: LazyArgs) -> LazyResult:
                await trio.lowlevel.checkpoint()
                return LazyResult(text=args.text.upper())

            tool = ToolSpec(
                name="lazy",
                title="Lazy",
                description="Upper-cases.",
                models=Lazy(self.load),
                call=call,
                scope="test:call",
            )
            yield Toolset(tools=(tool,), warm_up=(self.step,))

        return open_lazy


async def test_models_load_after_the_handshake_is_answered_once_with_the_warm_up_steps() -> None:
    probe = Probe()
    with trio.fail_after(10):
        async with open_session(test_tools=False, extra_tools=[probe.opener()]) as h:
            response = await h.initialize()
            assert response["result"]["protocolVersion"] == "2025-11-25"
            assert h.session is not None
            await h.session.warmed_up.wait()
            assert (probe.loads, probe.steps) == (1, 1)
            assert h.session.registry.tools["lazy"].models.built
            listed = await h.request("tools/list")
            (tool,) = listed["result"]["tools"]
            assert tool["inputSchema"]["properties"]["text"]["type"] == "string"
            answer = await h.response(await h.call("lazy", {"text": "abc"}))
            assert answer["result"]["structuredContent"] == {"text": "ABC"}
            assert probe.loads == 1


async def test_nothing_is_loaded_before_initialize() -> None:
    probe = Probe()
    with trio.fail_after(10):
        async with open_session(test_tools=False, extra_tools=[probe.opener()]) as h:
            pong = await h.request("ping")
            assert pong["result"] == {}
            await trio.sleep(0.05)
            assert (probe.loads, probe.steps) == (0, 0)
            assert h.session is not None
            assert not h.session.warmed_up.is_set()


async def test_a_call_before_the_warm_up_is_done_waits_for_its_models_and_is_served() -> None:
    probe = Probe()
    probe.gate.clear()  # the warm-up's load blocks until the call is in
    with trio.fail_after(10):
        async with open_session(test_tools=False, extra_tools=[probe.opener()]) as h:
            await h.initialize()
            call = await h.call("lazy", {"text": "early"})
            bad = await h.call("lazy", {"text": 5})
            await trio.sleep(0.05)
            probe.gate.set()
            answer = await h.response(call)
            assert answer["result"]["structuredContent"] == {"text": "EARLY"}
            refused = await h.response(bad)
            assert refused["result"]["isError"] is True
            assert h.session is not None
            await h.session.warmed_up.wait()
            assert probe.loads == 1


async def test_a_failing_warm_up_step_is_logged_and_calls_still_work(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe = Probe(step_fails=True)
    with trio.fail_after(10):
        async with open_session(test_tools=False, extra_tools=[probe.opener()]) as h:
            await h.initialize()
            assert h.session is not None
            await h.session.warmed_up.wait()
            answer = await h.response(await h.call("lazy", {"text": "still"}))
            assert answer["result"]["structuredContent"] == {"text": "STILL"}
    assert probe.steps == 1
    assert any("warm-up failed" in record.getMessage() for record in caplog.records)


async def test_a_warm_up_cut_short_by_the_end_of_the_session_does_not_warn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_suite")
    probe = Probe(step_fails=True)  # as a step does when its tool was closed under it
    probe.step_gate.clear()
    with trio.fail_after(10):
        async with open_session(test_tools=False, extra_tools=[probe.opener()]) as h:
            await h.initialize()
            await trio.to_thread.run_sync(probe.step_entered.wait)
        # The session is over (EOF, drained); the abandoned warm-up now fails.
    probe.step_gate.set()
    assert probe.step_left.wait(10)
    for _ in range(100):  # the thread logs right after the step has left
        if any("warm-up stopped" in r.getMessage() for r in caplog.records):
            break
        await trio.sleep(0.01)
    messages = [record.getMessage() for record in caplog.records]
    assert any("warm-up stopped" in message for message in messages)
    assert not any("warm-up failed" in message for message in messages)


def test_concurrent_first_uses_build_the_models_once() -> None:
    probe = Probe()
    probe.gate.clear()
    models = Lazy(probe.load)
    threads = [threading.Thread(target=models.get) for _ in range(8)]
    for thread in threads:
        thread.start()
    probe.gate.set()
    for thread in threads:
        thread.join(10)
    assert probe.loads == 1
    assert models.built
    assert models.get() == (LazyArgs, LazyResult)


async def test_join_warm_up_waits_for_a_warm_up_thread_that_outlives_the_session() -> None:
    # A warm-up thread still inside a compiled extension when the interpreter exits aborts the
    # process; so the CLI joins it (bounded) after the session: join_warm_up is that wait.
    probe = Probe()
    probe.step_gate.clear()
    with trio.fail_after(10):
        async with open_session(test_tools=False, extra_tools=[probe.opener()]) as h:
            await h.initialize()
            await trio.to_thread.run_sync(probe.step_entered.wait, 5)
    session = h.session
    assert session is not None
    assert not probe.step_left.is_set()  # the session ended while the warm-up was at work
    assert not session.join_warm_up(0.01)  # bounded: it gives up
    threading.Timer(0.05, probe.step_gate.set).start()
    assert session.join_warm_up(5)  # and returns as soon as the thread is done
    assert probe.step_left.is_set()
    assert probe.steps == 1


async def test_join_warm_up_is_immediate_when_no_warm_up_ran() -> None:
    with trio.fail_after(10):
        async with open_session() as h:
            assert (await h.request("ping"))["result"] == {}
    assert h.session is not None
    assert h.session.join_warm_up(0)
