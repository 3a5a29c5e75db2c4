"""The HTTP transport in-process: hypercorn's trio worker on a loopback port, the real app, a test
issuer's JWKS on loopback, real sockets. Only what sockets show: tokens verified against a real key
set, bodies and headers as hypercorn reads them (streamed past the cap, too slow, idle connections),
disconnects, call slots and cancellation, the SDKs' clients, the 500 with its incident id. Every
decision the exchange takes alone is asserted as a whole reply in
tests/unit/protocol/test_http_exchange.py."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import resource
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx2
import pytest
import trio
import trio.testing
from joserfc.jwk import ECKey
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_suite.protocol.mcp import MODERN_VERSION
from mcp_suite.runtime.http import serve_http
from mcp_suite.settings import Settings
from mcp_suite.tools.base import SourceState, Toolset
from mcp_suite.tools.registry import ToolOpener, open_registry
from tests.support.harness import TEST_SCOPE, ToolLog, tool_opener
from tests.support.issuer import TestIssuer, open_issuer
from tests.support.ts_sdk import ts_sdk_cancel
from tests.support.wire import check_line, initialize_request, slug_of

RESOURCE: Final = "http://127.0.0.1/mcp"
IDLE_CONNECTIONS: Final = 1_000
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass
class Server:
    url: str
    host: str
    port: int
    log: ToolLog


@pytest.fixture
def issuer() -> Iterator[TestIssuer]:
    with open_issuer() as made:
        yield made


@contextlib.asynccontextmanager
async def serving(
    issuer: TestIssuer | None = None, *, extra: Sequence[ToolOpener] = (), **overrides: Any
) -> AsyncIterator[Server]:
    """serve-http on a free loopback port, with the metrics tool, the test tools and `extra`."""
    auth: dict[str, Any] = {"http_auth": "none"}
    if issuer is not None:
        auth = {
            "http_auth": "jwt",
            "http_resource_uri": RESOURCE,
            "http_issuer": issuer.issuer,
            "http_jwks_url": issuer.jwks_url,
        }
    settings = Settings(http_port=0, **{**auth, **overrides})
    log = ToolLog()
    with open_registry(settings, extra=[tool_opener(log), *extra]) as registry:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(functools.partial(serve_http, settings, registry, shutdown=stop.wait))
            address = binds[0].removeprefix("http://")
            host, _, port = address.rpartition(":")
            yield Server(binds[0] + "/mcp", host, int(port), log)
            stop.set()


def modern(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": META}}


def modern_headers(method: str, name: str | None = None, token: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def refusal_body(body: bytes, status: int, slug: str) -> dict[str, Any]:
    """The body of an HTTP refusal: a JSON-RPC error without an id whose problem says what the
    status line says (its status, and the slug of the problem meant)."""
    message = check_line(body + b"\n")
    assert "id" not in message, message
    problem = message["error"]["data"]
    assert (problem["status"], slug_of(problem)) == (status, slug), message
    return message


def assert_refused(response: httpx2.Response, status: int, slug: str) -> dict[str, Any]:
    """`response` is an HTTP `status` whose body (`refusal_body`) agrees with it."""
    assert response.status_code == status, response.content
    assert response.headers["content-type"] == "application/json"
    return refusal_body(response.content, status, slug)


async def raw_answer(stream: trio.SocketStream) -> tuple[bytes, bytes]:
    """The status line and the body of one answer on a raw connection the server closes after it."""
    answer = b""
    with trio.fail_after(10):
        while chunk := await stream.receive_some(65_536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], body


async def list_tools(http: httpx2.AsyncClient, url: str, token: str | None = None) -> httpx2.Response:
    return await http.post(url, json=modern("tools/list"), headers=modern_headers("tools/list", token=token))


async def call_metrics(http: httpx2.AsyncClient, url: str, token: str | None) -> httpx2.Response:
    body = modern("tools/call", {"name": "system_metrics", "arguments": {}})
    return await http.post(url, json=body, headers=modern_headers("tools/call", "system_metrics", token))


# -- tokens ----------------------------------------------------------------------------------------


async def test_no_token_is_401_pointing_at_the_resource_metadata_and_naming_the_scopes_served(
    issuer: TestIssuer,
) -> None:
    with trio.fail_after(30):
        async with serving(issuer) as server, httpx2.AsyncClient() as http:
            missing = await call_metrics(http, server.url, None)
            assert "bearer token" in assert_refused(missing, 401, "unauthorized")["error"]["data"]["detail"]
            # The scopes of what this server serves, in its order (its metrics tool, then the test
            # tools' own): what a client should ask for (authorization, "Scope Selection Strategy").
            assert missing.headers["www-authenticate"] == (
                'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp", '
                f'scope="metrics:read {TEST_SCOPE}"'
            )
            basic = await http.post(server.url, json={}, headers={"Authorization": "Basic YTpi"})
            assert_refused(basic, 401, "unauthorized")


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"expires_in": -120}, "expired"),
        ({"aud": "http://127.0.0.1/other"}, "audience"),
        ({"iss": "http://127.0.0.1:1"}, "issuer"),
        ({"nbf": 4_000_000_000}, "not valid yet"),
    ],
)
async def test_a_token_whose_claims_do_not_hold_is_401_invalid_token(
    issuer: TestIssuer, claims: dict[str, Any], reason: str
) -> None:
    with trio.fail_after(30):
        async with serving(issuer) as server, httpx2.AsyncClient() as http:
            aud = claims.pop("aud", RESOURCE)
            rejected = await call_metrics(http, server.url, issuer.token(aud, **claims))
            assert_refused(rejected, 401, "unauthorized")
            challenge = rejected.headers["www-authenticate"]
            assert challenge.startswith('Bearer resource_metadata="')
            assert 'error="invalid_token"' in challenge
            assert reason in challenge
            # The same request with a good token is served: the refusal was the claim's.
            assert (await call_metrics(http, server.url, issuer.token(RESOURCE))).status_code == 200


async def test_a_bad_signature_is_401_and_an_unknown_kid_refetches_the_keys_at_most_once_per_interval(
    issuer: TestIssuer,
) -> None:
    forger = ECKey.generate_key("P-256", parameters={"kid": "k1"})  # the issuer's kid, another key
    stranger = ECKey.generate_key("P-256", parameters={"kid": "k9"})
    with trio.fail_after(30):
        async with serving(issuer, http_jwks_refresh_min_s=1) as server, httpx2.AsyncClient() as http:
            assert (await call_metrics(http, server.url, issuer.token(RESOURCE))).status_code == 200
            assert issuer.fetches == 1
            forged = await call_metrics(http, server.url, issuer.token(RESOURCE, key=forger))
            assert forged.status_code == 401
            assert "signature" in forged.headers["www-authenticate"]
            assert issuer.fetches == 1  # a known kid needs no new keys
            unknown = await call_metrics(http, server.url, issuer.token(RESOURCE, key=stranger))
            assert unknown.status_code == 401
            assert issuer.fetches == 1  # within the refresh interval of the last fetch: none
            await trio.sleep(1.1)
            # An unknown kid: the keys are fetched again (a rotation), but not again and again.
            for _ in range(5):
                unknown = await call_metrics(http, server.url, issuer.token(RESOURCE, key=stranger))
                assert unknown.status_code == 401
            assert issuer.fetches == 2


async def test_a_rotated_key_is_taken_up_on_its_first_token(issuer: TestIssuer) -> None:
    rotated = ECKey.generate_key("P-256", parameters={"kid": "k2"})
    with trio.fail_after(30):
        async with serving(issuer, http_jwks_refresh_min_s=0) as server, httpx2.AsyncClient() as http:
            assert (await call_metrics(http, server.url, issuer.token(RESOURCE))).status_code == 200
            issuer.published.append(rotated)
            assert (
                await call_metrics(http, server.url, issuer.token(RESOURCE, key=rotated))
            ).status_code == 200


async def test_keys_that_cannot_be_fetched_are_503_not_a_pass(issuer: TestIssuer) -> None:
    with trio.fail_after(30):
        async with (
            serving(issuer, http_jwks_url="http://127.0.0.1:9/nothing") as server,
            httpx2.AsyncClient() as http,
        ):
            unavailable = await call_metrics(http, server.url, issuer.token(RESOURCE))
            error = assert_refused(unavailable, 503, "authorization-unavailable")["error"]
            assert error["code"] == -32603  # the infrastructure's fault, as database-unavailable
            assert error["data"]["metadata"] == {"retryable": True}
            assert unavailable.headers["retry-after"] == "5"


# -- body, headers, connections --------------------------------------------------------------------


async def test_an_oversized_body_is_413_by_its_declared_length_and_while_it_streams() -> None:
    with trio.fail_after(30):
        async with serving(http_max_body_bytes=4_096) as server, httpx2.AsyncClient() as http:
            big = {**modern("tools/list"), "pad": "x" * 5_000}
            declared = await http.post(server.url, json=big, headers=modern_headers("tools/list"))
            assert_refused(declared, 413, "request-too-large")
            assert declared.headers["connection"] == "close"
            # No declared length, and the body never ends: the answer comes once the cap is passed.
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                await stream.send_all(
                    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                for _ in range(5):
                    await stream.send_all(b"400\r\n" + b"x" * 1024 + b"\r\n")
                status_line, body = await raw_answer(stream)
            assert status_line.startswith(b"HTTP/1.1 413")
            refusal_body(body, 413, "request-too-large")
            ok = await list_tools(http, server.url)
            assert ok.status_code == 200


async def test_a_slow_header_sender_is_cut_off_and_the_server_keeps_serving() -> None:
    with trio.fail_after(30):
        async with serving(http_idle_timeout_s=1) as server, httpx2.AsyncClient() as http:
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                started = trio.current_time()
                closed = False
                for byte in b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                    try:
                        await stream.send_all(bytes([byte]))
                    except trio.BrokenResourceError:
                        closed = True
                        break
                    # Meanwhile every other client is served.
                    ok = await http.post(
                        server.url, json=modern("tools/list"), headers=modern_headers("tools/list")
                    )
                    assert ok.status_code == 200
                    await trio.sleep(0.1)
                if not closed:
                    with trio.move_on_after(5):
                        closed = await stream.receive_some(1024) == b""
                assert closed
                assert trio.current_time() - started < 6


@pytest.fixture
def descriptors_for_idle_connections() -> Iterator[None]:
    """Room for both ends of 1,000 connections in this process (the soft limit is often 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE_CONNECTIONS * 2 + 256
    assert hard == resource.RLIM_INFINITY or hard >= wanted, f"RLIMIT_NOFILE hard limit {hard} < {wanted}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.usefixtures("descriptors_for_idle_connections")
async def test_idle_connections_are_closed_and_do_not_stop_the_server() -> None:
    # Caps above the connections opened: this is about the idle bound (the caps: test_http_bounds.py).
    caps: dict[str, Any] = {
        "http_max_connections": 2 * IDLE_CONNECTIONS,
        "http_max_connections_per_peer": 2 * IDLE_CONNECTIONS,
    }
    with trio.fail_after(30):
        async with serving(http_idle_timeout_s=1, **caps) as server, httpx2.AsyncClient() as http:
            streams = [await trio.open_tcp_stream(server.host, server.port) for _ in range(IDLE_CONNECTIONS)]
            try:
                ok = await http.post(
                    server.url, json=modern("tools/list"), headers=modern_headers("tools/list")
                )
                assert ok.status_code == 200
                with trio.fail_after(10):
                    for stream in streams:
                        assert await stream.receive_some(1024) == b""  # closed by the server
            finally:
                for stream in streams:
                    await stream.aclose()


async def test_a_header_block_over_the_limit_is_refused() -> None:
    with trio.fail_after(30):
        # A long idle timeout: only the size bound can end the connection within the test's bound.
        async with (
            serving(http_max_header_bytes=2_048, http_idle_timeout_s=60) as server,
            httpx2.AsyncClient() as http,
        ):
            headers = {**modern_headers("tools/list"), "X-Big": "a" * 4_000}
            assert_refused(
                await http.post(server.url, json=modern("tools/list"), headers=headers),
                431,
                "headers-too-large",
            )
            # Sent in pieces, hypercorn's own bound ends it before the block is complete.
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
                with contextlib.suppress(trio.BrokenResourceError):
                    for _ in range(10):
                        await stream.send_all(b"X-Big: " + b"a" * 1_000 + b"\r\n")
                        await trio.sleep(0.01)
                with trio.fail_after(10):
                    answer = await stream.receive_some(65_536)
            assert answer == b"" or answer.startswith(b"HTTP/1.1 4")
            ok = await list_tools(http, server.url)
            assert ok.status_code == 200


# -- the transport's shape -------------------------------------------------------------------------


async def test_a_legacy_session_lives_from_initialize_to_delete_and_belongs_to_its_caller(
    issuer: TestIssuer,
) -> None:
    alice = issuer.token(RESOURCE, sub="alice")
    mallory = issuer.token(RESOURCE, sub="mallory")
    initialize = initialize_request("t", version="2025-11-25")
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    with trio.fail_after(30):
        async with serving(issuer) as server, httpx2.AsyncClient() as http:
            opened = await http.post(
                server.url, json=initialize, headers={"Authorization": f"Bearer {alice}"}
            )
            assert opened.status_code == 200
            session_id = opened.headers["mcp-session-id"]
            as_alice = {"Authorization": f"Bearer {alice}", "Mcp-Session-Id": session_id}
            listed = await http.post(server.url, json=tools_list, headers=as_alice)
            assert [t["name"] for t in listed.json()["result"]["tools"]] == ["system_metrics"]
            # Without the session, the request is not part of any: the core says so.
            alone = await http.post(server.url, json=tools_list, headers={"Authorization": f"Bearer {alice}"})
            assert alone.status_code == 400
            assert alone.json()["error"]["code"] == -32600
            # Another caller cannot use it, nor end it.
            as_mallory = {"Authorization": f"Bearer {mallory}", "Mcp-Session-Id": session_id}
            assert_refused(await http.post(server.url, json=tools_list, headers=as_mallory), 404, "not-found")
            assert_refused(await http.delete(server.url, headers=as_mallory), 404, "not-found")
            wrong_version = {**as_alice, "MCP-Protocol-Version": "2025-06-18"}
            assert_refused(
                await http.post(server.url, json=tools_list, headers=wrong_version), 400, "invalid-request"
            )
            no_session = {"Authorization": f"Bearer {alice}"}
            assert_refused(await http.delete(server.url, headers=no_session), 400, "invalid-request")
            assert (await http.delete(server.url, headers=as_alice)).status_code == 204
            # Ended by its client: 404 from then on, to its own caller too (a session the server
            # merely no longer holds is resumed: tests/e2e/test_http_session_resume.py).
            assert_refused(await http.post(server.url, json=tools_list, headers=as_alice), 404, "not-found")
            assert_refused(await http.post(server.url, json=tools_list, headers=as_mallory), 404, "not-found")
            unknown = {"Authorization": f"Bearer {alice}", "Mcp-Session-Id": "nope"}
            assert_refused(await http.post(server.url, json=tools_list, headers=unknown), 404, "not-found")


async def test_a_closed_connection_cancels_its_modern_call() -> None:
    with trio.fail_after(30):
        async with serving() as server:
            body = json.dumps(modern("tools/call", {"name": "sleep", "arguments": {"seconds": 20, "tag": 7}}))
            request = (
                "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"MCP-Protocol-Version: {MODERN_VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: sleep\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}"
            ).encode()
            stream = await trio.open_tcp_stream(server.host, server.port)
            await stream.send_all(request)
            while not server.log.started:
                await trio.sleep(0.01)
            await stream.aclose()
            while not server.log.cancelled:
                await trio.sleep(0.01)
            assert server.log.cancelled == [7]


async def test_a_body_that_does_not_arrive_in_time_is_408() -> None:
    with trio.fail_after(30):
        async with serving(http_body_timeout_s=0.5, http_idle_timeout_s=60) as server:
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                await stream.send_all(head + b"Content-Length: 100\r\n\r\n{")
                status_line, body = await raw_answer(stream)
            assert status_line.startswith(b"HTTP/1.1 408")
            refusal_body(body, 408, "request-timeout")


@pytest.mark.parametrize(
    ("accept", "answer"),
    [
        (None, (200, "text/event-stream", b"")),  # httpx's */*
        ("application/json, text/event-stream", (200, "text/event-stream", b"")),
        # A client that refuses an event stream (no 2025-11-25 client may): no body at all.
        ("application/json", (204, None, b"")),
    ],
)
async def test_a_legacy_session_s_call_is_cancelled_by_notifications_cancelled(
    accept: str | None, answer: tuple[int, str | None, bytes]
) -> None:
    initialize = initialize_request("t")
    sleep = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"seconds": 20, "tag": 3}},
    }
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    with trio.fail_after(30):
        async with serving() as server, httpx2.AsyncClient() as http:
            opened = await http.post(server.url, json=initialize)
            session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
            if accept is not None:
                session["Accept"] = accept
            answers: list[httpx2.Response] = []

            async def post_sleep() -> None:
                answers.append(await http.post(server.url, json=sleep, headers=session))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(post_sleep)
                while not server.log.started:
                    await trio.sleep(0.01)
                accepted = await http.post(server.url, json=cancel, headers=session)
                assert accepted.status_code == 202
            assert server.log.cancelled == [3]
            # No JSON-RPC message for a cancelled call, in a form 2025-11-25 allows for a POST that
            # carried a request: an SSE stream closed without a message.
            assert [(a.status_code, a.headers.get("content-type"), a.content) for a in answers] == [answer]


