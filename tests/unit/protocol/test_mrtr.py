"""Multi round-trip requests (2026-07-28 input-required results), driven as values: the seal of
`requestState`, the retry's members, the capabilities a question needs, the yes/no answer, and the
rounds of one call. No event loop, no randomness: the key and the clock are values."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_suite.problems import (
    Channel,
    ClientCannotAskError,
    InvalidInputResponsesError,
    InvalidRequestStateError,
    MissingClientCapabilityError,
    ProblemError,
)
from mcp_suite.protocol import mrtr
from mcp_suite.settings import REQUEST_STATE_MAX_CHARS

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
CAN_ELICIT: dict[str, Any] = {"elicitation": {}}
BINDING = mrtr.bind("tools/call", "confirm", {"text": "hello", "n": 1}, "alice")
ACCEPT = {"action": "accept", "content": {"approve": True}}
NO_RETRY = mrtr.Retry()


def _rounds(
    retry: mrtr.Retry = NO_RETRY,
    *,
    capabilities: dict[str, Any] | None = None,
    binding: mrtr.Binding = BINDING,
    key: bytes = KEY,
    now: float = 1_000.0,
) -> mrtr.Rounds:
    call = mrtr.CallInput(
        modern=True, capabilities=CAN_ELICIT if capabilities is None else capabilities, retry=retry
    )
    return mrtr.Rounds(key=key, binding=lambda: binding, call=call, now=now, ttl_s=600.0)


def _asked(rounds: mrtr.Rounds, question: str = "Go on?") -> mrtr.InputRequired:
    with pytest.raises(mrtr.InputRequired) as raised:
        rounds.ask_yes_no(question)
    return raised.value


# -- capabilities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capabilities", "method", "allowed"),
    [
        ({}, mrtr.ELICIT, False),
        ({"sampling": {}, "roots": {}}, mrtr.ELICIT, False),
        ({"elicitation": {}}, mrtr.ELICIT, True),  # an empty object declares form mode
        ({"elicitation": {"form": {}}}, mrtr.ELICIT, True),
        ({"elicitation": {"form": {}, "url": {}}}, mrtr.ELICIT, True),
        ({"elicitation": {"url": {}}}, mrtr.ELICIT, False),  # URL mode only: no form to show
        ({"elicitation": True}, mrtr.ELICIT, False),
        ({"elicitation": None}, mrtr.ELICIT, False),
        ({"sampling": {}}, mrtr.SAMPLE, True),
        ({"elicitation": {}}, mrtr.SAMPLE, False),
        ({"roots": {"listChanged": True}}, mrtr.LIST_ROOTS, True),
        ({"roots": []}, mrtr.LIST_ROOTS, False),
    ],
)
def test_a_client_is_asked_only_what_its_declared_capabilities_cover(
    capabilities: dict[str, Any], method: str, allowed: bool
) -> None:
    assert mrtr.can_ask(capabilities, method) is allowed


# -- the retry's members ----------------------------------------------------------------------------


def test_a_request_without_retry_members_is_no_retry() -> None:
    assert mrtr.parse_retry({"name": "confirm", "arguments": {}}) == mrtr.Retry({}, None)


def test_a_retry_keeps_its_responses_and_state_as_sent() -> None:
    retry = mrtr.parse_retry({"inputResponses": {"q1": ACCEPT, "extra": {"x": 1}}, "requestState": "abc.def"})
    assert retry == mrtr.Retry({"q1": ACCEPT, "extra": {"x": 1}}, "abc.def")


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"inputResponses": None}, InvalidInputResponsesError),
        ({"inputResponses": []}, InvalidInputResponsesError),
        ({"inputResponses": "yes"}, InvalidInputResponsesError),
        ({"inputResponses": {"q1": 12345}}, InvalidInputResponsesError),
        ({"inputResponses": {"q1": ACCEPT, "q2": "accept"}}, InvalidInputResponsesError),
        ({"requestState": None}, InvalidRequestStateError),
        ({"requestState": 7}, InvalidRequestStateError),
        ({"requestState": ""}, InvalidRequestStateError),
        ({"requestState": "a" * (REQUEST_STATE_MAX_CHARS + 1)}, InvalidRequestStateError),
    ],
)
def test_malformed_retry_members_are_refused_with_their_own_problem(
    params: dict[str, Any], problem: type[ProblemError]
) -> None:
    with pytest.raises(problem) as raised:
        mrtr.parse_retry(params)
    assert raised.value.jsonrpc_code == -32602
    assert raised.value.invalid_params == (next(iter(params)),)


# -- the seal ---------------------------------------------------------------------------------------


def test_a_sealed_state_opens_for_its_own_request_until_it_expires() -> None:
    token = mrtr.seal(KEY, BINDING, {"answers": {"q1": True}}, expires_at=100.0)
    assert mrtr.unseal(KEY, token, BINDING, now=100.0) == {"answers": {"q1": True}}
    with pytest.raises(InvalidRequestStateError, match="expired"):
        mrtr.unseal(KEY, token, BINDING, now=100.001)


def test_the_binding_hashes_arguments_canonically_and_differs_by_each_part() -> None:
    assert mrtr.bind("tools/call", "t", {"a": 1, "b": 2}, "s") == mrtr.bind(
        "tools/call", "t", {"b": 2, "a": 1}, "s"
    )
    variants = {
        mrtr.bind("tools/call", "t", {"a": 1}, "s"),
        mrtr.bind("resources/read", "t", {"a": 1}, "s"),
        mrtr.bind("tools/call", "u", {"a": 1}, "s"),
        mrtr.bind("tools/call", "t", {"a": 2}, "s"),
        mrtr.bind("tools/call", "t", {"a": "1"}, "s"),
        mrtr.bind("tools/call", "t", {"a": 1}, "z"),
    }
    assert len(variants) == 6


def _tampered(token: str) -> list[str]:
    body, _, mac = token.partition(".")
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    return [
        token + "-TAMPERED",
        flipped + "." + mac,
        body + "." + mac[:-1] + ("A" if mac[-1] != "A" else "B"),
        body[:10] + body + "." + mac,
    ]


def test_an_altered_state_is_refused() -> None:
    token = mrtr.seal(KEY, BINDING, {"answers": {}, "pending": ["q1"]}, expires_at=100.0)
    for altered in _tampered(token):
        with pytest.raises(InvalidRequestStateError):
            mrtr.unseal(KEY, altered, BINDING, now=0.0)


@pytest.mark.parametrize(
    ("key", "binding"),
    [
        (OTHER_KEY, BINDING),  # another process (a key drawn at its start)
        (KEY, mrtr.bind("tools/call", "other_tool", {"text": "hello", "n": 1}, "alice")),
        (KEY, mrtr.bind("tools/call", "confirm", {"text": "goodbye", "n": 1}, "alice")),
        (KEY, mrtr.bind("tools/call", "confirm", {"text": "hello", "n": 1}, "mallory")),
        (KEY, mrtr.bind("resources/read", "confirm", {"text": "hello", "n": 1}, "alice")),
    ],
    ids=["another-process", "another-tool", "other-arguments", "another-caller", "another-method"],
)
def test_a_state_sealed_for_another_request_caller_or_process_is_refused(
    key: bytes, binding: mrtr.Binding
) -> None:
    token = mrtr.seal(KEY, BINDING, {"answers": {}}, expires_at=100.0)
    with pytest.raises(InvalidRequestStateError, match="not issued by this server for this request"):
        mrtr.unseal(key, token, binding, now=0.0)


@pytest.mark.parametrize(
    "token", ["x", "no-dot-at-all", ".", "abc.", ".abc", "a.b.c", "é.é", "abc.!!!!", "abc.AAAA"]
)
def test_a_state_not_of_the_servers_form_is_refused(token: str) -> None:
    with pytest.raises(InvalidRequestStateError, match="not one this server issued"):
        mrtr.unseal(KEY, token, BINDING, now=0.0)


def test_a_state_too_long_to_come_back_is_never_sealed() -> None:
    with pytest.raises(ValueError, match="REQUEST_STATE_MAX_CHARS"):
        mrtr.seal(KEY, BINDING, {"answers": {"x": "y" * REQUEST_STATE_MAX_CHARS}}, expires_at=1.0)


# -- the yes/no answer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "approved", "action"),
    [
        ({"action": "accept", "content": {"approve": True}}, True, "accept"),
        ({"action": "accept", "content": {"approve": True, "other": 1}}, True, "accept"),
        ({"action": "accept", "content": {"approve": False}}, False, "accept"),
        ({"action": "decline"}, False, "decline"),
        ({"action": "cancel"}, False, "cancel"),
        ({"action": "decline", "content": {"approve": True}}, False, "decline"),
    ],
)
def test_only_an_accepted_true_approves(response: dict[str, Any], approved: bool, action: str) -> None:
    assert mrtr.read_yes_no("inputResponses['q1']", response) == mrtr.YesNo(approved=approved, action=action)


@pytest.mark.parametrize(
    "response",
    [
        12345,
        {},
        {"action": "ACCEPT", "content": {"approve": True}},
        {"action": "accept"},
        {"action": "accept", "content": {}},
        {"action": "accept", "content": {"approve": "yes"}},
        {"action": "accept", "content": {"approve": 1}},
        {"action": "accept", "content": "approve"},
        {"role": "assistant", "content": {"type": "text", "text": "yes"}},  # a sampling result
        {"roots": []},
    ],
)
def test_an_answer_that_is_not_a_result_of_the_yes_no_form_is_refused(response: object) -> None:
    with pytest.raises(InvalidInputResponsesError, match=r"inputResponses\['q1'\] does not answer"):
        mrtr.read_yes_no("inputResponses['q1']", response)


def test_the_yes_no_question_is_a_form_with_one_required_boolean() -> None:
    assert mrtr.yes_no_request("Read table t?").wire() == {
        "method": "elicitation/create",
        "params": {
            "message": "Read table t?",
            "requestedSchema": {
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": "Approve"}},
                "required": ["approve"],
            },
        },
    }


def test_the_input_required_result_carries_the_requests_and_the_state() -> None:
    requests = {"q1": mrtr.yes_no_request("Go?"), "r": mrtr.InputRequest(mrtr.LIST_ROOTS, {})}
    assert mrtr.input_required_result(requests, "s.t") == {
        "resultType": "input_required",
        "inputRequests": {"q1": requests["q1"].wire(), "r": {"method": "roots/list", "params": {}}},
        "requestState": "s.t",
    }
    assert "requestState" not in mrtr.input_required_result(requests, None)


# -- the rounds of one call --------------------------------------------------------------------------


def test_a_first_call_is_asked_its_question_with_a_sealed_state() -> None:
    asked = _asked(_rounds(), "Read table t?")
    assert {key: request.wire() for key, request in asked.requests.items()} == {
        "q1": mrtr.yes_no_request("Read table t?").wire()
    }
    assert asked.state is not None
    assert mrtr.unseal(KEY, asked.state, BINDING, now=1_600.0) == {
        "answers": {},
        "pending": ["q1"],
        "keep": {},
    }
    with pytest.raises(InvalidRequestStateError, match="expired"):
        mrtr.unseal(KEY, asked.state, BINDING, now=1_600.01)


@pytest.mark.parametrize(
    ("answer", "approved"),
    [
        (ACCEPT, True),
        ({"action": "accept", "content": {"approve": False}}, False),
        ({"action": "decline"}, False),
        ({"action": "cancel"}, False),
    ],
)
def test_the_retry_with_the_state_brings_the_answer(answer: dict[str, Any], approved: bool) -> None:
    state = _asked(_rounds()).state
    rounds = _rounds(mrtr.Retry({"q1": answer}, state), now=1_300.0)
    assert rounds.ask_yes_no("Go on?") == mrtr.YesNo(approved=approved, action=answer["action"])


def test_an_answer_sent_without_the_state_is_ignored_and_the_question_asked_again() -> None:
    # A client (or a model writing its requests) cannot approve what it was never asked.
    asked = _asked(_rounds(mrtr.Retry({"q1": ACCEPT}, None)))
    assert list(asked.requests) == ["q1"]


def test_a_retry_that_leaves_the_question_unanswered_is_asked_again() -> None:
    state = _asked(_rounds()).state
    asked = _asked(_rounds(mrtr.Retry({"wrong_key": ACCEPT}, state)))
    assert list(asked.requests) == ["q1"]
    assert asked.state is not None


def test_an_answer_that_is_not_one_is_refused_not_taken_for_no() -> None:
    state = _asked(_rounds()).state
    rounds = _rounds(mrtr.Retry({"q1": {"action": "accept", "content": {"approve": "sure"}}}, state))
    with pytest.raises(InvalidInputResponsesError):
        rounds.ask_yes_no("Go on?")


def test_two_questions_take_two_rounds_and_the_first_answer_is_kept_sealed() -> None:
    def tool(rounds: mrtr.Rounds) -> tuple[bool, bool]:
        return rounds.ask_yes_no("First?").approved, rounds.ask_yes_no("Second?").approved

    with pytest.raises(mrtr.InputRequired) as first:
        tool(_rounds())
    with pytest.raises(mrtr.InputRequired) as second:
        tool(_rounds(mrtr.Retry({"q1": ACCEPT}, first.value.state)))
    assert list(second.value.requests) == ["q2"]
    assert second.value.state != first.value.state
    # the first answer rides in the new state: the client need not send it again
    assert tool(_rounds(mrtr.Retry({"q2": {"action": "decline"}}, second.value.state))) == (True, False)
    # an answer to q2 under the first state (which did not ask it) does not count
    with pytest.raises(mrtr.InputRequired) as again:
        tool(_rounds(mrtr.Retry({"q1": ACCEPT, "q2": ACCEPT}, first.value.state)))
    assert list(again.value.requests) == ["q2"]


@pytest.mark.parametrize(
    "capabilities",
    [{}, {"sampling": {}, "roots": {}}, {"elicitation": {"url": {}}}],
    ids=["none", "sampling-and-roots", "url-mode-only"],
)
def test_a_client_that_cannot_elicit_gets_a_refusal_never_a_yes(capabilities: dict[str, Any]) -> None:
    rounds = _rounds(mrtr.Retry({"q1": ACCEPT}, None), capabilities=capabilities)
    with pytest.raises(ClientCannotAskError) as raised:
        rounds.ask_yes_no("Go on?")
    assert raised.value.metadata == {"capability": "elicitation", "method": "elicitation/create"}
    assert raised.value.channel is Channel.RESULT  # in-band: the call is refused, the session goes on


@pytest.mark.parametrize(
    "state",
    [
        lambda token: token + "-TAMPERED",
        lambda token: mrtr.seal(
            OTHER_KEY, BINDING, {"answers": {"q1": True}, "pending": [], "keep": {}}, expires_at=9e9
        ),
        lambda token: mrtr.seal(
            KEY,
            mrtr.bind("tools/call", "confirm", {"text": "hello", "n": 1}, "mallory"),
            {"answers": {}, "pending": ["q1"]},
            expires_at=9e9,
        ),
    ],
    ids=["tampered", "another-process", "another-caller"],
)
def test_a_retry_whose_state_fails_is_refused_before_the_tool_asks_anything(state: Any) -> None:
    token = _asked(_rounds()).state
    with pytest.raises(InvalidRequestStateError):
        _rounds(mrtr.Retry({"q1": ACCEPT}, state(token)))


def test_a_retry_after_the_state_expired_is_refused() -> None:
    token = _asked(_rounds(now=1_000.0)).state
    with pytest.raises(InvalidRequestStateError, match="expired"):
        _rounds(mrtr.Retry({"q1": ACCEPT}, token), now=1_600.5)


def test_the_raw_responses_are_there_for_questions_that_need_no_integrity() -> None:
    rounds = _rounds(mrtr.Retry({"user_name": {"action": "accept", "content": {"name": "Alice"}}}, None))
    assert rounds.responses["user_name"]["content"] == {"name": "Alice"}
    assert rounds.can_ask(mrtr.ELICIT)
    assert not rounds.can_ask(mrtr.SAMPLE)


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        (mrtr.YesNo(approved=False, action="accept"), "The user was asked and said no; nothing was done."),
        (
            mrtr.YesNo(approved=False, action="decline"),
            "The user was asked and answered 'decline'; nothing was done.",
        ),
        (
            mrtr.YesNo(approved=False, action="cancel"),
            "The user was asked and answered 'cancel'; nothing was done.",
        ),
    ],
)
def test_a_question_not_approved_is_refused_in_band_with_the_answer(answer: mrtr.YesNo, detail: str) -> None:
    refused = mrtr.not_approved(answer)
    assert (refused.detail, refused.metadata, refused.channel) == (
        detail,
        {"action": answer.action},
        Channel.RESULT,
    )


def test_a_tool_names_its_own_requests_and_reads_only_the_answers_its_state_vouches_for() -> None:
    name = mrtr.InputRequest(mrtr.ELICIT, {"message": "Name?", "requestedSchema": {"type": "object"}})
    roots = mrtr.InputRequest(mrtr.LIST_ROOTS, {})
    first = _rounds(mrtr.Retry({"user_name": ACCEPT}, None), capabilities={"elicitation": {}, "roots": {}})
    assert first.answer("user_name") is None  # sent, but never asked: not vouched for
    assert first.kept == {}
    with pytest.raises(mrtr.InputRequired) as asked:
        first.require({"user_name": name, "client_roots": roots}, keep={"step": 1})
    assert list(asked.value.requests) == ["user_name", "client_roots"]
    retry = mrtr.Retry({"user_name": ACCEPT, "other": {"x": 1}}, asked.value.state)
    second = _rounds(retry, capabilities={"elicitation": {}, "roots": {}})
    assert second.answer("user_name") == ACCEPT
    assert second.answer("client_roots") is None  # asked, not answered
    assert second.answer("other") is None  # answered, not asked
    assert second.kept == {"step": 1}


def test_a_tool_that_requires_what_the_client_cannot_give_is_refused_and_asks_nothing() -> None:
    rounds = _rounds(capabilities={"elicitation": {}})
    with pytest.raises(ClientCannotAskError) as raised:
        rounds.require(
            {"q": mrtr.yes_no_request("Go?"), "s": mrtr.InputRequest(mrtr.SAMPLE, {"maxTokens": 5})}
        )
    assert raised.value.metadata == {"capability": "sampling", "method": "sampling/createMessage"}


def test_a_yes_no_question_after_a_tool_kept_something_keeps_it() -> None:
    with pytest.raises(mrtr.InputRequired) as first:
        _rounds().require({"step1": mrtr.yes_no_request("One?")}, keep={"step": 1})
    with pytest.raises(mrtr.InputRequired) as second:
        _rounds(mrtr.Retry({}, first.value.state)).ask_yes_no("Two?")
    assert _rounds(mrtr.Retry({}, second.value.state)).kept == {"step": 1}


@pytest.mark.parametrize(
    ("method", "capability"),
    [(mrtr.ELICIT, "elicitation"), (mrtr.SAMPLE, "sampling"), (mrtr.LIST_ROOTS, "roots")],
)
def test_a_call_that_needs_an_undeclared_capability_ends_with_minus_32021_naming_it(
    method: str, capability: str
) -> None:
    with pytest.raises(MissingClientCapabilityError) as raised:
        _rounds(capabilities={}).need(method)
    problem = raised.value
    assert (problem.channel, problem.jsonrpc_code) == (Channel.ERROR, -32021)
    assert problem.wire_data == {"requiredCapabilities": {capability: {}}}
    assert problem.metadata == {"capability": capability, "method": method}
    assert capability in problem.detail


def test_a_call_whose_capability_is_declared_goes_on() -> None:
    rounds = _rounds(capabilities={"sampling": {}, "elicitation": {"url": {}}})
    rounds.need(mrtr.SAMPLE)  # returns
    with pytest.raises(MissingClientCapabilityError):
        rounds.need(mrtr.ELICIT)  # URL mode only: no form can be shown


def test_the_arguments_are_hashed_only_when_a_state_is_verified_or_sealed_and_then_once() -> None:
    made: list[mrtr.Binding] = []

    def bind() -> mrtr.Binding:
        made.append(BINDING)
        return BINDING

    call = mrtr.CallInput(modern=True, capabilities=CAN_ELICIT)
    mrtr.Rounds(key=KEY, binding=bind, call=call, now=1_000.0, ttl_s=600.0)
    assert made == []  # a call that never asks does not pay for its arguments' digest
    first = mrtr.Rounds(key=KEY, binding=bind, call=call, now=1_000.0, ttl_s=600.0)
    asked = _asked(first)
    assert made == [BINDING]
    retry = mrtr.Retry(responses={key: ACCEPT for key in asked.requests}, state=asked.state)
    answered = mrtr.CallInput(modern=True, capabilities=CAN_ELICIT, retry=retry)
    second = mrtr.Rounds(key=KEY, binding=bind, call=answered, now=1_001.0, ttl_s=600.0)
    assert made == [BINDING, BINDING]  # verified at once, whether or not the tool asks again
    assert second.ask_yes_no("Go on?").approved
    _asked(second, "And then?")
    assert made == [BINDING, BINDING]  # sealed again with the binding already made
