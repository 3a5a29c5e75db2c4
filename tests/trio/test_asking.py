"""The tools' side of asking (`mcp_suite.asking`): outside a call nobody is asked; in the legacy eras
the question goes through the transport's server-to-client request only to a client that declared
elicitation, and a transport that cannot carry it refuses; only an approval is a yes."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from mcp_suite.asking import LegacyAsker, RoundsAsker, ask_yes_no, confirm, current_asker, current_rounds
from mcp_suite.problems import (
    ClientCannotAskError,
    InvalidInputResponsesError,
    NotApprovedError,
    ProblemError,
)
from mcp_suite.protocol import mrtr


class FakeClient:
    """A transport's server-to-client requests, answering each with `answer` (or raising it)."""

    def __init__(self, answer: dict[str, Any] | ProblemError) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        self.asked.append((method, params))
        if isinstance(self.answer, ProblemError):
            raise self.answer
        return self.answer


async def test_a_question_asked_outside_a_call_is_refused() -> None:
    with trio.fail_after(5), pytest.raises(ClientCannotAskError, match="no way to reach the client"):
        await ask_yes_no("Go on?")


@pytest.mark.parametrize(
    ("answer", "approved"),
    [
        ({"action": "accept", "content": {"approve": True}}, True),
        ({"action": "accept", "content": {"approve": False}}, False),
        ({"action": "decline"}, False),
        ({"action": "cancel"}, False),
    ],
)
async def test_a_legacy_client_that_declared_elicitation_is_asked_the_form(
    answer: dict[str, Any], approved: bool
) -> None:
    client = FakeClient(answer)
    token = current_asker.set(LegacyAsker({"elicitation": {}}, client))
    try:
        with trio.fail_after(5):
            assert await ask_yes_no("Read table t?") is approved
            if approved:
                await confirm("Read table t?")
            else:
                with pytest.raises(NotApprovedError) as refused:
                    await confirm("Read table t?")
                assert refused.value.metadata == {"action": answer["action"]}
    finally:
        current_asker.reset(token)
    assert client.asked == [("elicitation/create", dict(mrtr.yes_no_request("Read table t?").params))] * 2


@pytest.mark.parametrize("capabilities", [{}, {"sampling": {}}, {"elicitation": {"url": {}}}])
async def test_a_legacy_client_that_did_not_declare_elicitation_is_never_asked(
    capabilities: dict[str, Any],
) -> None:
    client = FakeClient({"action": "accept", "content": {"approve": True}})
    with trio.fail_after(5), pytest.raises(ClientCannotAskError, match="did not declare 'elicitation'"):
        await LegacyAsker(capabilities, client).ask_yes_no("Go on?")
    assert client.asked == []
    token = current_asker.set(LegacyAsker(capabilities, client))
    try:
        with trio.fail_after(5), pytest.raises(ClientCannotAskError):
            await confirm("Go on?")
    finally:
        current_asker.reset(token)


async def test_a_legacy_transport_that_cannot_carry_the_question_refuses() -> None:
    with trio.fail_after(5), pytest.raises(ClientCannotAskError, match="cannot carry a question"):
        await LegacyAsker({"elicitation": {}}, None).ask_yes_no("Go on?")


async def test_a_legacy_answer_that_is_not_one_is_refused_and_a_failed_request_propagates() -> None:
    with trio.fail_after(5), pytest.raises(InvalidInputResponsesError, match="elicitation/create result"):
        await LegacyAsker({"elicitation": {}}, FakeClient({"action": "accept"})).ask_yes_no("Go on?")
    gone = ClientCannotAskError("The call ended.")
    with trio.fail_after(5), pytest.raises(ClientCannotAskError, match="The call ended"):
        await LegacyAsker({"elicitation": {}}, FakeClient(gone)).ask_yes_no("Go on?")


async def test_a_modern_question_ends_the_call_in_input_required() -> None:
    call = mrtr.CallInput(modern=True, capabilities={"elicitation": {}})
    rounds = mrtr.Rounds(
        key=b"k" * 32, binding=lambda: mrtr.bind("tools/call", "t", {}, ""), call=call, now=0.0, ttl_s=60.0
    )
    with trio.fail_after(5), pytest.raises(mrtr.InputRequired):
        await RoundsAsker(rounds).ask_yes_no("Go on?")
    assert current_rounds() is None
    token = current_asker.set(RoundsAsker(rounds))
    try:
        assert current_rounds() is rounds
    finally:
        current_asker.reset(token)
    token = current_asker.set(LegacyAsker({}, None))
    try:
        assert current_rounds() is None
    finally:
        current_asker.reset(token)
