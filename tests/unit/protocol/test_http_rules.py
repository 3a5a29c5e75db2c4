"""The HTTP transport's decisions (protocol.http) and authorization's (protocol.authz), loop-free."""

from __future__ import annotations

import base64
import json
import math
import re
from types import ModuleType
from typing import Any

import pytest

from mcp_suite.problems import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    InvalidRequestMetaError,
    MethodNotFoundError,
    UnsupportedVersionError,
)
from mcp_suite.protocol import authz
from mcp_suite.protocol.authz import Identity, TokenRejectedError, check_claims
from mcp_suite.protocol.http import (
    CancelledAnswer,
    HttpEra,
    SessionAdmission,
    SessionSeen,
    accepts_json,
    admit_session,
    answer_to_cancelled_call,
    check_mirrored_headers,
    era_of,
    is_json_body,
    origin_allowed,
    path_for_log,
    status_of,
)
from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.tools import files as files_family
from mcp_suite.tools import metrics as metrics_family
from mcp_suite.tools import sql as sql_family
from tests.support.wire import decoded

# -- Origin, Accept, era ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "allowed", "served"),
    [
        (None, [], True),  # not a browser
        ("https://app.example", [], False),
        ("https://app.example", ["https://app.example"], True),
        ("https://APP.example:443", ["https://app.example"], True),  # default port, case
        ("http://app.example", ["https://app.example"], False),  # another scheme
        ("https://app.example:8443", ["https://app.example"], False),  # another port
        ("https://evil.example", ["https://app.example"], False),
        ("null", ["https://app.example"], False),
        ("https://app.example:99999", ["https://app.example"], False),  # no such port
        ("file://", ["https://app.example"], False),
    ],
)
def test_an_origin_is_served_only_when_listed(origin: str | None, allowed: list[str], served: bool) -> None:
    assert origin_allowed(origin, allowed) is served


@pytest.mark.parametrize(
    ("accept", "takes_json"),
    [
        (None, True),
        ("application/json, text/event-stream", True),
        ("text/event-stream", False),
        ("*/*", True),
        ("application/*;q=0.5", True),
        ("application/json;q=0", False),
        ("text/html", False),
    ],
)
def test_a_json_answer_needs_an_accept_that_takes_it(accept: str | None, takes_json: bool) -> None:
    assert accepts_json(accept) is takes_json


def test_the_era_of_a_post_is_its_version_header() -> None:
    assert era_of(MODERN_VERSION) is HttpEra.MODERN
    assert era_of("2025-11-25") is HttpEra.LEGACY
    assert era_of(None) is HttpEra.LEGACY  # 2025-03-26, as both revisions allow
    refused = era_of("1999-01-01")
    assert isinstance(refused, UnsupportedVersionError)
    assert refused.metadata["supported"][0] == MODERN_VERSION


# -- the headers that mirror the body --------------------------------------------------------------

_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _body(method: str = "tools/call", **params: Any) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": _META}}
    ).encode()


def _headers(**extra: str) -> dict[str, str]:
    return {"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/call", "mcp-name": "t", **extra}


def test_matching_headers_pass() -> None:
    assert check_mirrored_headers(decoded(_body(name="t")), _headers()) is None


def test_a_base64_sentinel_name_is_decoded_before_it_is_compared() -> None:
    name = "héllo wörld"
    encoded = "=?base64?" + base64.b64encode(name.encode()).decode() + "?="
    assert check_mirrored_headers(decoded(_body(name=name)), _headers(**{"mcp-name": encoded})) is None
    broken = _headers(**{"mcp-name": "=?base64?!!!?="})
    assert check_mirrored_headers(decoded(_body(name=name)), broken) is not None


@pytest.mark.parametrize(
    ("headers", "body", "names"),
    [
        (_headers(**{"mcp-protocol-version": "2025-11-25"}), _body(name="t"), "MCP-Protocol-Version"),
        ({"mcp-method": "tools/call", "mcp-name": "t"}, _body(name="t"), "MCP-Protocol-Version"),
        (_headers(**{"mcp-method": "tools/list"}), _body(name="t"), "Mcp-Method"),
        ({"mcp-protocol-version": MODERN_VERSION, "mcp-name": "t"}, _body(name="t"), "Mcp-Method"),
        (_headers(**{"mcp-name": "other"}), _body(name="t"), "Mcp-Name"),
        ({"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/call"}, _body(name="t"), "Mcp-Name"),
        (
            _headers(**{"mcp-method": "resources/read", "mcp-name": "x://a"}),
            _body("resources/read", uri="x://b"),
            "Mcp-Name",
        ),
    ],
)
def test_a_header_missing_or_unlike_the_body_is_a_header_mismatch(
    headers: dict[str, str], body: bytes, names: str
) -> None:
    problem = check_mirrored_headers(decoded(body), headers)
    assert problem is not None
    assert problem.jsonrpc_code == HEADER_MISMATCH
    assert names in problem.detail