async def test_a_closed_connection_does_not_cancel_a_legacy_call() -> None:
    # 2025-11-25: "Disconnection SHOULD NOT be interpreted as the client cancelling its request."
    initialize = initialize_request("t", version="2025-11-25")
    with trio.fail_after(30):
        async with serving() as server, httpx2.AsyncClient() as http:
            opened = await http.post(server.url, json=initialize)
            session_id = opened.headers["mcp-session-id"]
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "sleep", "arguments": {"seconds": 0.5, "tag": 8}},
                }
            )
            request = (
                "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Mcp-Session-Id: {session_id}\r\nContent-Length: {len(body)}\r\n\r\n{body}"
            ).encode()
            stream = await trio.open_tcp_stream(server.host, server.port)
            await stream.send_all(request)
            while not server.log.started:
                await trio.sleep(0.01)
            await stream.aclose()
            while not server.log.finished:
                await trio.sleep(0.01)
            assert (server.log.finished, server.log.cancelled) == ([8], [])
            # The session serves on.
            listed = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
            again = await http.post(server.url, json=listed, headers={"Mcp-Session-Id": session_id})
            assert again.status_code == 200


# -- no caller degrades another (issue 47) ---------------------------------------------------------


async def test_one_caller_using_its_whole_share_of_call_slots_leaves_the_others_to_another(
    issuer: TestIssuer,
) -> None:
    alice = issuer.token(RESOURCE, sub="alice", scope=TEST_SCOPE)
    bob = issuer.token(RESOURCE, sub="bob", scope=TEST_SCOPE)

    def sleep(seconds: float, tag: int, token: str) -> dict[str, Any]:
        body = modern("tools/call", {"name": "sleep", "arguments": {"seconds": seconds, "tag": tag}}, tag)
        return {"json": body, "headers": modern_headers("tools/call", "sleep", token)}

    with trio.fail_after(30):
        async with (
            serving(issuer, max_concurrency=2, http_max_calls_per_identity=1) as server,
            httpx2.AsyncClient(timeout=60) as http,
            trio.open_nursery() as nursery,
        ):
            for tag in (1, 2):  # Alice: two long calls, one more than her share
                nursery.start_soon(functools.partial(http.post, server.url, **sleep(20, tag, alice)))
            while not server.log.started:
                await trio.sleep(0.01)
            # Every task of the test and the server is waiting: Alice's second call is in her line.
            await trio.testing.wait_all_tasks_blocked(cushion=0.1)
            assert len(server.log.started) == 1
            # Bob's call takes the slot Alice cannot: it runs at once and is answered.
            answered = await http.post(server.url, **sleep(0, 3, bob))
            assert answered.status_code == 200
            assert answered.json()["result"]["structuredContent"] == {"tag": 3, "slept": 0}
            assert server.log.finished == [3]
            assert len(server.log.started) == 2  # Alice's second call still waits
            nursery.cancel_scope.cancel()  # closing Alice's connections cancels her calls


