"""The conformance fixtures that talk to the client mid-call, against a recording context in the
shape of the product's (`mcp_suite.talk.Talk`): what they send is what the suite's scenarios check."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from mcp_suite.problems import ClientCannotAskError
from mcp_suite.protocol.contents import ContentResult
from tests.support import fixture_server
from tests.support.fixture_server import ElicitationArgs, SamplingArgs
from tests.support.harness import NoArgs


class Recording:
    """A call's context that keeps what it was told and answers each question as the suite does."""

    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None]] = []
        self.logs: list[tuple[str, str]] = []
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        await trio.lowlevel.checkpoint()
        self.progress.append((progress, total))

    async def log(self, level: str, text: str) -> None:
        await trio.lowlevel.checkpoint()
        self.logs.append((level, text))

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        self.asked.append((method, params))
        if method == "sampling/createMessage":
            return {"role": "assistant", "content": {"type": "text", "text": "four"}, "model": "m"}
        return {"action": "accept", "content": {"username": "ada"}}


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recording:
    context = Recording()
    monkeypatch.setattr(fixture_server, "current_context", lambda: context)
    return context


def _text(result: ContentResult) -> str:
    (block,) = result.content
    text: str = block["text"]
    return text


async def test_progress_is_reported_0_50_100_of_100(
    recording: Recording, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(5):
        result = await fixture_server._with_progress(NoArgs())
    assert recording.progress == [(0, 100), (50, 100), (100, 100)]
    assert not result.is_error


async def test_three_info_messages_are_logged(
    recording: Recording, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(5):
        await fixture_server._with_logging(NoArgs())
    assert recording.logs == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]


async def test_sampling_asks_for_the_prompt_and_returns_the_answer(recording: Recording) -> None:
    with trio.fail_after(5):
        result = await fixture_server._sampling(SamplingArgs(prompt="2+2?"))
    assert recording.asked == [
        (
            "sampling/createMessage",
            {"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 100},
        )
    ]
    assert _text(result) == "LLM response: four"


async def test_elicitation_asks_for_a_username_and_an_email(recording: Recording) -> None:
    with trio.fail_after(5):
        result = await fixture_server._elicitation(ElicitationArgs(message="Who?"))
    ((method, params),) = recording.asked
    assert method == "elicitation/create"
    assert params["message"] == "Who?"
    assert params["requestedSchema"]["required"] == ["username", "email"]
    assert _text(result) == 'User response: action=accept, content={"username": "ada"}'


async def test_the_sep1034_and_sep1330_schemas_carry_what_the_suite_checks(recording: Recording) -> None:
    with trio.fail_after(5):
        await fixture_server._elicitation_defaults(NoArgs())
        await fixture_server._elicitation_enums(NoArgs())
    defaults = recording.asked[0][1]["requestedSchema"]["properties"]
    assert {name: field["default"] for name, field in defaults.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    enums = recording.asked[1][1]["requestedSchema"]["properties"]
    assert set(enums) == {"untitledSingle", "titledSingle", "legacyEnum", "untitledMulti", "titledMulti"}
    assert len(enums["legacyEnum"]["enumNames"]) == len(enums["legacyEnum"]["enum"])


async def test_outside_a_call_the_asking_fixtures_are_refused_and_the_others_still_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # No call's context: the product's `NO_TALK`, whose questions fail closed.
    with trio.fail_after(5):
        with pytest.raises(ClientCannotAskError, match="sampling/createMessage"):
            await fixture_server._sampling(SamplingArgs(prompt="x"))
        with pytest.raises(ClientCannotAskError, match="elicitation/create"):
            await fixture_server._elicitation(ElicitationArgs(message="x"))
        assert not (await fixture_server._with_progress(NoArgs())).is_error
        assert not (await fixture_server._logging_tool(NoArgs())).is_error
