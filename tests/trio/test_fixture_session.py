"""The conformance fixtures through a real session in memory: content-block tool results, binary
and templated resource reads, prompts and subscriptions run through the same runtime as the
product's tools (the call runner, the limiter, the writer)."""

from __future__ import annotations

import base64
import json
from typing import Any, Final

import trio

from tests.support.fixture_server import PNG, open_fixtures
from tests.support.harness import Harness, open_session
from tests.support.wire import check_line, slug_of


async def _ask(h: Harness, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    request_id = await h.send_request(method, params)
    line = await h.recv_line()
    assert line is not None
    message = check_line(line, content_blocks=True)
    assert message["id"] == request_id, message
    return message


async def test_the_fixtures_are_served_through_the_products_runtime() -> None:
    with trio.fail_after(30):
        async with open_session(extra_tools=[open_fixtures], test_tools=False) as h:
            capabilities = (await h.initialize())["result"]["capabilities"]
            assert capabilities["prompts"] == {"listChanged": False}
            assert capabilities["resources"]["subscribe"] is True

            image = (await _ask(h, "tools/call", {"name": "test_image_content", "arguments": {}}))["result"]
            assert image["isError"] is False
            assert base64.b64decode(image["content"][0]["data"]) == PNG

            failed = (await _ask(h, "tools/call", {"name": "test_error_handling"}))["result"]
            assert failed["isError"] is True

            wrong = (await _ask(h, "tools/call", {"name": "test_simple_text", "arguments": {"x": 1}}))[
                "result"
            ]
            assert wrong["isError"] is True  # the arguments are validated as any tool's are
            assert json.loads(wrong["content"][0]["text"])["invalid_params"] == ["x"]

            (binary,) = (await _ask(h, "resources/read", {"uri": "test://static-binary"}))["result"][
                "contents"
            ]
            assert base64.b64decode(binary["blob"]) == PNG

            (item,) = (await _ask(h, "resources/read", {"uri": "test://template/7/data"}))["result"][
                "contents"
            ]
            assert (item["uri"], json.loads(item["text"])["id"]) == ("test://template/7/data", "7")

            got = (await _ask(h, "prompts/get", {"name": "test_simple_prompt"}))["result"]
            assert got["messages"][0]["role"] == "user"

            assert (await _ask(h, "resources/subscribe", {"uri": "test://watched-resource"}))["result"] == {}


_MODERN_META: Final = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
_CONTEXT: Final = {"user_context": {"action": "accept", "content": {"context": "the tests"}}}


def _prompt(**retry: Any) -> dict[str, Any]:
    return {"name": "test_input_required_result_prompt", **retry, "_meta": _MODERN_META}


async def test_a_prompt_asks_through_the_same_sealed_rounds_as_a_tool() -> None:
    with trio.fail_after(30):
        async with open_session(extra_tools=[open_fixtures], test_tools=False) as h:
            asked = (await _ask(h, "prompts/get", _prompt()))["result"]
            assert asked["resultType"] == "input_required"
            question = asked["inputRequests"]["user_context"]
            assert question["method"] == "elicitation/create"
            assert question["params"]["requestedSchema"]["required"] == ["context"]
            state = asked["requestState"]

            done = await _ask(h, "prompts/get", _prompt(inputResponses=_CONTEXT, requestState=state))
            assert done["result"]["messages"][0]["content"]["text"] == "Use this context: the tests"

            # An answer without the state that asked for it is not taken: the question comes again.
            again = (await _ask(h, "prompts/get", _prompt(inputResponses=_CONTEXT)))["result"]
            assert again["resultType"] == "input_required"

            # A tampered state, and a tool's state sent to the prompt, are refused.
            body, _, mac = state.partition(".")
            tampered = body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac
            tool = {"name": "test_input_required_result_elicitation", "arguments": {}, "_meta": _MODERN_META}
            foreign = (await _ask(h, "tools/call", tool))["result"]["requestState"]
            for bad in (tampered, foreign):
                refused = await _ask(h, "prompts/get", _prompt(inputResponses=_CONTEXT, requestState=bad))
                assert slug_of(refused["error"]["data"]) == "invalid-request-state", refused


async def test_a_prompt_that_asks_is_refused_in_the_handshake_eras() -> None:
    with trio.fail_after(30):
        async with open_session(extra_tools=[open_fixtures], test_tools=False) as h:
            await h.initialize()
            refused = await _ask(h, "prompts/get", {"name": "test_input_required_result_prompt"})
            assert slug_of(refused["error"]["data"]) == "client-cannot-ask", refused
