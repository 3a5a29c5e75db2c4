"""The HTTP transport's edges (issue 52) through the real server on a loopback port: a method of any
length, headers sent twice, a `source` no header can carry, claims that are not finite numbers."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Collection, Iterator
from typing import Any, Final, Literal

import httpx2
import pytest
import trio
from pydantic import Field

from mcp_suite.tools.base import Toolset, ToolSpec
from mcp_suite.tools.models import StrictModel
from mcp_suite.tools.registry import ToolOpener
from tests.support.harness import built_models
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.wire import initialize_request
from tests.trio.test_http_app import RESOURCE, assert_refused, call_metrics, modern, modern_headers, serving

SOURCED_SCOPE: Final = "test:sourced"


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


class SourcedArgs(StrictModel):
    source: Literal["north", "south"] = Field(description="Which source to read")


class SourcedResult(StrictModel):
    source: str


def sourced_opener() -> ToolOpener:
    """A tool granted per source, as the SQL tools are (`test:sourced:north`)."""

    async def sourced(args: SourcedArgs) -> SourcedResult:
        await trio.lowlevel.checkpoint()
        return SourcedResult(source=args.source)

    spec = ToolSpec(
        name="sourced",
        title="Sourced",
        description="Reads one of two sources.",
        models=built_models(SourcedArgs, SourcedResult),
        call=sourced,
        scope=SOURCED_SCOPE,
    )

    descriptions = {"north": "The northern ledger", "south": "The southern ledger"}

    def guidance_for(allowed: Collection[str]) -> str:
        listed = "; ".join(f"{name}: {text}" for name, text in descriptions.items() if name in allowed)
        return f"sourced reads a ledger; source, one of: {listed}." if listed else ""

    @contextlib.contextmanager
    def open_sourced(settings: Any) -> Iterator[Toolset | None]:
        yield Toolset(tools=(spec,), guidance=guidance_for(descriptions), guidance_for=guidance_for)

    return open_sourced


# -- the method ------------------------------------------------------------------------------------


async def test_an_unknown_method_is_405_before_anything_else_and_its_log_line_gives_only_its_length(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    method = "X" * 15_000
    with trio.fail_after(30):
        async with serving() as server, httpx2.AsyncClient() as http:
            for path in ("/mcp", "/healthz", "/elsewhere"):
                refused = await http.request(method, server.url.removesuffix("/mcp") + path)
                assert_refused(refused, 405, "method-not-allowed")
            assert refused.headers["allow"] == "POST, DELETE"
            probe = await http.request(method, server.url.removesuffix("/mcp") + "/healthz")
            assert probe.headers["allow"] == "GET"
            # A method of RFC 9110 the endpoint does not take is still named (and 405).
            put = await http.put(server.url, json={})
            assert_refused(put, 405, "method-not-allowed")
    said = [record.getMessage() for record in caplog.records if record.name.startswith("mcp_suite")]
    assert not [line for line in said if "XXXXXXXX" in line]
    assert max(len(line) for line in said) < 1_000
    assert "HTTP 405 for an unknown method (15000 characters) /mcp: " in "\n".join(said)
    assert any(line.startswith("HTTP 405 for PUT /mcp: ") for line in said)


# -- headers sent twice ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("MCP-Protocol-Version", "2026-07-28", "2025-11-25"),
        ("Mcp-Method", "tools/call", "tools/list"),
        ("Mcp-Name", "system_metrics", "echo"),
        ("Origin", "http://127.0.0.1", "http://evil.example"),
        ("Content-Type", "application/json", "text/plain"),
        ("Accept", "application/json", "text/html"),
        ("Mcp-Session-Id", "a", "b"),
        ("traceparent", "00-" + "1" * 32 + "-" + "2" * 16 + "-01", "00-" + "3" * 32 + "-" + "4" * 16 + "-01"),
        ("Mcp-Method", "tools/call", "tools/call"),  # twice the same is twice all the same
    ],
)
async def test_a_header_read_as_one_value_sent_twice_is_400_whatever_it_holds(
    name: str, first: str, second: str
) -> None:
    body = modern("tools/call", {"name": "system_metrics", "arguments": {}})
    with trio.fail_after(30):
        async with (
            serving(http_allowed_origins=("http://127.0.0.1",)) as server,
            httpx2.AsyncClient() as http,
        ):
            base = [
                (key, value)
                for key, value in {
                    **modern_headers("tools/call", "system_metrics"),
                    "Content-Type": "application/json",
                }.items()
                if key.lower() != name.lower()
            ]
            twice = await http.post(server.url, json=body, headers=[*base, (name, first), (name, second)])
            detail = assert_refused(twice, 400, "invalid-request")["error"]["data"]["detail"]
            assert f"more than one {name.lower()} header" in detail
            once = [*base, (name, first)] if name.lower() != "mcp-session-id" else base
            assert (await http.post(server.url, json=body, headers=once)).status_code == 200


# -- a source no header can carry ------------------------------------------------------------------


@pytest.mark.parametrize("source", ["日本", "north\u2028", "nörth", 'a"b\\c', "x" * 5_000, 7, ["north"]])
async def test_any_source_a_caller_lacks_is_403_with_an_ascii_challenge_and_audited_not_an_incident(
    issuer: TestIssuer, source: object, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    token = issuer.token(RESOURCE, scope=f"{SOURCED_SCOPE}:north")
    body = modern("tools/call", {"name": "sourced", "arguments": {"source": source}})
    with trio.fail_after(30):
        async with serving(issuer, extra=[sourced_opener()]) as server, httpx2.AsyncClient() as http:
            refused = await http.post(
                server.url, json=body, headers=modern_headers("tools/call", "sourced", token)
            )
            assert refused.status_code == 403, refused.content
            challenge = refused.headers["www-authenticate"]
            challenge.encode("ascii")
            # Not a source served: what the caller lacks is the family's scope, not one made of its value.
            assert f'scope="{SOURCED_SCOPE}"' in challenge
            assert refused.json()["error"]["data"]["type"] == "urn:mcp-suite:problem:insufficient-scope"
            north = modern("tools/call", {"name": "sourced", "arguments": {"source": "north"}})
            served = await http.post(
                server.url, json=north, headers=modern_headers("tools/call", "sourced", token)
            )
            assert served.status_code == 200
    said = [record.getMessage() for record in caplog.records if record.name.startswith("mcp_suite")]
    assert not [line for line in said if "incident" in line]


# -- claims that are not finite numbers ------------------------------------------------------------


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": float("nan")},
        {"exp": float("inf")},
        {"exp": 10**400},  # 1e309 and beyond: past a float's range
        {"nbf": float("nan")},
        {"nbf": float("-inf")},
        {"iat": float("nan")},
        {"iat": float("-inf")},
    ],
    ids=lambda claims: "-".join(f"{k}={str(v)[:8]}" for k, v in claims.items()),
)
async def test_a_time_claim_that_is_not_a_finite_number_is_401(
    issuer: TestIssuer, claims: dict[str, Any]
) -> None:
    with trio.fail_after(30):
        async with serving(issuer) as server, httpx2.AsyncClient() as http:
            rejected = await call_metrics(http, server.url, issuer.token(RESOURCE, **claims))
            assert_refused(rejected, 401, "unauthorized")
            assert "finite number" in rejected.headers["www-authenticate"]
            assert (await call_metrics(http, server.url, issuer.token(RESOURCE))).status_code == 200


# -- what a caller is told of the sources ----------------------------------------------------------


async def test_instructions_and_discover_name_only_the_sources_the_caller_may_read(
    issuer: TestIssuer,
) -> None:
    north = issuer.token(RESOURCE, scope=f"{SOURCED_SCOPE}:north")
    everything = issuer.token(RESOURCE, scope=SOURCED_SCOPE)
    metrics_only = issuer.token(RESOURCE, scope="metrics:read")
    said: dict[str, str] = {}
    with trio.fail_after(30):
        async with serving(issuer, extra=[sourced_opener()]) as server, httpx2.AsyncClient() as http:
            for who, token in (("north", north), ("everything", everything), ("metrics", metrics_only)):
                found = await http.post(
                    server.url,
                    json=modern("server/discover"),
                    headers=modern_headers("server/discover", token=token),
                )
                said[f"discover {who}"] = found.json()["result"]["instructions"]
                legacy = initialize_request("t", version="2025-11-25")
                opened = await http.post(
                    server.url, json=legacy, headers={"Authorization": f"Bearer {token}"}
                )
                said[f"initialize {who}"] = opened.json()["result"]["instructions"]
    for how in ("discover", "initialize"):
        assert "north: The northern ledger" in said[f"{how} north"]
        assert "south" not in said[f"{how} north"]
        assert "southern" not in said[f"{how} north"]
        assert "north: The northern ledger; south: The southern ledger" in said[f"{how} everything"]
        assert "ledger" not in said[f"{how} metrics"]


async def test_a_source_not_served_is_a_validation_error_that_names_no_source(issuer: TestIssuer) -> None:
    everything = issuer.token(RESOURCE, scope=SOURCED_SCOPE)
    body = modern("tools/call", {"name": "sourced", "arguments": {"source": "west"}})
    with trio.fail_after(30):
        async with serving(issuer, extra=[sourced_opener()]) as server, httpx2.AsyncClient() as http:
            refused = await http.post(
                server.url, json=body, headers=modern_headers("tools/call", "sourced", everything)
            )
    assert refused.status_code == 200
    result = refused.json()["result"]
    assert result["isError"] is True
    detail = json.loads(result["content"][0]["text"])["detail"]
    assert "source: is not one of the sources the tool's inputSchema lists" in detail
    assert "north" not in detail
    assert "south" not in detail
