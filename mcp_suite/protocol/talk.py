"""While a call runs, the server talks to its client: the rules, without I/O or trio.

- Progress (basic/patterns/progress, every era): a request's `_meta.progressToken`, and the
  `notifications/progress` built from what the call knows (elapsed time, rows fetched, bytes read),
  its `progress` strictly increasing. None goes for a call that has ended or that its client
  withdrew: the core forgets the call (`call_ended`) before its result is written.
- Logging (server/utilities/logging, the handshake eras only: 2026-07-28 deprecates it):
  `logging/setLevel` and `notifications/message`, about the call it is sent for and nothing else.
  Nothing is sent before the client sets a level.
- Server-to-client requests of the handshake eras (`elicitation/create`, `sampling/createMessage`,
  `roots/list`): sent only to a client that declared the capability in `initialize` (otherwise the
  tool gets `ClientCannotAskError`: fail closed), each with an id of this table's; the client's
  answer is matched to the waiting call, and one to an unknown id, a second one, or one for a call
  that has ended is dropped.

`TalkTable` holds one session's side of it (the core owns one); `runtime.talk` carries it out.
Must not import trio.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final

from mcp_suite.problems import ClientCannotAskError, ClientRequestFailedError, InvalidParamsError
from mcp_suite.protocol.jsonrpc import ClientResponse, RequestId, compact_json

__all__ = [
    "ASK_CAPABILITY",
    "LEVELS",
    "ClientAnswered",
    "Facts",
    "TalkTable",
    "progress_message",
    "progress_token",
]

# RFC 5424 severities, least severe first (server/utilities/logging, "Log Levels").
LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# The name every `notifications/message` of this server carries as `logger`.
LOGGER_NAME: Final = "mcp-suite"
# A progress token is the client's to choose (a string or an integer); one longer than this is not
# echoed back (a client sending one gets no progress, and its call is served as usual).
_TOKEN_CHARS: Final = 256
# The client capability each server-to-client request needs (client/elicitation, client/sampling,
# client/roots: "Capabilities").
ASK_CAPABILITY: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
# A log message's text is cut to this many characters (it is about one call: it never needs more).
_LOG_CHARS: Final = 512


def progress_token(params: dict[str, Any]) -> str | int | None:
    """The request's `_meta.progressToken` when it is one (a string or an integer), else None."""
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, bool):
        return None
    if isinstance(token, int) or (isinstance(token, str) and len(token) <= _TOKEN_CHARS):
        return token
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What a running call knows of itself: the time since it started, and what its tool noted."""

    elapsed_s: float
    rows: int | None = None
    bytes_read: int | None = None


def progress_message(facts: Facts) -> str:
    """The human-readable part: elapsed time and whatever is known, nothing else (no SQL, no path)."""
    parts = [f"{facts.elapsed_s:.1f} s elapsed"]
    if facts.rows is not None:
        parts.append(f"{facts.rows} row{'' if facts.rows == 1 else 's'} fetched")
    if facts.bytes_read is not None:
        parts.append(f"{facts.bytes_read} bytes read")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class ClientAnswered:
    """The client answered the server's request `server_id`, asked for the call `call`: its
    `result`, or its `error` (the JSON-RPC error object) when it refused."""

    call: Hashable
    server_id: RequestId
    result: dict[str, Any] | None
    error: dict[str, Any] | None


def _frame(payload: dict[str, Any]) -> bytes:
    return (compact_json(payload) + "\n").encode("ascii")


def _notification(method: str, params: dict[str, Any]) -> bytes:
    return _frame({"jsonrpc": "2.0", "method": method, "params": params})


class _Talking:
    """One call in flight, as far as talking goes."""

    __slots__ = ("explicit", "legacy", "progress", "sent_at", "token")

    def __init__(self, token: str | int | None, *, legacy: bool) -> None:
        self.token = token
        self.legacy = legacy
        self.progress: float | None = None  # the last `progress` sent (each one must be greater)
        self.sent_at: float | None = None  # when it was sent, in seconds since the call started
        self.explicit = False  # the tool reports its own progress: the elapsed-time ticks stop


class TalkTable:
    """One session's calls as talkers: their progress tokens, the log level its client set, what its
    client declared it can do, and the requests sent to it that wait for an answer.

    Keys are the core's call keys (opaque here). Not thread-safe: the runtime calls it from the
    event loop only.
    """

    __slots__ = ("_calls", "_next_id", "_pending", "client_capabilities", "log_level")

    def __init__(self) -> None:
        self._calls: dict[Hashable, _Talking] = {}
        # Requests sent to the client that wait for its answer: server id -> the asking call.
        self._pending: dict[RequestId, Hashable] = {}
        self._next_id = 0
        self.log_level: str | None = None  # None: the client set none, so nothing is sent
        self.client_capabilities: dict[str, Any] = {}

    # -- the calls ---------------------------------------------------------------------------------

    def call_started(self, call: Hashable, params: dict[str, Any], *, legacy: bool) -> str | int | None:
        """A call starts; returns its progress token (None: it asked for no progress)."""
        token = progress_token(params)
        self._calls[call] = _Talking(token, legacy=legacy)
        return token

    def call_ended(self, call: Hashable) -> None:
        """The call's result is decided, or its client withdrew it: nothing more goes out for it,
        and an answer to what it asked is dropped."""
        self._calls.pop(call, None)
        for server_id in [sid for sid, asker in self._pending.items() if asker == call]:
            del self._pending[server_id]

    # -- progress ----------------------------------------------------------------------------------

    def progress(self, call: Hashable, facts: Facts, *, min_gap_s: float = 0.0) -> bytes | None:
        """The elapsed-time `notifications/progress` frame for `call` now (its `progress`: the
        seconds elapsed, to a tenth), or None: see `_progress`; and none once its tool reports
        progress of its own (the two scales must not mix)."""
        talking = self._calls.get(call)
        if talking is None or talking.explicit:
            return None
        value = round(facts.elapsed_s, 1)
        return self._progress(
            talking, value, facts.elapsed_s, min_gap_s, {"message": progress_message(facts)}
        )

    def report(
        self,
        call: Hashable,
        *,
        elapsed_s: float,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        min_gap_s: float = 0.0,
    ) -> bytes | None:
        """The tool's own progress report (`progress` of `total`) as a frame, or None: see
        `_progress`. Security: `message` is the tool's, about this call; it is cut, never enriched."""
        talking = self._calls.get(call)
        if talking is None:
            return None
        talking.explicit = True
        more: dict[str, Any] = {}
        if total is not None:
            more["total"] = total
        if message is not None:
            more["message"] = message[:_LOG_CHARS]
        return self._progress(talking, progress, elapsed_s, min_gap_s, more)

    @staticmethod
    def _progress(
        talking: _Talking, value: float, elapsed_s: float, min_gap_s: float, more: dict[str, Any]
    ) -> bytes | None:
        """None when the call asked for no progress, when `value` would not increase (basic/patterns/
        progress: it MUST increase with each notification), or when the last one went less than
        `min_gap_s` ago (the rate limit, MCP_PROGRESS_INTERVAL_S); else the frame."""
        if talking.token is None:
            return None
        if talking.progress is not None and value <= talking.progress:
            return None
        if talking.sent_at is not None and elapsed_s - talking.sent_at < min_gap_s:
            return None
        talking.progress = value
        talking.sent_at = elapsed_s
        return _notification(
            "notifications/progress", {"progressToken": talking.token, "progress": value, **more}
        )

    # -- logging -----------------------------------------------------------------------------------

    def set_level(self, params: dict[str, Any]) -> dict[str, Any]:
        """`logging/setLevel`: the least severe level the client wants; -32602 for another value."""
        level = params.get("level")
        if not isinstance(level, str) or level not in LEVELS:
            raise InvalidParamsError(
                'logging/setLevel needs "level", one of: ' + ", ".join(LEVELS) + ".",
                invalid_params=["level"],
            )
        self.log_level = level
        return {}

    def log(self, call: Hashable, level: str, text: str) -> bytes | None:
        """The `notifications/message` frame of `text` about `call`, or None: the call has ended,
        runs in the modern era (which has no logging here), or the client did not ask for `level`.
        Security: `text` is the caller's own (about this call); it is cut, never enriched."""
        talking = self._calls.get(call)
        if talking is None or not talking.legacy or self.log_level is None:
            return None
        if LEVELS.index(level) < LEVELS.index(self.log_level):
            return None
        params = {"level": level, "logger": LOGGER_NAME, "data": text[:_LOG_CHARS]}
        return _notification("notifications/message", params)

    # -- asking the client -------------------------------------------------------------------------

    def may_ask(self, method: str) -> bool:
        """Whether the client declared the capability `method` needs (elicitation: the form mode,
        which a bare `{}` means)."""
        declared = self.client_capabilities.get(ASK_CAPABILITY.get(method, ""))
        if not isinstance(declared, dict):
            return False
        return method != "elicitation/create" or not declared or "form" in declared

    def ask(self, call: Hashable, method: str, params: dict[str, Any]) -> tuple[RequestId, bytes]:
        """The request `method` for the client, asked by `call`: its server id and frame.

        Raises `ClientCannotAskError` when the call has ended, runs in the modern era, or the client
        did not declare the capability: the tool never gets a silent yes."""
        talking = self._calls.get(call)
        if talking is None or not talking.legacy or not self.may_ask(method):
            raise ClientCannotAskError(
                f"The client did not declare that it can answer {method}, so it was not asked; "
                "the call goes on without its answer.",
                metadata={"method": method},
            )
        self._next_id += 1
        server_id = f"mcp-suite-{self._next_id}"
        self._pending[server_id] = call
        return server_id, _frame({"jsonrpc": "2.0", "id": server_id, "method": method, "params": params})

    def forget(self, server_id: RequestId) -> None:
        """The asking call stopped waiting (cancelled, or out of time): a late answer is dropped."""
        self._pending.pop(server_id, None)

    def answered(self, response: ClientResponse) -> ClientAnswered | None:
        """A response from the client: the waiting call's answer, or None (dropped) when its id is
        none this session waits for (unknown, answered already, or its call has ended)."""
        if response.id is None or isinstance(response.id, int):
            return None  # every server id is a string
        call = self._pending.pop(response.id, None)
        if call is None:
            return None
        return ClientAnswered(call, response.id, response.result, response.error)


def client_refused(method: str, error: dict[str, Any]) -> ClientRequestFailedError:
    """The client answered the server's `method` with a JSON-RPC error."""
    code = error.get("code")
    return ClientRequestFailedError(
        f"The client answered {method} with an error"
        + (f" (code {code})." if isinstance(code, int) and not isinstance(code, bool) else "."),
        metadata={"method": method},
    )