async def test_without_authorization_the_one_caller_holds_every_call_slot() -> None:
    with trio.fail_after(30):
        async with (
            serving(max_concurrency=2, http_max_calls_per_identity=1) as server,
            httpx2.AsyncClient(timeout=60) as http,
        ):
            async with trio.open_nursery() as nursery:
                for tag in (1, 2):
                    body = modern(
                        "tools/call", {"name": "sleep", "arguments": {"seconds": 20, "tag": tag}}, tag
                    )
                    headers = modern_headers("tools/call", "sleep")
                    nursery.start_soon(functools.partial(http.post, server.url, json=body, headers=headers))
                while len(server.log.started) < 2:  # both run: `anonymous` is everyone, as on stdio
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()
            assert sorted(server.log.started) == [1, 2]


async def test_a_key_set_fetch_that_hangs_delays_no_token_whose_key_is_cached(issuer: TestIssuer) -> None:
    stranger = ECKey.generate_key("P-256", parameters={"kid": "k9"})
    with trio.fail_after(30):
        async with (
            serving(issuer, http_jwks_refresh_min_s=0, http_jwks_wait_s=0.5) as server,
            httpx2.AsyncClient() as http,
        ):
            kept = issuer.token(RESOURCE, sub="kept")
            assert (await call_metrics(http, server.url, kept)).status_code == 200
            assert issuer.asked == 1
            issuer.gate.clear()  # from now on the issuer does not answer
            try:
                unknown: list[httpx2.Response] = []

                async def unknown_kid() -> None:
                    unknown.append(await call_metrics(http, server.url, issuer.token(RESOURCE, key=stranger)))

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(unknown_kid)  # anyone's made-up kid: a fetch starts, and hangs
                    while issuer.asked < 2:
                        await trio.sleep(0.01)
                    # Tokens whose key is cached are served while the fetch hangs, a kept one and a new one.
                    assert (await call_metrics(http, server.url, kept)).status_code == 200
                    fresh = issuer.token(RESOURCE, sub="fresh")
                    assert (await call_metrics(http, server.url, fresh)).status_code == 200
                assert issuer.asked == 2
                # The unknown kid waited its bounded time for the fetch, then got 503.
                (first,) = unknown
                assert_refused(first, 503, "authorization-unavailable")
                assert first.headers["retry-after"] == "5"
                # More unknown kids join the fetch in progress: no second fetch, the same 503.
                again = await call_metrics(http, server.url, issuer.token(RESOURCE, key=stranger))
                assert_refused(again, 503, "authorization-unavailable")
                assert issuer.asked == 2
            finally:
                issuer.gate.set()