@pytest.mark.parametrize(
    ("params", "what"),
    [
        ({}, "needs params._meta"),
        ({"_meta": "2026-07-28"}, "needs params._meta"),
        (
            {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
            "lacks 'io.modelcontextprotocol/protocolVersion'",
        ),
    ],
)
def test_a_body_without_its_meta_version_is_malformed_not_a_header_mismatch(
    params: dict[str, Any], what: str
) -> None:
    # basic/index, "Per-request protocol fields": a missing field is -32602 (HTTP 400), whatever
    # the headers say; there is no body value for the version header to mismatch.
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).encode()
    headers = {"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/list"}
    problem = check_mirrored_headers(decoded(body), headers)
    assert isinstance(problem, InvalidRequestMetaError)
    assert problem.jsonrpc_code == INVALID_PARAMS
    assert problem.invalid_params == ("_meta",)
    assert what in problem.detail


def test_initialize_under_the_modern_header_is_a_removed_method() -> None:
    # The core takes `initialize` as the 2025 handshake; under the 2026-07-28 header it does not exist.
    headers = {"mcp-protocol-version": MODERN_VERSION, "mcp-method": "initialize"}
    problem = check_mirrored_headers(decoded(_body("initialize")), headers)
    assert isinstance(problem, MethodNotFoundError)
    assert status_of(problem.jsonrpc_code, has_id=True, era=HttpEra.MODERN) == 404
    mismatched = check_mirrored_headers(decoded(_body("initialize")), {**headers, "mcp-method": "tools/list"})
    assert mismatched is not None
    assert mismatched.jsonrpc_code == HEADER_MISMATCH  # the headers are checked first


def test_a_body_that_is_no_request_is_left_to_the_core() -> None:
    assert check_mirrored_headers(decoded(b"{not json"), {}) is None
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/x"}).encode()
    assert check_mirrored_headers(decoded(note), {}) is None


def test_a_method_without_a_name_needs_no_mcp_name() -> None:
    headers = {"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/list"}
    assert check_mirrored_headers(decoded(_body("tools/list")), headers) is None


@pytest.mark.parametrize(
    ("code", "has_id", "era", "status"),
    [
        (None, True, HttpEra.MODERN, 200),
        (INVALID_PARAMS, True, HttpEra.MODERN, 200),
        (INTERNAL_ERROR, True, HttpEra.LEGACY, 200),
        (METHOD_NOT_FOUND, True, HttpEra.MODERN, 404),
        (METHOD_NOT_FOUND, True, HttpEra.LEGACY, 200),
        (UNSUPPORTED_PROTOCOL_VERSION, True, HttpEra.MODERN, 400),
        (HEADER_MISMATCH, True, HttpEra.MODERN, 400),
        (MISSING_REQUIRED_CLIENT_CAPABILITY, True, HttpEra.MODERN, 400),
        (PARSE_ERROR, False, HttpEra.LEGACY, 400),
        (INVALID_REQUEST, False, HttpEra.MODERN, 400),
        (INVALID_REQUEST, True, HttpEra.LEGACY, 200),
    ],
)
def test_the_status_of_an_answer(code: int | None, has_id: bool, era: HttpEra, status: int) -> None:
    assert status_of(code, has_id=has_id, era=era) == status


def test_a_legacy_request_that_needs_a_session_and_names_none_is_400() -> None:
    assert status_of(INVALID_REQUEST, has_id=True, era=HttpEra.LEGACY, outside_session=True) == 400


@pytest.mark.parametrize("era", list(HttpEra))
def test_a_malformed_meta_is_400_while_other_invalid_params_stay_in_a_200(era: HttpEra) -> None:
    assert status_of(INVALID_PARAMS, has_id=True, era=era, malformed_meta=True) == 400
    assert status_of(INVALID_PARAMS, has_id=True, era=era) == 200  # an unknown tool, say


# -- authorization ---------------------------------------------------------------------------------

ISSUER = "https://issuer.example"
AUDIENCE = "https://mcp.example/mcp"
NOW = 1_800_000_000.0


