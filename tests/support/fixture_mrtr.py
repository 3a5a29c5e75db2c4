"""The conformance suite's 2026-07-28 input-required fixtures (basic/patterns/mrtr), for the fixture
server (tests/support/fixture_server.py registers `MRTR_TOOLS` in its `FIXTURE_TOOLS` and
`MRTR_PROMPT` in its `FIXTURE_PROMPTS`).

Each tool asks its client through the call's `mrtr.Rounds` (`mcp_suite.asking.current_rounds()`):
`require` ends the call with an input-required result under the keys the suite names and seals the
request state (what was asked, and what the round kept); `answer(key)` reads the retry's result for
a key only when that verified state says it was asked, so an unsolicited or forged answer is asked
for again, never taken. The runtime verifies the state before the tool runs: a tampered or foreign
one is `invalid-request-state` (-32602). The scenario each tool serves is named beside it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import trio

from mcp_suite.asking import current_rounds
from mcp_suite.lazy import Lazy
from mcp_suite.protocol import mrtr
from mcp_suite.protocol.contents import ContentResult
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.tools.base import ToolSpec
from tests.support.harness import TEST_SCOPE, NoArgs, NoResult

__all__ = ["MRTR_PROMPT", "MRTR_TOOLS"]


def _tool(name: str, description: str, call: Callable[[NoArgs], Awaitable[ContentResult]]) -> ToolSpec:
    """A fixture tool of fixture_server's shape (no arguments, content blocks only). Defined here, not
    imported from it: fixture_server imports this module."""
    return ToolSpec(
        name=name,
        title=name,
        description=description,
        models=Lazy(lambda: (NoArgs, NoResult)),
        call=call,
        scope=TEST_SCOPE,
        advertised_output=lambda: None,
    )


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _form(message: str, field: str, kind: str = "string") -> mrtr.InputRequest:
    """A form elicitation with one required field."""
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return mrtr.InputRequest(mrtr.ELICIT, {"message": message, "requestedSchema": schema})


def _sample(text: str, max_tokens: int) -> mrtr.InputRequest:
    messages = [{"role": "user", "content": {"type": "text", "text": text}}]
    return mrtr.InputRequest(mrtr.SAMPLE, {"messages": messages, "maxTokens": max_tokens})


ROOTS: Final = mrtr.InputRequest(mrtr.LIST_ROOTS, {})


def _rounds() -> mrtr.Rounds:
    rounds = current_rounds()
    if rounds is None:  # a legacy-era call: there are no input-required results to give
        raise mrtr.cannot_ask(mrtr.ELICIT, "input-required results exist only in 2026-07-28")
    return rounds


def _done(text: str) -> ContentResult:
    return ContentResult((_text(text),))


def _field(answer: Mapping[str, Any], field: str) -> object:
    """The accepted form's `field`, or None (declined, cancelled, or not in the content)."""
    content = answer.get("content") if answer.get("action") == "accept" else None
    return content.get(field) if isinstance(content, dict) else None


def _said(answer: Mapping[str, Any]) -> str:
    """The text of a sampling result (`CreateMessageResult`), "" when it has none."""
    content = answer.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else ""


def _roots(answer: Mapping[str, Any]) -> list[str]:
    """The root URIs of a `ListRootsResult`."""
    roots = answer.get("roots")
    listed = roots if isinstance(roots, list) else []
    return [root["uri"] for root in listed if isinstance(root, dict) and isinstance(root.get("uri"), str)]


async def _elicitation(args: NoArgs) -> ContentResult:  # basic-elicitation, result-type
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    answer = rounds.answer("user_name")
    if answer is None:
        rounds.require({"user_name": _form("What is your name?", "name")})
    name = _field(answer, "name")
    if not isinstance(name, str):
        return ContentResult(
            (_text(f"No name was given ({json.dumps(answer.get('action'))})."),), is_error=True
        )
    return _done(f"Hello, {name}!")


async def _sampling(args: NoArgs) -> ContentResult:  # basic-sampling
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    answer = rounds.answer("capital_question")
    if answer is None:
        rounds.require({"capital_question": _sample("What is the capital of France?", 100)})
    return _done(f"LLM response: {_said(answer)}")


async def _list_roots(args: NoArgs) -> ContentResult:  # basic-list-roots
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    answer = rounds.answer("client_roots")
    if answer is None:
        rounds.require({"client_roots": ROOTS})
    return _done(f"Client roots: {', '.join(_roots(answer)) or '(none)'}")


_CONFIRM: Final = _form("Please confirm", "ok", "boolean")


async def _request_state(args: NoArgs) -> ContentResult:  # request-state
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    answer = rounds.answer("confirm")
    if answer is None:
        rounds.require({"confirm": _CONFIRM}, keep={"round": 1})
    # An answer is read only under a state this server sealed and verified for this very call.
    return _done(f"state-ok: round {rounds.kept['round']} confirmed, ok={json.dumps(_field(answer, 'ok'))}")


async def _tampered_state(args: NoArgs) -> ContentResult:  # tampered-state
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    answer = rounds.answer("confirm")
    if answer is None:
        rounds.require({"confirm": _CONFIRM})
    return _done(f"Confirmed: ok={json.dumps(_field(answer, 'ok'))}")