async def test_two_authorization_headers_are_400_and_a_token_issued_ahead_is_401(issuer: TestIssuer) -> None:
    good = issuer.token(RESOURCE, sub="alice")
    other = issuer.token(RESOURCE, sub="mallory")
    body = modern("tools/call", {"name": "system_metrics", "arguments": {}})
    with trio.fail_after(30):
        async with serving(issuer) as server, httpx2.AsyncClient() as http:
            base = list(modern_headers("tools/call", "system_metrics").items())
            for pair in ([good, other], [good, good]):
                headers = [*base, *(("Authorization", f"Bearer {token}") for token in pair)]
                twice = await http.post(server.url, json=body, headers=headers)
                assert_refused(twice, 400, "invalid-request")
                challenge = twice.headers["www-authenticate"]
                assert 'error="invalid_request"' in challenge
                assert "more than one Authorization header" in challenge
            for iat in (int(time.time()) + 10 * 365 * 86_400, "2020-01-01", -5):
                rejected = await call_metrics(http, server.url, issuer.token(RESOURCE, iat=iat))
                assert_refused(rejected, 401, "unauthorized")
                assert "iat" in rejected.headers["www-authenticate"]
            assert (await call_metrics(http, server.url, good)).status_code == 200


async def test_no_log_line_carries_a_path_the_server_does_not_serve_nor_a_query(
    issuer: TestIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = issuer.token(RESOURCE)
    with trio.fail_after(30):
        async with serving(issuer) as server, httpx2.AsyncClient() as http:
            base = server.url.removesuffix("/mcp")
            lost = await http.post(f"{base}/mcp/{token}?access_token={token}&q=secret-query", json={})
            assert_refused(lost, 404, "not-found")
            unauthorized = await http.post(f"{server.url}?access_token=secret-query", json={})
            assert_refused(unauthorized, 401, "unauthorized")
    said = [record.getMessage() for record in caplog.records if record.name.startswith("mcp_suite")]
    assert not [line for line in said if token in line or "secret-query" in line or token[:20] in line]
    assert (
        f"HTTP 404 for POST an unknown path '/mcp/{token[:11]}'… ({len(token) + 5} characters): "
        in "\n".join(said)
    )
    assert any(line.startswith("HTTP 401 for POST /mcp: ") for line in said)


# -- a cancelled call in a legacy session, as the SDKs' clients see it -------------------------------


async def test_a_cancelled_legacy_call_raises_no_error_in_the_python_sdk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp")
    dropped = "dropping response for unknown/late request id"
    with trio.fail_after(30):
        async with (
            serving() as server,
            create_mcp_http_client() as http,
            Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client,
        ):
            assert client.protocol_version == "2025-11-25"
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(client.call_tool, "sleep", {"seconds": 60, "tag": 5}))
                while not server.log.started:
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            # The call's POST is answered once the server has cancelled the call, and the SDK
            # drops what it reads there (its caller is gone).
            while not any(r.getMessage().startswith(dropped) for r in caplog.records):
                await trio.sleep(0.01)
            assert server.log.cancelled == [5]
            assert [t.name for t in (await client.list_tools()).tools][:2] == ["system_metrics", "sleep"]
    complaints = [
        r.getMessage() for r in caplog.records if r.name.startswith("mcp") and r.levelno >= logging.WARNING
    ]
    assert complaints == []