def _claims(**changes: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "exp": NOW + 60,
        "scope": "metrics:read files:read",
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _check(claims: dict[str, Any]) -> Identity:
    return check_claims(claims, issuer=ISSUER, audience=AUDIENCE, now=NOW, leeway_s=30)


def test_good_claims_name_the_subject_and_its_scopes() -> None:
    identity = _check(_claims())
    assert identity == Identity("alice", frozenset({"metrics:read", "files:read"}))
    assert identity.claims == _claims()  # every verified claim, for the identity map
    assert identity.holds("files:read")
    assert not identity.holds("sql:read")
    assert _check(_claims(aud=["other", AUDIENCE])).subject == "alice"
    assert _check(_claims(scope=None, scp=["sql:read"])).scopes == {"sql:read"}
    assert _check(_claims(scope=None)).scopes == frozenset()


_NOT_OURS = "the token was not issued by the configured issuer"
_NOT_FOR_US = "the token's audience is not this resource"
_NO_SUB = "the token has no sub claim"
_IAT = "the token's iat claim is not a time it can have been issued at"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"iss": "https://other.example"}, _NOT_OURS),
        ({"iss": None}, _NOT_OURS),
        ({"aud": "https://mcp.example"}, _NOT_FOR_US),  # another resource, even a prefix of this one
        ({"aud": ["https://other.example"]}, _NOT_FOR_US),
        ({"aud": None}, _NOT_FOR_US),
        ({"exp": None}, "the token has no exp claim"),
        ({"exp": "soon"}, "the exp claim is not a number"),
        ({"exp": True}, "the exp claim is not a number"),
        ({"exp": NOW - 31}, "the token has expired"),
        ({"nbf": NOW + 31}, "the token is not valid yet"),
        ({"nbf": "later"}, "the nbf claim is not a number"),
        ({"sub": None}, _NO_SUB),
        ({"sub": ""}, _NO_SUB),
        ({"sub": 7}, _NO_SUB),
        ({"iat": "2020-01-01"}, "the iat claim is not a number"),
        ({"iat": False}, "the iat claim is not a number"),
        ({"iat": NOW + 31}, _IAT),
        ({"iat": NOW + 10 * 365 * 86_400}, _IAT),
        ({"iat": -1}, _IAT),
    ],
)
def test_claims_that_do_not_hold_are_rejected_with_their_exact_reason(
    changes: dict[str, Any], reason: str
) -> None:
    # The reason reaches the client as `error_description` and the log: each says exactly why.
    with pytest.raises(TokenRejectedError, match=f"^{re.escape(reason)}$"):
        _check(_claims(**changes))


def test_the_leeway_covers_a_little_clock_skew_only() -> None:
    assert _check(_claims(exp=NOW - 29, nbf=NOW + 29, iat=NOW + 29)).subject == "alice"
    # At exactly the leeway, the token still holds on every side.
    assert _check(_claims(exp=NOW - 30, nbf=NOW + 30, iat=NOW + 30)).subject == "alice"
    # An iat in the past, 1970 itself included, and none at all are times a token can be issued at.
    for iat in (NOW - 3_600, 0, 0.5, None):
        assert _check(_claims(iat=iat)).subject == "alice"


def test_the_anonymous_caller_holds_every_scope() -> None:
    assert authz.ANONYMOUS.holds("sql:read")
    assert authz.ANONYMOUS.holds(authz.UNGRANTABLE)


@pytest.mark.parametrize(
    ("family", "scope"),
    [(sql_family, "sql:read"), (files_family, "files:read"), (metrics_family, "metrics:read")],
)
def test_each_tool_family_has_its_scope(family: ModuleType, scope: str) -> None:
    # Each tool and resource spec declares its family's SCOPE; authz reads it from the spec.
    assert scope == family.SCOPE


def test_a_tool_or_resource_served_nowhere_needs_a_scope_no_token_grants() -> None:
    grants = authz.grants_of(
        [("read_only_sql", "sql:read", {})], [("postgres://db/schema", "sql:read", None)]
    )
    needed = {grants.tool("new_tool").scope, grants.resource("file:///x").scope}
    # A real scope name (a challenge names it), just not one any token is granted.
    assert all(isinstance(scope, str) and scope for scope in needed)
    served = ("sql:read", "files:read", "metrics:read", "test:call")
    assert needed.isdisjoint(served)
    everything = Identity("alice", frozenset(served))
    assert not any(everything.holds(scope) for scope in needed)
    assert grants.tool("new_tool").lacking(everything) == authz.UNGRANTABLE


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc.def-_~+/ghi==", "abc.def-_~+/ghi=="),
        ("bearer abc", "abc"),
        ("Bearer  abc", "abc"),
        (None, None),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer a b", None),
        ("Bearer a,b", None),
    ],
)
def test_the_bearer_token_of_an_authorization_header(header: str | None, token: str | None) -> None:
    assert authz.bearer_token(header) == token