_MULTIPLE: Final[Mapping[str, mrtr.InputRequest]] = {
    "user_name": _form("What is your name?", "name"),
    "greeting": _sample("Generate a greeting", 50),
    "client_roots": ROOTS,
}


async def _multiple_inputs(args: NoArgs) -> ContentResult:  # multiple-input-requests
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    got = dict(rounds.kept)
    for key in _MULTIPLE:
        answer = rounds.answer(key)
        if answer is not None:
            got[key] = dict(answer)
    missing = {key: request for key, request in _MULTIPLE.items() if key not in got}
    if missing:  # ask again only what is still unanswered, keeping what was answered
        rounds.require(missing, keep=got)
    name = _field(got["user_name"], "name")
    roots = ", ".join(_roots(got["client_roots"])) or "(none)"
    return _done(f"name={json.dumps(name)}; greeting={json.dumps(_said(got['greeting']))}; roots={roots}")


async def _multi_round(args: NoArgs) -> ContentResult:  # multi-round
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    if "name" not in rounds.kept:
        first = rounds.answer("step1")
        name = None if first is None else _field(first, "name")
        if not isinstance(name, str):
            rounds.require({"step1": _form("Step 1: What is your name?", "name")})
        rounds.require({"step2": _form("Step 2: What is your favorite color?", "color")}, keep={"name": name})
    second = rounds.answer("step2")
    color = None if second is None else _field(second, "color")
    if not isinstance(color, str):
        rounds.require({"step2": _form("Step 2: What is your favorite color?", "color")}, keep=rounds.kept)
    return _done(f"{rounds.kept['name']}'s favorite color is {color}.")


async def _capabilities(args: NoArgs) -> ContentResult:  # capability-check
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    offered = {"user_name": _MULTIPLE["user_name"], "greeting": _MULTIPLE["greeting"], "client_roots": ROOTS}
    # Only what the client declared in its _meta clientCapabilities is ever asked.
    askable = {key: request for key, request in offered.items() if rounds.can_ask(request.method)}
    answered = [key for key in askable if rounds.answer(key) is not None]
    if not askable:
        return _done("The client declared none of elicitation, sampling and roots: nothing was asked.")
    if len(answered) < len(askable):
        rounds.require({key: request for key, request in askable.items() if key not in answered})
    return _done(f"Asked and answered: {', '.join(sorted(answered))}.")


async def _streaming_elicitation(args: NoArgs) -> ContentResult:  # server-stateless
    # In 2026-07-28 a question travels in the input-required result, never as a request of the
    # server's on the response stream.
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    answer = rounds.answer("confirm")
    if answer is None:
        rounds.require({"confirm": _form("Continue?", "ok", "boolean")})
    return _done(f"Streaming elicitation answered: ok={json.dumps(_field(answer, 'ok'))}")


async def _missing_capability(args: NoArgs) -> ContentResult:  # server-stateless
    # Nothing to do without the client's model: a request that does not declare sampling is
    # refused with -32021 (HTTP 400), never run without it.
    await trio.lowlevel.checkpoint()
    rounds = _rounds()
    rounds.need(mrtr.SAMPLE)
    answer = rounds.answer("summary")
    if answer is None:
        rounds.require({"summary": _sample("Summarise this conversation in one line.", 50)})
    return _done(f"Summary: {_said(answer)}")


MRTR_TOOLS: Final = (
    _tool("test_input_required_result_elicitation", "Asks the user's name.", _elicitation),
    _tool("test_input_required_result_sampling", "Asks the client's model a question.", _sampling),
    _tool("test_input_required_result_list_roots", "Asks the client's roots.", _list_roots),
    _tool("test_input_required_result_request_state", "Asks a confirmation under a state.", _request_state),
    _tool(
        "test_input_required_result_tampered_state",
        "Asks a confirmation; refuses a forged state.",
        _tampered_state,
    ),
    _tool("test_input_required_result_multiple_inputs", "Asks three things at once.", _multiple_inputs),
    _tool("test_input_required_result_multi_round", "Asks two things, one round each.", _multi_round),
    _tool("test_input_required_result_capabilities", "Asks only what the client declared.", _capabilities),
    _tool("test_missing_capability", "Needs the client's sampling; refused without it.", _missing_capability),
    _tool(
        "test_streaming_elicitation",
        "Asks a confirmation in the result, not on the stream.",
        _streaming_elicitation,
    ),
)


def _context_prompt(arguments: Mapping[str, str]) -> list[dict[str, Any]]:  # non-tool-request
    # A prompt asks as a tool does: prompts/get runs as a call with the same sealed rounds.
    rounds = _rounds()
    answer = rounds.answer("user_context")
    if answer is None:
        rounds.require({"user_context": _form("What context should the prompt use?", "context")})
    context = _field(answer, "context")
    said = context if isinstance(context, str) else f"none ({json.dumps(answer.get('action'))})"
    return [{"role": "user", "content": _text(f"Use this context: {said}")}]


MRTR_PROMPT: Final = Prompt(
    "test_input_required_result_prompt",
    "Prompt that asks",
    "Asks the user for the context it renders.",
    _context_prompt,
    asks=True,
)