@pytest.mark.e2e  # Node and the SDKs' lock, installed on first use
@pytest.mark.parametrize("sdk", ["v1", "v2"])
async def test_a_cancelled_legacy_call_raises_no_error_event_in_the_typescript_sdks(sdk: str) -> None:
    script = ts_sdk_cancel()
    said = b""
    with trio.fail_after(120):
        async with serving() as server, trio.open_nursery() as nursery:
            command = ["node", str(script), sdk, server.url]
            env = {**os.environ, "MCP_TEST_TOKEN": "unused-without-authorization"}
            run = functools.partial(
                trio.run_process, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, check=False
            )
            process: trio.Process = await nursery.start(run)
            assert process.stdin is not None
            assert process.stdout is not None
            while b"calling\n" not in said:
                chunk = await process.stdout.receive_some()
                assert chunk, said
                said += chunk
            while not server.log.started:
                await trio.sleep(0.01)
            await process.stdin.send_all(b"cancel\n")
            await process.stdin.aclose()
            while chunk := await process.stdout.receive_some():
                said += chunk
            assert await process.wait() == 0, said
    seen = json.loads(said.split(b"calling\n", 1)[1])
    assert server.log.cancelled == [1]
    assert seen["outcome"] == "aborted"
    # The client raised no error event for the answer to the cancelled call's POST: 2025-11-25
    # answers a POST that carried a request with JSON or an SSE stream, here one closed without
    # a message.
    assert seen["errors"] == []
    assert seen["answer"] == {"status": 200, "contentType": "text/event-stream", "body": ""}
    assert seen["tools"] >= 2