def test_a_challenge_quotes_its_parameters() -> None:
    value = authz.challenge(
        "https://mcp.example/.well-known/oauth-protected-resource/mcp",
        error="insufficient_scope",
        scope="files:read",
        description='needs "files:read"\r\n',
    )
    assert value == (
        'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", '
        'error="insufficient_scope", scope="files:read", error_description="needs \\"files:read\\""'
    )
    # A backslash is escaped, DEL and the other control characters are dropped.
    assert authz.challenge("m", description="a\\b\x7fc\x00") == (
        'Bearer resource_metadata="m", error_description="a\\\\bc"'
    )
    # Beyond ASCII, each character is a `?`: a header value is bytes, and only ASCII reads the same
    # to everyone (a `source` outside Latin-1 once failed to encode at all).
    assert authz.challenge("m", scope="sql:read:日本", description="nörth\u2028") == (
        'Bearer resource_metadata="m", scope="sql:read:??", error_description="n?rth?"'
    )


def test_the_metadata_is_served_at_the_path_suffixed_and_the_root_well_known_uri() -> None:
    assert authz.metadata_paths("https://mcp.example/mcp") == (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    )
    assert authz.metadata_paths("https://mcp.example") == ("/.well-known/oauth-protected-resource",)
    # Only the slashes at the end go: nothing else of the path.
    assert authz.metadata_paths("https://mcp.example/BOX/") == (
        "/.well-known/oauth-protected-resource/BOX",
        "/.well-known/oauth-protected-resource",
    )
    document = authz.protected_resource_metadata(
        AUDIENCE, [ISSUER], ("sql:read", "files:read", "metrics:read")
    )
    assert document == {
        "resource": AUDIENCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["sql:read", "files:read", "metrics:read"],
        "bearer_methods_supported": ["header"],
    }


# -- one way to read a request (issue 47) ----------------------------------------------------------


def test_a_request_has_one_authorization_header_or_none() -> None:
    assert authz.the_authorization([]) is None
    assert authz.the_authorization(["Bearer a"]) == "Bearer a"
    for values in (["Bearer a", "Bearer b"], ["Bearer a", "Bearer a"], ["", "Bearer a"], ["x"] * 3):
        with pytest.raises(
            authz.MalformedAuthorizationError,
            match=r"^the request carries more than one Authorization header$",
        ):
            authz.the_authorization(values)


def test_a_401_names_the_scopes_of_what_is_served_in_their_order() -> None:
    assert authz.challenge("https://m.example/md", scope="sql:read metrics:read") == (
        'Bearer resource_metadata="https://m.example/md", scope="sql:read metrics:read"'
    )

    def served(
        *tools: tuple[str, str], resources: tuple[tuple[str, str, str | None], ...] = ()
    ) -> tuple[str, ...]:
        return authz.grants_of([(name, scope, {}) for name, scope in tools], resources).scopes()

    assert served(("system_metrics", "metrics:read")) == ("metrics:read",)
    # In the order served (the registry's: sql, files, metrics), each once.
    assert served(
        ("read_only_sql", "sql:read"),
        ("sql_schema", "sql:read"),
        ("sandbox_fs_read", "files:read"),
        ("system_metrics", "metrics:read"),
        resources=(("postgres://db/schema", "sql:read", "default"),),
    ) == ("sql:read", "files:read", "metrics:read")
    assert served(resources=(("notes://x", "test:call", None),)) == ("test:call",)
    assert served() == ()


@pytest.mark.parametrize(
    ("content_type", "json_body"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        (" application/json ;charset=utf-8", True),
        (None, False),
        ("", False),
        ("text/plain", False),
        ("application/json-patch+json", False),
        ("application/x-www-form-urlencoded", False),
    ],
)
def test_a_body_is_json_only_when_it_says_so(content_type: str | None, json_body: bool) -> None:
    assert is_json_body(content_type) is json_body


SSE = CancelledAnswer(200, (("content-type", "text/event-stream"), ("cache-control", "no-cache")))


@pytest.mark.parametrize(
    ("accept", "answer"),
    [
        ("application/json, text/event-stream", SSE),
        ("text/event-stream", SSE),
        ("application/json, text/*", SSE),
        ("*/*", SSE),
        (None, SSE),  # no Accept: it takes anything
        ("application/json", CancelledAnswer(204, ())),
        ("application/json, text/event-stream;q=0", CancelledAnswer(204, ())),
        ("application/json, text/event-stream;q=x", CancelledAnswer(204, ())),
    ],
)
def test_a_cancelled_legacy_call_is_an_sse_stream_without_a_message_for_a_client_that_takes_one(
    accept: str | None, answer: CancelledAnswer
) -> None:
    assert answer_to_cancelled_call(accept) == answer


