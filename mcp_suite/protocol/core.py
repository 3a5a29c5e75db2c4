"""The session's decisions, as a state machine without I/O or trio (in the manner of h11's Connection).

Events in: each line read (`receive`, `receive_oversized`), each call's outcome (`call_finished`), the
end of input, a signal, the end of the drain's grace. Out: `Answer` (a frame to write, or none, and
what to audit), `StartCall` (run this call of this `CallKind` in its own task), `CancelCall` (cancel
that task) and `Shutdown` steps. The runtime carries them out and decides nothing about the protocol:
a call that raised a problem is reported as such (`CallRaised`), and the core picks its channel.

Both eras live here: a request whose `_meta` carries the modern protocol fields is served statelessly
(MCP 2026-07-28); anything else follows the `initialize` handshake of 2025-11-25 and earlier.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, Final

from mcp_suite.problems import (
    CallsBusyError,
    Channel,
    ConcurrencyLimitError,
    ExecutionTimeoutError,
    InternalServerError,
    InvalidParamsError,
    InvalidRequestError,
    ProblemError,
    PromptCannotAskError,
    ResourceNotFoundError,
    ShuttingDownError,
    UnsupportedVersionError,
    echo,
)
from mcp_suite.protocol import completion, contents, mcp, mrtr, prompts
from mcp_suite.protocol.framing import OversizedFrame
from mcp_suite.protocol.jsonrpc import (
    ClientResponse,
    JsonRpcError,
    Message,
    Notification,
    Request,
    RequestId,
    compact_json,
    decode_message,
    encode_error,
    encode_result,
    encode_tool_success,
    sniff_id,
    sniff_tail_id,
)
from mcp_suite.protocol.sanitize import sanitize_arguments
from mcp_suite.protocol.talk import ClientAnswered, TalkTable
from mcp_suite.protocol.untrusted import new_boundary
from mcp_suite.settings import ECHO_MAX_CHARS, NAME_ECHO_CHARS

__all__ = [
    "Answer",
    "CallInterrupted",
    "CallKind",
    "CallOutcome",
    "CallRaised",
    "CancelCall",
    "Completed",
    "Era",
    "IdKey",
    "PromptRendered",
    "ResourceRead",
    "SessionCore",
    "Shutdown",
    "StartCall",
    "ToolSucceeded",
    "id_key",
]

IdKey = tuple[str, RequestId]


def id_key(request_id: RequestId) -> IdKey:
    """Ids compare by type too: `7` and `"7"` are two requests (cancellation matches leniently)."""
    return ("i", request_id) if isinstance(request_id, int) else ("s", request_id)


def _lenient_keys(request_id: object) -> list[IdKey]:
    """`"7"` cancels 7 and 7 cancels `"7"`: exact form first, then the other one."""
    if isinstance(request_id, bool):
        return []
    if isinstance(request_id, int):
        return [("i", request_id), ("s", str(request_id))]
    if isinstance(request_id, str):
        keys: list[IdKey] = [("s", request_id)]
        text = request_id.strip()
        if text and (text.isdigit() or (text[0] == "-" and text[1:].isdigit())) and len(text) < 20:
            keys.append(("i", int(text)))
        return keys
    return []


class Era(enum.Enum):
    LEGACY = "legacy"  # the initialize handshake, 2025-11-25 and earlier
    MODERN = "modern"  # per-request `_meta`, 2026-07-28


class CallKind(enum.Enum):
    """What a `StartCall` runs: a tool (through the limiter), a resource read, the names a
    resource's reader may read that complete an argument (`completion.DatabaseNames`), or the
    render of a prompt that asks its client (2026-07-28; every other prompt is answered inline)."""

    TOOL = "tools/call"
    RESOURCE = "resources/read"
    COMPLETE = completion.COMPLETE_METHOD
    PROMPT = "prompts/get"


# -- what the core asks the runtime to do ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """Write `frame` (None: write nothing, as for a cancelled call), then audit the request.

    `outcome` is "ok", "error", "cancelled" or "input-required" (a 2026-07-28 call that asked its
    client and waits for the retry). `warm_up` is True on the first answer that opens the
    session (initialize, or a modern request): once it is written, the runtime starts the warm-up.
    `error_code`: the JSON-RPC error code `frame` carries (None: a result, in-band errors included),
    which a transport's status table reads instead of the frame.
    """

    frame: bytes | None
    request_id: RequestId | None
    method: str
    outcome: str
    problem: ProblemError | None = None
    _: KW_ONLY
    tool: str | None = None
    arguments: Any = None
    warm_up: bool = False
    error_code: int | None = None


@dataclass(frozen=True, slots=True)
class StartCall:
    """Run the tool or resource `name` (by `kind`) in its own task, registered by `key`.
    The runtime reports how it ended with `call_finished(key, outcome)`."""

    key: IdKey
    request_id: RequestId
    kind: CallKind
    name: str
    arguments: dict[str, Any]
    # For the traces (docs/operations/watching.md): the W3C `traceparent` the request carries in
    # `params._meta` (OpenTelemetry's MCP conventions), a string of at most _TRACEPARENT_CHARS
    # the runtime's tracer parses or ignores; and the protocol version the call is served under.
    trace_parent: str | None = None
    protocol_version: str | None = None
    # A tool call's or an asking prompt's means of asking its client (`protocol.mrtr`): the declared
    # capabilities and, in the modern era, the retry's `inputResponses` and `requestState`; None for
    # a resource read.
    asking: mrtr.CallInput | None = None
    # The request's `_meta.progressToken` (None: it asked for no progress): the runtime reports
    # the call's progress through the core's `talk` table, which builds each notification.
    progress_token: str | int | None = None


@dataclass(frozen=True, slots=True)
class CancelCall:
    """Cancel the task of `key`; it still reports its end, and the core sends nothing for it."""

    key: IdKey


# `ClientAnswered` (protocol.talk): the client answered a request of the server's; the runtime hands
# it to the call that waits for it.
Event = Answer | StartCall | CancelCall | ClientAnswered


class Shutdown(enum.Enum):
    STOP_READING = "stop-reading"  # start the drain: read nothing more, let calls finish
    CANCEL_CALLS = "cancel-calls"  # cancel every call now; each still reports its end


# -- how a call ended (reported by the runtime) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSucceeded:
    """The tool returned: `structured_json` is its result as compact ASCII JSON. `untrusted`: it
    carries data the tool read (rows, catalogue text, files), sent inside the untrusted-data frame
    (`protocol.untrusted`) with a boundary drawn for this answer."""

    structured_json: bytes
    untrusted: bool = False


@dataclass(frozen=True, slots=True)
class ResourceRead:
    """The resource's text, or (`blob`, not None) its bytes, sent as base64."""

    text: str
    blob: bytes | None = None


