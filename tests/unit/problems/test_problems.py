"""The problem registry (docs/wire.md): one class per type, the code/status/JSON-RPC mapping enforced."""

from __future__ import annotations

import pytest

from mcp_suite.problems import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    PROBLEM_TYPES,
    PROBLEM_URN_PREFIX,
    WIRE_CODES,
    Channel,
    ConflictError,
    InvalidArgumentsError,
    InvalidParamsError,
    ProblemError,
    echo,
    render_problem,
)
from mcp_suite.protocol.jsonrpc import JsonParseError, JsonRpcError

SPEC_TABLE = {
    "validation-error": ("MCP_VALIDATION_ERROR", 422),
    "malformed-meta": ("MCP_MALFORMED_META", 400),
    "invalid-request-state": ("MCP_INVALID_REQUEST_STATE", 400),
    "invalid-input-responses": ("MCP_INVALID_INPUT_RESPONSES", 400),
    "not-approved": ("MCP_NOT_APPROVED", 403),
    "access-denied": ("MCP_ACCESS_DENIED", 403),
    "query-violation": ("MCP_QUERY_VIOLATION", 403),
    "execution-timeout": ("MCP_EXECUTION_TIMEOUT", 504),
    "concurrency-limit": ("MCP_CONCURRENCY_LIMIT", 429),
    "conflict": ("MCP_CONFLICT", 409),
    "not-found": ("MCP_NOT_FOUND", 404),
    "unsupported-content": ("MCP_UNSUPPORTED_CONTENT", 415),
    "result-too-large": ("MCP_RESULT_TOO_LARGE", 413),
    "resource-limit": ("MCP_RESOURCE_LIMIT", 507),
    "session-not-initialized": ("MCP_SESSION_NOT_INITIALIZED", 400),
    "invalid-request": ("MCP_INVALID_REQUEST", 400),
    "method-not-found": ("MCP_METHOD_NOT_FOUND", 404),
    "unsupported-protocol-version": ("MCP_UNSUPPORTED_PROTOCOL_VERSION", 400),
    "header-mismatch": ("MCP_HEADER_MISMATCH", 400),
    "insufficient-scope": ("MCP_INSUFFICIENT_SCOPE", 403),
    "unauthorized": ("MCP_UNAUTHORIZED", 401),
    "origin-not-allowed": ("MCP_ORIGIN_NOT_ALLOWED", 403),
    "method-not-allowed": ("MCP_METHOD_NOT_ALLOWED", 405),
    "not-acceptable": ("MCP_NOT_ACCEPTABLE", 406),
    "request-timeout": ("MCP_REQUEST_TIMEOUT", 408),
    "request-too-large": ("MCP_REQUEST_TOO_LARGE", 413),
    "headers-too-large": ("MCP_HEADERS_TOO_LARGE", 431),
    "authorization-unavailable": ("MCP_AUTHORIZATION_UNAVAILABLE", 503),
    "audit-behind": ("MCP_AUDIT_BEHIND", 503),
    "database-unavailable": ("MCP_DATABASE_UNAVAILABLE", 503),
    "role-refused": ("MCP_ROLE_REFUSED", 503),
    "role-unaudited": ("MCP_ROLE_UNAUDITED", 503),
    "client-cannot-ask": ("MCP_CLIENT_CANNOT_ASK", 412),
    "missing-client-capability": ("MCP_MISSING_CLIENT_CAPABILITY", 400),
    "client-request-failed": ("MCP_CLIENT_REQUEST_FAILED", 502),
    "shutting-down": ("MCP_SHUTTING_DOWN", 503),
    "internal-error": ("MCP_INTERNAL_ERROR", 500),
}


def test_every_problem_type_of_the_spec_has_exactly_one_class() -> None:
    assert sorted(cls.slug for cls in PROBLEM_TYPES) == sorted(SPEC_TABLE)


@pytest.mark.parametrize("cls", PROBLEM_TYPES, ids=lambda c: c.slug)
def test_problem_class_matches_the_spec_table(cls: type[ProblemError]) -> None:
    code, status = SPEC_TABLE[cls.slug]
    assert cls.code == code
    assert cls.status == status
    assert cls.title
    assert cls.__name__.endswith("Error")
    document = render_problem(cls("something happened", invalid_params=["a"], metadata={"k": 1}))
    assert document == {
        "type": PROBLEM_URN_PREFIX + cls.slug,
        "title": cls.title,
        "status": status,
        "detail": "something happened",
        "code": code,
        "invalid_params": ["a"],
        "metadata": {"k": 1},
    }


def _every_problem_class() -> list[type[ProblemError]]:
    """Each problem type and every subclass of one (a channel of its own), the protocol's too."""
    found: list[type[ProblemError]] = []
    todo: list[type[ProblemError]] = [ProblemError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", _every_problem_class(), ids=lambda c: c.__name__)
def test_a_problem_class_that_travels_as_an_error_has_a_code_its_type_allows(cls: type[ProblemError]) -> None:
    if cls.channel is Channel.ERROR:
        assert cls.jsonrpc_code in WIRE_CODES[cls.slug]
    else:
        # in-band: as an error only from a method without in-band results, as an internal error
        # (role-refused from a resource read, say)
        assert cls.jsonrpc_code == INTERNAL_ERROR
        # (and not-found, whose legacy resource-read subclass travels as -32002; it, unsupported-content
        # and concurrency-limit have subclasses for the same refusals made over HTTP, as -32600)
        in_band_with_an_error_subclass = (
            "access-denied",
            "validation-error",
            "role-refused",
            "role-unaudited",
            "database-unavailable",
            "not-found",
            "unsupported-content",
            "concurrency-limit",
            "client-cannot-ask",
        )
        assert cls.slug not in WIRE_CODES or cls.slug in in_band_with_an_error_subclass


def test_the_channel_and_code_are_facts_of_the_class_not_of_an_instance() -> None:
    assert (InvalidArgumentsError.channel, InvalidParamsError.channel) == (Channel.RESULT, Channel.ERROR)
    assert InvalidParamsError("x").jsonrpc_code == INVALID_PARAMS
    assert (JsonRpcError.jsonrpc_code, JsonParseError.jsonrpc_code) == (INVALID_REQUEST, PARSE_ERROR)
    with pytest.raises(TypeError):
        ProblemError("x", jsonrpc_code=INVALID_PARAMS)  # type: ignore[call-arg]  # the argument is gone


def test_titles_are_constant_per_type() -> None:
    titles = [cls.title for cls in PROBLEM_TYPES]
    assert len(set(titles)) == len(titles)


def test_echo_cuts_caller_input_to_256_characters() -> None:
    assert echo("abc") == "abc"
    cut = echo("x" * 1_000)
    assert len(cut) == 256
    assert cut.endswith("…")


def test_a_problem_shows_its_class_and_detail() -> None:
    assert repr(ConflictError("the detail")) == "ConflictError('the detail')"
