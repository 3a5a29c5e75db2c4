"""2026-07-28 multi round-trip requests (basic/patterns/mrtr) as values: no I/O, no trio, no randomness.

Owns what a retried request carries (`inputResponses`, `requestState`) and their checks; the seal of
`requestState` (HMAC-SHA256 under a key the runtime draws and passes in, binding the state to its
request: method, name, a digest of the arguments, the caller's subject, and an expiry on a clock the
runtime passes in); which questions a client may be asked (the capabilities it declared); the
input-required result; the yes/no question and the reading of its answer; and `Rounds`, the
questions of one call across its rounds. The runtime builds a `Rounds` per call; tools reach it
through `mcp_suite.asking`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

from mcp_suite.problems import (
    ClientCannotAskError,
    InvalidInputResponsesError,
    InvalidRequestStateError,
    MissingClientCapabilityError,
    NotApprovedError,
    echo,
)
from mcp_suite.settings import NAME_ECHO_CHARS, REQUEST_STATE_MAX_CHARS

__all__ = [
    "ELICIT",
    "INPUT_REQUIRED",
    "LIST_ROOTS",
    "SAMPLE",
    "Binding",
    "CallInput",
    "InputNeeded",
    "InputRequest",
    "InputRequired",
    "Retry",
    "Rounds",
    "YesNo",
    "bind",
    "can_ask",
    "input_required_result",
    "missing_capability",
    "parse_retry",
    "read_yes_no",
    "seal",
    "unseal",
    "yes_no_request",
]

INPUT_REQUIRED: Final = "input_required"
ELICIT: Final = "elicitation/create"
SAMPLE: Final = "sampling/createMessage"
LIST_ROOTS: Final = "roots/list"
# The client capability each kind of input request needs (basic/patterns/mrtr, Server Requirements
# 7: "MUST NOT send an inputRequests that the client has not declared support for").
CAPABILITY_OF: Final[Mapping[str, str]] = {ELICIT: "elicitation", SAMPLE: "sampling", LIST_ROOTS: "roots"}
# The one field of the yes/no form.
YES_NO_FIELD: Final = "approve"
_ACTIONS: Final = frozenset({"accept", "decline", "cancel"})
# What the MAC covers before the binding and the body: a state of another format or use never verifies.
_MAC_CONTEXT: Final = b"mcp-suite request-state v1\n"


def can_ask(capabilities: Mapping[str, Any], method: str) -> bool:
    """Whether a client that declared `capabilities` may be sent an input request of `method`.

    An elicitation is a form here (the only mode this server asks in): `elicitation: {}` declares
    form mode (client/elicitation, "Capabilities": an empty object means form, for backward
    compatibility); one that names its modes must name `form`.
    """
    declared = capabilities.get(CAPABILITY_OF[method])
    if not isinstance(declared, dict):
        return False
    if method == ELICIT and ("form" in declared or "url" in declared):
        return isinstance(declared.get("form"), dict)
    return True


# -- what a retry carries ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Retry:
    """The MRTR members of a request: the client's answers by key, and the state it echoes back."""

    responses: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    state: str | None = None


def parse_retry(params: Mapping[str, Any]) -> Retry:
    """The `inputResponses` and `requestState` of a request's params, checked for shape (-32602 when
    malformed: basic/patterns/mrtr, "Error Handling"). What the answers mean is read when asked."""
    responses: Mapping[str, Mapping[str, Any]] = {}
    if "inputResponses" in params:
        given = params["inputResponses"]
        if not isinstance(given, dict):
            raise InvalidInputResponsesError(
                '"inputResponses" must be an object: for each key of an input request, the result of it.',
                invalid_params=["inputResponses"],
            )
        for key, value in given.items():
            if not isinstance(value, dict):
                raise InvalidInputResponsesError(
                    f'"inputResponses" member {echo(key, NAME_ECHO_CHARS)!r} is not an object; each member'
                    " is the result of the input request of that key.",
                    invalid_params=["inputResponses"],
                )
        responses = given
    state: str | None = None
    if "requestState" in params:
        given = params["requestState"]
        if not isinstance(given, str) or not given or len(given) > REQUEST_STATE_MAX_CHARS:
            raise _state_refused(
                '"requestState" must be the string of the input-required result, sent back unchanged.'
            )
        state = given
    return Retry(responses, state)