@dataclass(frozen=True, slots=True)
class CallRaised:
    """The call (or the runtime's limiter before it) raised `problem`, or failed unexpectedly and the
    runtime made it an `InternalServerError` with an incident id. The core picks the channel."""

    problem: ProblemError


@dataclass(frozen=True, slots=True, kw_only=True)
class CallInterrupted:
    """The call's cancel scope fired; `deadline_passed` tells whether its deadline had come."""

    deadline_passed: bool


@dataclass(frozen=True, slots=True)
class PromptRendered:
    """The prompt's messages (`PromptMessage` objects), as its render returned them."""

    messages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Completed:
    """The names that complete the argument (in order, at most the cap), and how many matched."""

    values: tuple[str, ...]
    total: int


CallOutcome = (
    ToolSucceeded
    | contents.ToolContent
    | ResourceRead
    | Completed
    | PromptRendered
    | CallRaised
    | CallInterrupted
    | mrtr.InputNeeded
)


class _Call:
    """The protocol side of one call in flight (the runtime keeps its task and cancel scope)."""

    __slots__ = ("arguments", "client_cancelled", "era", "kind", "method", "name", "request_id")

    def __init__(self, request_id: RequestId, kind: CallKind, name: str, era: Era, arguments: Any) -> None:
        self.request_id = request_id
        self.kind = kind
        self.method = kind.value
        self.name = name
        self.era = era
        self.arguments = arguments
        self.client_cancelled = False


# Methods the 2026-07-28 revision removed (changelog, "Major changes" 2, 4 and 5): in a modern request
# they do not exist, so they get -32601 like any unknown method.
_REMOVED_IN_MODERN: Final = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
    }
)
# A W3C traceparent is 55 characters (version 00); a longer `_meta.traceparent` is not one.
_TRACEPARENT_CHARS: Final = 128
_RESOURCE_METHODS: Final = frozenset({"resources/list", "resources/read", "resources/templates/list"})
# prompts/get is a call only for a prompt that asks (`_asking_prompt`); the others are answered inline.
_CALL_METHODS: Final = frozenset(kind.value for kind in CallKind if kind is not CallKind.PROMPT)
_TOOL_METHODS: Final = frozenset({"tools/list", "tools/call"})
_LEGACY_ONLY: Final = frozenset({"initialize", "ping", "logging/setLevel"})
_MODERN_ONLY: Final = frozenset({"server/discover"})
# Served only by a core given prompts, or subscriptions (legacy only: 2026-07-28 removed them).
_PROMPT_METHODS: Final = frozenset({"prompts/list", "prompts/get"})
_SUBSCRIBE_METHODS: Final = frozenset({"resources/subscribe", "resources/unsubscribe"})
# Every method a core may serve (which it does depends on its era and resources): the tables below
# are made of these sets alone, and telemetry names a method by them (any other is `_OTHER`).
SERVED_METHODS: Final = (
    _TOOL_METHODS
    | _RESOURCE_METHODS
    | _LEGACY_ONLY
    | _MODERN_ONLY
    | _CALL_METHODS
    | _PROMPT_METHODS
    | _SUBSCRIBE_METHODS
)