# -- a failure outside any call -------------------------------------------------------------------


def failing_states_opener() -> ToolOpener:
    """A ToolOpener whose data source cannot say how it is: its `states` raise (a fault injected
    through the toolset's own parameter)."""

    def states() -> list[SourceState]:
        raise RuntimeError("the state of the source is unreadable: secret-detail")

    @contextlib.contextmanager
    def open_failing(settings: Settings) -> Iterator[Toolset | None]:
        yield Toolset(tools=(), states=states)

    return open_failing


async def test_a_failure_outside_any_call_is_a_500_internal_error_with_an_incident_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="mcp_suite")
    with trio.fail_after(30):
        async with serving(extra=[failing_states_opener()]) as server, httpx2.AsyncClient() as http:
            response = await http.get(server.url.removesuffix("/mcp") + "/readyz")
            problem = assert_refused(response, 500, "internal-error")["error"]["data"]
            incident = problem["metadata"]["incident"]
            assert incident in problem["detail"]
            assert "secret-detail" not in response.text  # the exception's words stay in the log
            # The server serves on.
            assert (await http.get(server.url.removesuffix("/mcp") + "/healthz")).status_code == 200
    logged = [r for r in caplog.records if r.getMessage() == f"incident {incident} in HTTP GET"]
    assert len(logged) == 1
    assert logged[0].exc_info is not None
    assert "secret-detail" in str(logged[0].exc_info[1])