@dataclass(frozen=True, slots=True)
class CallInput:
    """What a call may ask its client: the capabilities it declared and, in the modern era, the
    retry's members. The core hands it to the runtime with the call (`StartCall.asking`)."""

    modern: bool
    capabilities: Mapping[str, Any]
    retry: Retry = Retry()


# -- the seal of requestState -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Binding:
    """What a state is for: the request (method, name, digest of the arguments) and its caller."""

    method: str
    name: str
    arguments_digest: str
    subject: str

    def encode(self) -> bytes:
        return json.dumps([self.method, self.name, self.arguments_digest, self.subject]).encode("ascii")


def bind(method: str, name: str, arguments: Mapping[str, Any], subject: str) -> Binding:
    """The binding of a request: its arguments hashed as canonical JSON (sorted keys, ASCII), so
    that a state sealed for some arguments does not verify on a request with others."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return Binding(method, name, hashlib.sha256(canonical.encode("ascii")).hexdigest(), subject)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if (
        not text
        or not text.isascii()
        or text.strip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    ):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, binding: Binding, body: str) -> bytes:
    message = _MAC_CONTEXT + binding.encode() + b"\n" + body.encode("ascii")
    return hmac.new(key, message, hashlib.sha256).digest()


def seal(key: bytes, binding: Binding, data: Mapping[str, Any], *, expires_at: float) -> str:
    """`data` (JSON) sealed for `binding` until `expires_at` (the runtime's clock, in seconds).

    Security: the body is readable by the client (it holds only what the client itself sent or
    was asked); the MAC, under the runtime's per-process key, covers the binding and the body, so
    an altered body, another request's or caller's state, another process's state and one past
    its expiry do not verify. Limits: a state longer than REQUEST_STATE_MAX_CHARS would be refused
    on its way back, so sealing one is a bug (ValueError).
    """
    payload = {"exp": round(expires_at * 1000), "data": data}
    body = _b64(json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode("ascii"))
    token = body + "." + _b64(_mac(key, binding, body))
    if len(token) > REQUEST_STATE_MAX_CHARS:
        raise ValueError("the request state outgrew REQUEST_STATE_MAX_CHARS")
    return token


def unseal(key: bytes, token: str, binding: Binding, *, now: float) -> Mapping[str, Any]:
    """The data of a state this server sealed for `binding`, or `InvalidRequestStateError`.

    The MAC is checked (in constant time) before anything of the body is parsed.
    """
    body, dot, mac_text = token.partition(".")
    try:
        mac = _unb64(mac_text) if dot else b""
    except (ValueError, binascii.Error):
        mac = b""
    if len(mac) != hashlib.sha256().digest_size:
        raise _state_refused("The requestState is not one this server issued; send the one it returned.")
    if not hmac.compare_digest(mac, _mac(key, binding, body)):
        raise _state_refused(
            "The requestState was not issued by this server for this request: it was altered, or it"
            " belongs to another tool, other arguments, another caller or an earlier run of the server."
            " Call the tool again without it."
        )
    payload = json.loads(_unb64(body))  # sealed by us: well formed
    if now * 1000 > payload["exp"]:
        raise _state_refused("The requestState has expired; call the tool again without it.")
    data: Mapping[str, Any] = payload["data"]
    return data


def _state_refused(detail: str) -> InvalidRequestStateError:
    return InvalidRequestStateError(detail, invalid_params=["requestState"])


# -- input requests and the input-required result ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class InputRequest:
    """One request to the client (an `ElicitRequest`, `CreateMessageRequest` or `ListRootsRequest`)."""

    method: str
    params: Mapping[str, Any]

    def wire(self) -> dict[str, Any]:
        return {"method": self.method, "params": dict(self.params)}


class InputRequired(Exception):  # noqa: N818  # a control-flow signal, not an error: the call ends in a result
    """Raised inside a call that needs the client's input; the runtime reports it as `InputNeeded`."""

    def __init__(self, requests: Mapping[str, InputRequest], state: str | None) -> None:
        super().__init__("input required")
        self.requests = requests
        self.state = state


@dataclass(frozen=True, slots=True)
class InputNeeded:
    """How a call ended: it needs the client's answers to `requests`, retried with `state`."""

    requests: Mapping[str, InputRequest]
    state: str | None


def input_required_result(requests: Mapping[str, InputRequest], state: str | None) -> dict[str, Any]:
    """An `InputRequiredResult` (without the `_meta` every modern result carries)."""
    result: dict[str, Any] = {
        "resultType": INPUT_REQUIRED,
        "inputRequests": {key: request.wire() for key, request in requests.items()},
    }
    if state is not None:
        result["requestState"] = state
    return result


def yes_no_request(question: str) -> InputRequest:
    """A form elicitation with one boolean, `approve` (client/elicitation, BooleanSchema)."""
    return InputRequest(
        ELICIT,
        {
            "message": question,
            "requestedSchema": {
                "type": "object",
                "properties": {YES_NO_FIELD: {"type": "boolean", "title": "Approve"}},
                "required": [YES_NO_FIELD],
            },
        },
    )


@dataclass(frozen=True, slots=True)
class YesNo:
    """The person's answer: `approved` only on `accept` with `approve: true`."""

    approved: bool
    action: str

    def kept(self) -> dict[str, Any]:
        return {"approved": self.approved, "action": self.action}


def read_yes_no(where: str, response: object) -> YesNo:
    """An `ElicitResult` to the yes/no form; `InvalidInputResponsesError` for anything else.
    `where` names the answer in the refusal (`inputResponses['q1']`, or the client's result)."""
    action = response.get("action") if isinstance(response, dict) else None
    if action not in _ACTIONS:
        raise _not_an_answer(where, '"action" "accept", "decline" or "cancel"')
    if action != "accept":
        return YesNo(approved=False, action=str(action))
    content = response.get("content") if isinstance(response, dict) else None
    answer = content.get(YES_NO_FIELD) if isinstance(content, dict) else None
    if not isinstance(answer, bool):
        raise _not_an_answer(where, f'"content" whose "{YES_NO_FIELD}" is true or false')
    return YesNo(approved=answer, action="accept")


def _not_an_answer(where: str, needs: str) -> InvalidInputResponsesError:
    return InvalidInputResponsesError(
        f"{where} does not answer the question asked: it needs {needs}.", invalid_params=["inputResponses"]
    )


def not_approved(answer: YesNo) -> NotApprovedError:
    """The refusal of a call whose question was not approved."""
    said = "said no" if answer.action == "accept" else f"answered {answer.action!r}"
    return NotApprovedError(
        f"The user was asked and {said}; nothing was done.", metadata={"action": answer.action}
    )


def cannot_ask(method: str, why: str) -> ClientCannotAskError:
    """The refusal of a call whose question cannot be put to the person: fail closed."""
    capability = CAPABILITY_OF[method]
    return ClientCannotAskError(
        f"This call needs the user's answer, and {why}; it was refused, not answered for the user.",
        metadata={"capability": capability, "method": method},
    )


def missing_capability(method: str) -> MissingClientCapabilityError:
    """The refusal of a modern request that cannot be served at all without asking `method`, which
    its client did not declare: -32021 naming the capability (basic/index, "Error Codes"). Where
    the tool can go on without the answer, it is `cannot_ask` instead."""
    capability = CAPABILITY_OF[method]
    return MissingClientCapabilityError(
        f"This request needs the client capability {capability!r} (for {method}), which its _meta"
        " clientCapabilities does not declare; declare it to be asked, or do not call this.",
        required={capability: {}},
        metadata={"capability": capability, "method": method},
    )


# -- the questions of one call, across its rounds ---------------------------------------------------


class Rounds:
    """The questions one modern call asks, answered over retries without state on the server.

    Built by the runtime for each modern call, which verifies the retry's state at once (a state
    that fails is refused whether or not the tool asks). The state carries the answers kept so far
    and the keys just asked; an answer counts only for a key the verified state says was asked,
    so an answer sent without being asked (no state, or another key) is ignored and the question
    asked again (basic/patterns/mrtr, "Error Handling": re-request what is missing).
    """

    __slots__ = (
        "_answers",
        "_asked",
        "_bind",
        "_binding",
        "_capabilities",
        "_expires_at",
        "_keep",
        "_key",
        "_pending",
        "_responses",
    )

    def __init__(
        self,
        *,
        key: bytes,
        binding: Callable[[], Binding],
        call: CallInput,
        now: float,
        ttl_s: float,
    ) -> None:
        """`binding` is called once, and only when a state is verified or sealed: hashing the
        arguments is work in proportion to their size that a call which never asks does not do."""
        self._key = key
        self._bind = binding
        self._binding: Binding | None = None
        self._capabilities = call.capabilities
        self._expires_at = now + ttl_s
        self._responses = call.retry.responses
        self._answers: dict[str, Any] = {}
        self._pending: frozenset[str] = frozenset()
        self._keep: dict[str, Any] = {}
        self._asked = 0
        if call.retry.state is not None:
            data = unseal(key, call.retry.state, self._bound(), now=now)
            self._answers = dict(data["answers"])
            self._pending = frozenset(data["pending"])
            self._keep = dict(data["keep"])

    def _bound(self) -> Binding:
        if self._binding is None:
            self._binding = self._bind()
        return self._binding

    @property
    def responses(self) -> Mapping[str, Mapping[str, Any]]:
        """The retry's answers as sent (checked for shape only), for a question whose answer needs
        no integrity (tampering can do nothing worse than fail the call)."""
        return self._responses

    @property
    def kept(self) -> Mapping[str, Any]:
        """What the round before kept in its state (`require(keep=…)`); {} on a first call."""
        return self._keep

    def can_ask(self, method: str) -> bool:
        return can_ask(self._capabilities, method)

    def need(self, method: str) -> None:
        """Return if the client declared what asking `method` takes; else end the request with
        `MissingClientCapabilityError` (-32021): for a call that has nothing to do without it."""
        if not self.can_ask(method):
            raise missing_capability(method)

    def answer(self, key: str) -> Mapping[str, Any] | None:
        """The retry's result for `key` when the verified state says `key` was asked; else None
        (not asked, or not answered: ask it again)."""
        return self._responses.get(key) if key in self._pending else None

    def require(
        self, requests: Mapping[str, InputRequest], *, keep: Mapping[str, Any] | None = None
    ) -> NoReturn:
        """End the call with `requests` under the keys given (a tool that names its own), sealing
        `keep` (JSON) for the retry to read as `kept`; `ClientCannotAskError` when one of them
        needs a capability the client did not declare (none is sent then)."""
        for request in requests.values():
            if not self.can_ask(request.method):
                raise cannot_ask(
                    request.method, f"the client did not declare {CAPABILITY_OF[request.method]!r}"
                )
        raise InputRequired(dict(requests), self._seal(list(requests), dict(keep or {})))

    def _seal(self, pending: list[str], keep: dict[str, Any]) -> str:
        data = {"answers": self._answers, "pending": pending, "keep": keep}
        return seal(self._key, self._bound(), data, expires_at=self._expires_at)

    def ask(self, request: InputRequest, read: Callable[[str, object], Any]) -> Any:
        """The kept answer to this call's next question (`read` turns the client's result into
        the JSON value kept), or `InputRequired` asking it; `ClientCannotAskError` when the client
        did not declare the capability."""
        self._asked += 1
        key = f"q{self._asked}"
        if not self.can_ask(request.method):
            raise cannot_ask(request.method, f"the client did not declare {CAPABILITY_OF[request.method]!r}")
        if key in self._answers:
            return self._answers[key]
        if key in self._pending and key in self._responses:
            self._answers[key] = read(key, self._responses[key])
            return self._answers[key]
        raise InputRequired({key: request}, self._seal([key], self._keep))

    def ask_yes_no(self, question: str) -> YesNo:
        kept = self.ask(
            yes_no_request(question),
            lambda key, response: read_yes_no(
                f"inputResponses[{echo(key, NAME_ECHO_CHARS)!r}]", response
            ).kept(),
        )
        return YesNo(approved=kept["approved"] is True, action=str(kept["action"]))