class SessionCore:
    """The state of one stdio session: the legacy handshake, the calls in flight, the drain.

    Modern requests leave no state behind (basic/index, "Statelessness"): the handshake state only
    ever changes on `initialize`. Not thread-safe; the runtime calls it from one task at a time.
    """

    __slots__ = (
        "_calls",
        "_completions",
        "_deadline_s",
        "_draw_boundary",
        "_instructions",
        "_legacy_known",
        "_list_scope",
        "_max_depth",
        "_max_depth_args",
        "_max_frame_bytes",
        "_max_items",
        "_modern_fields",
        "_modern_known",
        "_modern_tail",
        "_offers",
        "_prompts",
        "_resources",
        "_resources_listed",
        "_server_name",
        "_server_version",
        "_subscriptions",
        "_templates",
        "_tool_names",
        "_tools",
        "_warm_up_due",
        "draining",
        "legacy_version",
        "stopping",
        "talk",
    )

    def __init__(
        self,
        *,
        server_name: str,
        server_version: str,
        tool_names: Sequence[str],
        tools: Callable[[], Sequence[mcp.ToolDescription]],
        instructions: str,
        resources: Sequence[mcp.ResourceDescription] = (),
        resources_listed: Callable[[str], bool] | None = None,
        max_frame_bytes: int,
        max_json_depth: int,
        arg_max_depth: int,
        arg_max_items: int,
        call_deadline_s: float,
        draw_boundary: Callable[[], int],
        per_caller_lists: bool = False,
        completions: completion.Completer | None = None,
        prompt_list: Sequence[prompts.Prompt] = (),
        templates: Sequence[contents.ResourceTemplate] = (),
        subscriptions: bool = False,
    ) -> None:
        self._server_name = server_name
        self._server_version = server_version
        self._tool_names = frozenset(tool_names)
        self._tools = tools
        self._instructions = instructions
        self._resources = {resource.uri: resource for resource in resources}
        # Which of them resources/list shows (None: all); the others are still read through a
        # call, so that the transport answers a caller who may not read one as it answers a tool
        # call it may not make.
        self._resources_listed = resources_listed
        self._max_frame_bytes = max_frame_bytes
        self._max_depth = max_json_depth
        self._max_items = arg_max_items
        self._max_depth_args = arg_max_depth
        self._deadline_s = call_deadline_s
        # The untrusted-data frame's random bits (`untrusted.new_boundary`): the server's come from
        # `secrets`, a table test's from a counter, so that it can assert a whole answer.
        self._draw_boundary = draw_boundary
        # server/utilities/caching, "cacheScope": a list that depends on who asks (the HTTP
        # transport shows each token only what its scopes allow) must not be shared across
        # authorization contexts: "private".
        self._list_scope = "private" if per_caller_lists else "public"
        # completion/complete only where something is completed (its capability likewise).
        self._completions = completions or None
        # Prompts, resource templates and subscriptions: only where a toolset offers them (the
        # product offers none), and then advertised in the capabilities too (`_offers`).
        self._prompts = {prompt.name: prompt for prompt in prompt_list}
        self._templates = tuple(templates)
        self._subscriptions = contents.Subscriptions() if subscriptions else None
        self._offers = mcp.Offers(
            resources=bool(resources) or bool(templates),
            prompts=bool(prompt_list),
            subscribe=subscriptions,
            completions=self._completions is not None,
        )
        common = (
            _TOOL_METHODS
            | (_RESOURCE_METHODS if self._offers.resources else frozenset())
            | (_PROMPT_METHODS if prompt_list else frozenset())
        )
        if self._completions is not None:
            common |= {completion.COMPLETE_METHOD}
        self._legacy_known = common | _LEGACY_ONLY | (_SUBSCRIBE_METHODS if subscriptions else frozenset())
        self._modern_known = common | _MODERN_ONLY
        self._modern_fields = mcp.modern_fields(server_name, server_version)
        self._modern_tail = b"," + compact_json(self._modern_fields)[1:-1].encode("ascii")
        self._calls: dict[IdKey, _Call] = {}
        # What the calls say to the client while they run (progress, log messages, requests).
        self.talk = TalkTable()
        self._warm_up_due = True
        self.legacy_version: str | None = None  # set by a successful initialize
        self.draining = False
        self.stopping = False

    # -- queries ---------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._calls)

    @property
    def omits_unknown_id(self) -> bool:
        """An error whose request id is unreadable leaves `id` out, unless the session negotiated a
        version whose schema requires `id` (2025-06-18 and earlier: there it is `null`, per JSON-RPC)."""
        return self.legacy_version is None or self.legacy_version == mcp.LATEST_VERSION

    # -- events: input ---------------------------------------------------------------------------

    def receive(self, data: bytes) -> Event | None:
        """One frame in; at most one event out. Never raises for anything the client sent."""
        return self.receive_message(self.decode(data))

    def decode(self, data: bytes) -> Message | JsonRpcError:
        """A frame as a message, or the envelope problem that stops it (for a transport that reads
        the message itself before `receive_message`, so that it is decoded once)."""
        try:
            return decode_message(data, max_depth=self._max_depth)
        except JsonRpcError as exc:
            return exc

    def receive_message(self, message: Message | JsonRpcError) -> Event | None:
        """A frame `decode` read; at most one event out."""
        if isinstance(message, JsonRpcError):
            return self._error(message.request_id, "", message)
        if isinstance(message, Request):
            return self._request(message)
        if isinstance(message, ClientResponse):
            return self.talk.answered(message)  # None: no call of this session waits for it
        return self._notification(message)

    def receive_oversized(self, event: OversizedFrame) -> Answer:
        """A line over the limit, discarded while it streamed: -32600, with its id if its head has it
        (written first) or its tail (written last, as the TypeScript SDKs do)."""
        limit = self._max_frame_bytes
        request_id = sniff_id(event.head)
        if request_id is None:
            request_id = sniff_tail_id(event.tail)
        problem = JsonRpcError(
            f"The message is longer than {limit} bytes and was discarded; "
            "send one JSON-RPC message per line, each at most that long.",
            request_id=request_id,
        )
        problem.metadata["max_frame_bytes"] = limit
        problem.wire_data["max_frame_bytes"] = limit
        return self._error(problem.request_id, "", problem)

    def input_ended(self) -> None:
        """The reader stopped (EOF, a failed read, or the drain): the drain has begun."""
        self.draining = True

    def signal_received(self) -> Shutdown:
        """SIGINT/SIGTERM: the first starts the drain; one during a drain (whatever started it, EOF
        included) cancels every call at once."""
        if not self.draining:
            self.draining = True
            return Shutdown.STOP_READING
        self.stopping = True
        return Shutdown.CANCEL_CALLS

    def grace_over(self) -> Shutdown:
        """The drain's grace has passed with calls still running: cancel them."""
        self.stopping = True
        return Shutdown.CANCEL_CALLS

    # -- events: calls ---------------------------------------------------------------------------

    def call_finished(self, key: IdKey, outcome: CallOutcome) -> Answer:
        """A call task ended (or the runtime could not start it). Returns what to send for it."""
        call = self._calls.pop(key)
        self.talk.call_ended(key)  # nothing more goes out for it once its result is decided
        era = call.era
        is_tool = call.kind is CallKind.TOOL
        tool = call.name if is_tool else None
        if call.client_cancelled:
            # stdio "Cancellation": the server MUST NOT send any further messages for it.
            return Answer(
                None, call.request_id, call.method, "cancelled", tool=tool, arguments=call.arguments
            )
        if isinstance(outcome, ToolSucceeded):
            tail = self._modern_tail if era is Era.MODERN else b""
            data = outcome.structured_json
            boundary = new_boundary(data, self._draw_boundary) if outcome.untrusted else None
            frame = encode_tool_success(call.request_id, data, tail, boundary=boundary)
            return Answer(frame, call.request_id, call.method, "ok", tool=tool, arguments=call.arguments)
        if isinstance(outcome, Completed):
            return self._ok(
                call.request_id, call.method, completion.completion_result(outcome.values, outcome.total), era
            )
        if isinstance(outcome, mrtr.InputNeeded):
            return self._input_needed(call, outcome)
        if isinstance(outcome, PromptRendered):
            rendered = prompts.prompt_result(self._prompts[call.name], outcome.messages)
            return self._ok(call.request_id, call.method, rendered, era)
        if isinstance(outcome, contents.ToolContent):
            failed = outcome.result.is_error
            result: dict[str, Any] = {"content": list(outcome.result.content), "isError": failed}
            frame = encode_result(call.request_id, self._result(result, era))
            said = "error" if failed else "ok"
            return Answer(frame, call.request_id, call.method, said, tool=tool, arguments=call.arguments)
        if isinstance(outcome, ResourceRead):
            uri, mime_type = self._read_target(call)
            entry = (
                contents.text_entry(uri, mime_type, outcome.text)
                if outcome.blob is None
                else contents.blob_entry(uri, mime_type, outcome.blob)
            )
            result = {"contents": [entry]}
            if era is Era.MODERN:
                result.update(mcp.cache_fields(ttl_ms=mcp.READ_TTL_MS, scope="private"))
            return self._ok(call.request_id, call.method, result, era)
        problem: ProblemError
        if isinstance(outcome, CallRaised):
            problem = outcome.problem
            if call.kind is CallKind.COMPLETE and type(problem) is ConcurrencyLimitError:
                # No in-band channel: the limiter's refusal travels as a JSON-RPC error.
                problem = CallsBusyError(problem.detail, metadata=problem.metadata)
        elif outcome.deadline_passed and not self.stopping and is_tool:
            problem = self._timed_out()  # in-band, like every refusal caused by what was asked
        elif outcome.deadline_passed and not self.stopping:
            what = {
                CallKind.COMPLETE: "resource could not be completed",
                CallKind.PROMPT: "prompt could not be rendered",
            }
            problem = InternalServerError(
                f"The {what.get(call.kind, 'resource could not be read')} within the call deadline."
            )
        else:
            problem = ShuttingDownError(
                "The server shut down before this call finished; it was cancelled. Send it again"
                " once the server is running.",
                metadata={"retryable": True},
            )
        # In-band only from a tool, and only a problem of what was asked: an infrastructure fault
        # (database-unavailable, an incident) travels as a JSON-RPC error, as does every problem of
        # a resource read (its result has no `isError`).
        if is_tool and problem.channel is Channel.RESULT:
            frame = encode_result(call.request_id, self._result(mcp.call_error_result(problem), era))
            return Answer(
                frame, call.request_id, call.method, "error", problem, tool=tool, arguments=call.arguments
            )
        return self._error(call.request_id, call.method, problem, tool=tool, arguments=call.arguments)

    # -- requests --------------------------------------------------------------------------------

    def _request(self, request: Request) -> Event:
        meta = request.params.get("_meta")
        if request.method == "server/discover" or (
            isinstance(meta, dict)
            and request.method != "initialize"
            and (mcp.PROTOCOL_VERSION_KEY in meta or mcp.CLIENT_CAPABILITIES_KEY in meta)
        ):
            # versioning, "Backward Compatibility": a request carrying modern per-request `_meta` is
            # served statelessly; `initialize` always selects the legacy era.
            return self._modern(request, meta)
        return self._legacy(request)

    def _modern(self, request: Request, meta: object) -> Event:
        method = request.method
        # basic/index, "Per-request protocol fields": a request missing a required field is
        # malformed and MUST be rejected with -32602.
        if not isinstance(meta, dict):
            return self._invalid_meta(request, "needs params._meta with the per-request protocol fields")
        missing = [key for key in (mcp.PROTOCOL_VERSION_KEY, mcp.CLIENT_CAPABILITIES_KEY) if key not in meta]
        if missing:
            return self._invalid_meta(request, "lacks " + " and ".join(repr(key) for key in missing))
        version = meta[mcp.PROTOCOL_VERSION_KEY]
        if not isinstance(version, str):
            return self._invalid_meta(request, f"has {mcp.PROTOCOL_VERSION_KEY!r} that is not a string")
        if not isinstance(meta[mcp.CLIENT_CAPABILITIES_KEY], dict):
            return self._invalid_meta(request, f"has {mcp.CLIENT_CAPABILITIES_KEY!r} that is not an object")
        if version != mcp.MODERN_VERSION:
            # versioning, "Protocol Version Negotiation": -32022 listing the versions served.
            unsupported = UnsupportedVersionError(
                f"This server does not serve protocol version {echo(version, NAME_ECHO_CHARS)!r} per "
                f"request; it serves {mcp.MODERN_VERSION} so, and {', '.join(mcp.LEGACY_VERSIONS)} "
                "through initialize.",
            )
            return self._error(request.id, method, unsupported, mcp.unsupported_version_data(version))
        if method not in self._modern_known:
            problem: ProblemError
            if method in _REMOVED_IN_MODERN:
                problem = mcp.removed_method(method)
            else:
                problem = mcp.unknown_method(method)
            return self._error(request.id, method, problem)
        if method in _CALL_METHODS or self._asking_prompt(request):
            return self._start_call(request, Era.MODERN)
        return self._inline(request, Era.MODERN)

    def _invalid_meta(self, request: Request, what: str) -> Answer:
        return self._error(request.id, request.method, mcp.invalid_request_meta(what))

    def _legacy(self, request: Request) -> Event:
        method = request.method
        problem: ProblemError
        if method not in self._legacy_known:
            problem = mcp.unknown_method(method)
        elif method == "ping":  # at any time; the most frequent request, so answered directly
            return Answer(encode_result(request.id, {}), request.id, method, "ok")
        elif method == "initialize":
            return self._inline(request, Era.LEGACY)
        elif self.legacy_version is None:
            problem = mcp.not_initialized(method)
        elif method in _CALL_METHODS:
            return self._start_call(request, Era.LEGACY)
        elif self._asking_prompt(request):
            # Input-required results exist only in 2026-07-28, and a prompt has no legacy context to
            # ask through: refused, as a tool that cannot ask is (never rendered without the answer).
            problem = PromptCannotAskError(
                "This prompt needs the user's answer, which it can ask for only in protocol version"
                " 2026-07-28; it was refused, not rendered without it.",
                metadata={"capability": "elicitation", "method": mrtr.ELICIT},
            )
        else:
            return self._inline(request, Era.LEGACY)
        return self._error(request.id, method, problem)

    def _inline(self, request: Request, era: Era) -> Answer:
        method = request.method
        result: dict[str, Any]
        try:
            # ping never comes here: the legacy era answers it directly, the modern one removed it.
            if method == "initialize":
                if self.legacy_version is not None:
                    raise InvalidRequestError("The session is already initialized.")
                self.legacy_version = mcp.negotiate_version(request.params.get("protocolVersion"))
                declared = request.params.get("capabilities")
                self.talk.client_capabilities = declared if isinstance(declared, dict) else {}
                result = mcp.initialize_result(
                    version=self.legacy_version,
                    server_name=self._server_name,
                    server_version=self._server_version,
                    # completions from the first revision that defines them; logging in every
                    # handshake era (2026-07-28 deprecates it, so server/discover never says it).
                    offers=replace(
                        self._offers,
                        completions=self._offers.completions
                        and completion.advertised_in(self.legacy_version),
                        logging=True,
                    ),
                    instructions=self._instructions,
                )
            elif method == "logging/setLevel":  # the handshake eras only (2026-07-28 removed it)
                result = self.talk.set_level(request.params)
            elif method == "server/discover":
                result = mcp.discover_result(offers=self._offers, instructions=self._instructions)
            elif method == "tools/list":
                result = mcp.tools_list_result(self._tools(), request.params)
                if era is Era.MODERN:
                    result.update(mcp.cache_fields(ttl_ms=mcp.LIST_TTL_MS, scope=self._list_scope))
            elif method == "resources/list":
                shown = self._resources_listed or (lambda _uri: True)
                result = {
                    "resources": [mcp.resource_entry(r) for r in self._resources.values() if shown(r.uri)]
                }
                if era is Era.MODERN:
                    result.update(mcp.cache_fields(ttl_ms=mcp.LIST_TTL_MS, scope=self._list_scope))
            elif method == "resources/templates/list":
                # Only the templates the caller may read (over HTTP, those its token grants), as
                # resources/list; an empty list is the same for everyone.
                shown = self._resources_listed or (lambda _uri: True)
                templates = [t.entry() for t in self._templates if shown(t.uri_template)]
                result = {"resourceTemplates": templates}
                if era is Era.MODERN:
                    scope = self._list_scope if self._templates else "public"
                    result.update(mcp.cache_fields(ttl_ms=mcp.LIST_TTL_MS, scope=scope))
            else:  # prompts and subscriptions, each in the tables only where served
                result = self._offered(method, request.params, era)
        except ProblemError as exc:
            return self._error(request.id, method, exc)
        answer = self._ok(request.id, method, result, era)
        if self._warm_up_due and (method == "initialize" or era is Era.MODERN):
            self._warm_up_due = False
            return Answer(answer.frame, request.id, method, "ok", warm_up=True)
        return answer

    def _start_call(self, request: Request, era: Era) -> Answer | StartCall:
        """The synchronous checks of a call, then a `StartCall` (the runtime's limiter comes next)."""
        key = id_key(request.id)
        method = request.method
        if key in self._calls:
            problem: ProblemError = InvalidRequestError(
                "A call with this id is still running; use a new id for each request."
            )
            return self._error(request.id, method, problem)
        if method == CallKind.COMPLETE.value:
            return self._complete(request, era)
        if method == CallKind.PROMPT.value:
            return self._start_prompt(request, era)
        if method == CallKind.RESOURCE.value:
            uri = request.params.get("uri")
            template = None
            if isinstance(uri, str) and uri not in self._resources:
                template = contents.template_for(self._templates, uri)
            if template is not None:
                # A templated read runs as a call of the template (its grant, its reader), for `uri`.
                target = {"uri": uri}
                self._calls[key] = _Call(request.id, CallKind.RESOURCE, template.uri_template, era, target)
                return StartCall(
                    key,
                    request.id,
                    CallKind.RESOURCE,
                    template.uri_template,
                    target,
                    *self._trace_fields(request, era),
                )
            if not isinstance(uri, str) or uri not in self._resources:
                # server/resources, "Error Handling": a URI nobody serves is -32002 up to 2025-11-25,
                # -32602 from 2026-07-28 on; a missing or malformed one is -32602 in both.
                words = 'resources/read needs the "uri" of a resource that resources/list shows.'
                extra: dict[str, Any] | None = None
                if isinstance(uri, str) and era is Era.LEGACY:
                    problem = ResourceNotFoundError(words, invalid_params=["uri"])
                else:
                    problem = InvalidParamsError(words, invalid_params=["uri"])
                    if isinstance(uri, str) and len(uri) <= ECHO_MAX_CHARS:
                        # 2026-07-28 resources, "Error Handling": the error's data names the URI
                        # not found (a longer one is not repeated back whole, nor cut to mislead).
                        extra = {"uri": uri}
                return self._error(request.id, method, problem, extra)
            self._calls[key] = _Call(request.id, CallKind.RESOURCE, uri, era, None)
            token = self.talk.call_started(key, request.params, legacy=era is Era.LEGACY)
            return StartCall(
                key,
                request.id,
                CallKind.RESOURCE,
                uri,
                {},
                *self._trace_fields(request, era),
                progress_token=token,
            )
        try:
            call = mcp.parse_call_params(request.params)
        except ProblemError as exc:
            return self._error(request.id, method, exc)
        if call.name not in self._tool_names:
            problem = mcp.unknown_tool(call.name)
            return self._error(request.id, method, problem, tool=call.name)
        try:
            # The structural sanitizer, before anything else looks at the arguments.
            sanitize_arguments(call.arguments, max_depth=self._max_depth_args, max_items=self._max_items)
        except ProblemError as exc:
            frame = encode_result(request.id, self._result(mcp.call_error_result(exc), era))
            return Answer(frame, request.id, method, "error", exc, tool=call.name, arguments=call.arguments)
        try:
            asking = self._asking(request, era)
        except ProblemError as exc:
            return self._error(request.id, method, exc, tool=call.name, arguments=call.arguments)
        self._calls[key] = _Call(request.id, CallKind.TOOL, call.name, era, call.arguments)
        token = self.talk.call_started(key, request.params, legacy=era is Era.LEGACY)
        return StartCall(
            key,
            request.id,
            CallKind.TOOL,
            call.name,
            call.arguments,
            *self._trace_fields(request, era),
            asking=asking,
            progress_token=token,
        )

    def _asking_prompt(self, request: Request) -> bool:
        """Whether `request` is a prompts/get of a prompt that asks its client (a call, not inline)."""
        name = request.params.get("name")
        prompt = (
            self._prompts.get(name) if request.method == "prompts/get" and isinstance(name, str) else None
        )
        return prompt is not None and prompt.asks

    def _start_prompt(self, request: Request, era: Era) -> Answer | StartCall:
        """prompts/get of a prompt that asks (modern era only): its arguments checked, then its
        render started as a call with the request's means of asking (the retry's state included)."""
        key = id_key(request.id)
        try:
            prompt, arguments = prompts.prompt_request(self._prompts, request.params)
            asking = self._asking(request, era)
        except ProblemError as exc:
            return self._error(request.id, request.method, exc)
        self._calls[key] = _Call(request.id, CallKind.PROMPT, prompt.name, era, arguments)
        return StartCall(
            key,
            request.id,
            CallKind.PROMPT,
            prompt.name,
            arguments,
            *self._trace_fields(request, era),
            asking=asking,
        )

    def _asking(self, request: Request, era: Era) -> mrtr.CallInput:
        """What the call may ask its client: in the modern era the `_meta` capabilities (checked to
        be an object by `_modern`) and the retry's members (a malformed one is -32602); in the
        legacy eras the capabilities `initialize` declared."""
        if era is Era.LEGACY:
            return mrtr.CallInput(modern=False, capabilities=self.talk.client_capabilities)
        capabilities = request.params["_meta"][mcp.CLIENT_CAPABILITIES_KEY]
        return mrtr.CallInput(modern=True, capabilities=capabilities, retry=mrtr.parse_retry(request.params))

    def _input_needed(self, call: _Call, outcome: mrtr.InputNeeded) -> Answer:
        """A call that needs the client's input: an `InputRequiredResult` (basic/patterns/mrtr), in
        the modern era from a tool or a prompt only; anywhere else the asking side has a bug."""
        tool = call.name if call.kind is CallKind.TOOL else None
        if call.era is not Era.MODERN or call.kind not in (CallKind.TOOL, CallKind.PROMPT):
            problem = InternalServerError("The call asked for input where the protocol has no way to ask.")
            return self._error(call.request_id, call.method, problem, tool=tool, arguments=call.arguments)
        result = mrtr.input_required_result(outcome.requests, outcome.state)
        result["_meta"] = self._modern_fields["_meta"]
        frame = encode_result(call.request_id, result)
        return Answer(
            frame, call.request_id, call.method, "input-required", tool=tool, arguments=call.arguments
        )

    def _complete(self, request: Request, era: Era) -> Answer | StartCall:
        """completion/complete: answered here when no database work is needed, else started as a
        call of the schema resource it completes (the transport checks the caller may read it)."""
        assert self._completions is not None  # the method is known only with completions
        try:
            plan = self._completions.plan(completion.parse_complete_params(request.params))
        except ProblemError as exc:
            return self._error(request.id, request.method, exc)
        if isinstance(plan, dict):
            return self._ok(request.id, request.method, plan, era)
        key = id_key(request.id)
        self._calls[key] = _Call(request.id, CallKind.COMPLETE, plan.uri, era, None)
        return StartCall(
            key, request.id, CallKind.COMPLETE, plan.uri, plan.arguments(), *self._trace_fields(request, era)
        )

    def _read_target(self, call: _Call) -> tuple[str, str]:
        """The URI and MIME type a finished resource read answers for (a template's: the URI read)."""
        resource = self._resources.get(call.name)
        if resource is not None:
            return resource.uri, resource.mime_type
        template = next(t for t in self._templates if t.uri_template == call.name)
        return call.arguments["uri"], template.mime_type

    def _offered(self, method: str, params: dict[str, Any], era: Era) -> dict[str, Any]:
        """prompts/list, prompts/get, resources/subscribe and resources/unsubscribe (legacy only)."""
        if method == "prompts/list":
            result = prompts.prompts_list_result(list(self._prompts.values()), params)
            if era is Era.MODERN:
                result.update(mcp.cache_fields(ttl_ms=mcp.LIST_TTL_MS, scope="public"))
            return result
        if method == "prompts/get":
            return prompts.get_prompt_result(self._prompts, params)
        assert self._subscriptions is not None  # in the table only when subscriptions are served
        uri = contents.uri_param(params, method)
        if method == "resources/unsubscribe":
            self._subscriptions.unsubscribe(uri)
            return {}
        # Only to what the caller may read: another's resource is as unknown as a missing one.
        shown = self._resources_listed or (lambda _uri: True)
        template = contents.template_for(self._templates, uri)
        served = (
            shown(uri) if uri in self._resources else template is not None and shown(template.uri_template)
        )
        if not served:
            raise ResourceNotFoundError(
                'resources/subscribe needs the "uri" of a resource this server serves.',
                invalid_params=["uri"],
            )
        self._subscriptions.subscribe(uri)
        return {}

    def _trace_fields(self, request: Request, era: Era) -> tuple[str | None, str | None]:
        """The call's `_meta.traceparent` (a short string, else None) and its protocol version."""
        meta = request.params.get("_meta")
        parent = meta.get("traceparent") if isinstance(meta, dict) else None
        if not isinstance(parent, str) or len(parent) > _TRACEPARENT_CHARS:
            parent = None
        return parent, mcp.MODERN_VERSION if era is Era.MODERN else self.legacy_version

    # -- notifications ---------------------------------------------------------------------------

    def _notification(self, note: Notification) -> CancelCall | None:
        # notifications/cancelled works the same in both eras (basic/patterns/cancellation); the
        # rest (notifications/initialized included) needs nothing, and unknown ones are ignored.
        if note.method != "notifications/cancelled":
            return None
        for key in _lenient_keys(note.params.get("requestId")):
            if key in self._calls:
                return self.withdraw(key)
        return None

    def withdraw(self, key: IdKey) -> CancelCall | None:
        """The client withdrew the call `key`: by `notifications/cancelled`, or (Streamable HTTP,
        2026-07-28 "Cancellation") by closing the request's response stream. Nothing is sent for
        it; None when it is unknown or already withdrawn."""
        call = self._calls.get(key)
        if call is None or call.client_cancelled:
            return None
        call.client_cancelled = True
        self.talk.call_ended(key)  # stdio "Cancellation": nothing more is sent for it
        return CancelCall(key)

    # -- frames ----------------------------------------------------------------------------------

    def _result(self, result: dict[str, Any], era: Era) -> dict[str, Any]:
        if era is Era.MODERN:
            result.update(self._modern_fields)
        return result

    def _ok(self, request_id: RequestId, method: str, result: dict[str, Any], era: Era) -> Answer:
        return Answer(encode_result(request_id, self._result(result, era)), request_id, method, "ok")

    def _error(
        self,
        request_id: RequestId | None,
        method: str,
        problem: ProblemError,
        extra: dict[str, Any] | None = None,
        *,
        tool: str | None = None,
        arguments: Any = None,
    ) -> Answer:
        """The JSON-RPC error of `problem`, with its class's code. An error has the same shape in both
        eras (the modern result members are for results)."""
        frame = encode_error(request_id, problem, omit_unknown_id=self.omits_unknown_id, data_extra=extra)
        return Answer(
            frame,
            request_id,
            method,
            "error",
            problem,
            tool=tool,
            arguments=arguments,
            error_code=problem.jsonrpc_code,
        )

    def _timed_out(self) -> ExecutionTimeoutError:
        deadline_s = self._deadline_s  # finite: settings refuse any other
        return ExecutionTimeoutError(
            f"The call did not finish within {deadline_s:g} s; ask for less work.",
            metadata={"deadline_s": deadline_s},
        )