def _sessions(*held: tuple[str, str, float, bool]) -> list[SessionSeen]:
    return [
        SessionSeen(session_id, subject, last_used, busy) for session_id, subject, last_used, busy in held
    ]


def _admit(
    sessions: list[SessionSeen], subject: str, *, per_subject: int = 2, total: int = 4
) -> SessionAdmission:
    return admit_session(sessions, subject, 100.0, idle_s=50, per_subject=per_subject, total=total)


def test_a_session_is_admitted_while_its_subject_and_the_server_have_room() -> None:
    assert _admit([], "alice") == SessionAdmission(())
    assert _admit(
        _sessions(("a1", "alice", 90, False), ("b1", "bob", 99, False)), "alice"
    ) == SessionAdmission(())


def test_a_subject_at_its_quota_loses_its_own_least_recent_idle_session_never_another_s() -> None:
    held = _sessions(
        ("b1", "bob", 10 + 50, False),  # bob's, older than all of alice's
        ("a1", "alice", 80, False),
        ("a2", "alice", 70, True),  # alice's oldest, but a call of it is in progress
        ("a3", "alice", 75, False),
    )
    assert _admit(held, "alice", per_subject=3, total=10) == SessionAdmission(("a3",))
    # Above the quota (it was lowered), as many as it takes to make room for one.
    assert _admit(held, "alice", per_subject=2, total=10) == SessionAdmission(("a3", "a1"))


def test_a_subject_whose_sessions_all_have_calls_in_progress_is_refused() -> None:
    held = _sessions(("a1", "alice", 80, True), ("a2", "alice", 90, True), ("x", "bob", 1, False))
    assert _admit(held, "alice") == SessionAdmission(
        ("x",), "this caller's 2 sessions all have calls in progress"
    )
    held = _sessions(("a1", "alice", 80, True), ("a2", "alice", 90, False), ("a3", "alice", 91, True))
    refused = "this caller's 3 sessions all have calls in progress"
    assert _admit(held, "alice", per_subject=1) == SessionAdmission((), refused)


def test_at_the_global_cap_a_new_session_is_refused_and_no_one_else_s_ends() -> None:
    held = _sessions(
        ("b1", "bob", 90, False),
        ("b2", "bob", 91, False),
        ("c1", "carol", 92, False),
        ("c2", "carol", 93, False),
    )
    full = "the server holds its maximum of 4 sessions; retry later"
    assert _admit(held, "alice") == SessionAdmission((), full)
    # A subject at its quota at the cap makes its own room and stays within it.
    assert _admit(held, "bob") == SessionAdmission(("b1",))
    # The quota is at most the cap.
    assert _admit(held[:2], "bob", per_subject=9, total=2) == SessionAdmission(("b1",))


def test_sessions_idle_past_their_time_end_first_whoever_holds_them_unless_busy() -> None:
    held = _sessions(
        ("b1", "bob", 49, False),  # 51 s idle: ended
        ("b2", "bob", 50, False),  # 50 s idle: exactly the limit, kept
        ("c1", "carol", 10, True),  # idle long, but a call is in progress: kept
        ("c2", "carol", 95, False),
    )
    assert _admit(held, "alice") == SessionAdmission(("b1",))
    assert _admit(held, "alice", total=3) == SessionAdmission(
        ("b1",), "the server holds its maximum of 3 sessions; retry later"
    )


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/mcp", "/mcp"),
        ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource"),
        ("/other", "an unknown path '/other' (6 characters)"),
        (
            "/mcp/eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln",
            "an unknown path '/mcp/eyJhbGciOiJ'… (46 characters)",
        ),
        ("/a\nb\x00c\x7fé", "an unknown path '/a?b?c??' (8 characters)"),
        ("", "an unknown path '' (0 characters)"),
    ],
)
def test_a_log_line_names_the_paths_served_and_only_the_start_of_any_other(path: str, logged: str) -> None:
    served = {"/mcp", "/.well-known/oauth-protected-resource"}
    assert path_for_log(path, served) == logged


@pytest.mark.parametrize("name", ["exp", "nbf", "iat"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400])
def test_a_time_claim_that_is_not_a_finite_number_is_refused(name: str, value: float) -> None:
    with pytest.raises(TokenRejectedError, match=f"the {name} claim is not a finite number"):
        _check(_claims(**{name: value}))
