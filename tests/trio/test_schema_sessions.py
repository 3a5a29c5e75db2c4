"""One scripted session per protocol era, every frame checked against that era's published schema.

The schema comes through a dependency, never a copy: `mcp_types.methods` (the mcp-types package the
official SDK ships, locked in requirements/dev.txt) holds the wire models generated from each
revision's schema.json, keyed by (method, version); the 2025-11-25 models serve every handshake
version, the 2026-07-28 ones the modern era. Each request the script sends is validated as well, so
the script itself cannot drift from the schema. A frame that does not fit fails the test with
pydantic's ValidationError naming the member, after a note with the frame's method and text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pydantic
import pytest
import trio
from mcp_types import UnsupportedProtocolVersionErrorData
from mcp_types.jsonrpc import ErrorData, JSONRPCResponse
from mcp_types.methods import (
    validate_client_notification,
    validate_client_request,
    validate_server_result,
)

from mcp_suite.problems import INVALID_PARAMS, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION
from mcp_suite.protocol.mcp import CLIENT_CAPABILITIES_KEY, MODERN_VERSION, PROTOCOL_VERSION_KEY
from tests.support.harness import NOTES_TEXT, NOTES_URI, Harness, open_session, resource_opener

LEGACY: Final = "2025-11-25"
META: Final = {
    PROTOCOL_VERSION_KEY: MODERN_VERSION,
    CLIENT_CAPABILITIES_KEY: {},
    "io.modelcontextprotocol/clientInfo": {"name": "script", "version": "1"},
}


class SchemaSession:
    """Sends requests through the harness and validates each frame, both ways, for one version."""

    def __init__(self, harness: Harness, version: str, *, modern: bool) -> None:
        self.h = harness
        self.version = version
        self.modern = modern
        self.frames = 0

    def params(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {**(params or {}), "_meta": META} if self.modern else dict(params or {})

    async def send(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        body = self.params(params)
        validate_client_request(method, self.version, body)
        return await self.h.send_request(method, body)

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        validate_client_notification(method, self.version, dict(params))
        await self.h.notify(method, params)

    async def answer(self, method: str, request_id: Any) -> dict[str, Any]:
        message = await self.h.response(request_id)
        check_frame(method, self.version, message)
        self.frames += 1
        return message

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await self.answer(method, await self.send(method, params))

    async def result(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        message = await self.request(method, params)
        assert "result" in message, message
        result: dict[str, Any] = message["result"]
        return result


def check_frame(method: str, version: str, message: dict[str, Any]) -> None:
    """The frame against the schema of `version`: the envelope, then the result of `method`."""
    try:
        if "result" in message:
            JSONRPCResponse.model_validate(message, strict=True)
            validate_server_result(method, version, message["result"])
        else:
            # Both schemas: `id` is a RequestId (string or integer) and may be left out when it could
            # not be read, never null. (The SDK's `JSONRPCError` envelope requires it, nullable.)
            assert set(message) <= {"jsonrpc", "id", "error"}, message
            assert message["jsonrpc"] == "2.0", message
            if "id" in message:
                assert isinstance(message["id"], str | int), message
            ErrorData.model_validate(message["error"], strict=True)
    except pydantic.ValidationError as exc:
        exc.add_note(f"the {version} frame answering {method} does not fit its schema: {message}")
        raise


async def _script_tools_and_resources(s: SchemaSession) -> None:
    listed = await s.result("tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["sleep", "echo", "deny", "boom", "down"]
    echoed = await s.result("tools/call", {"name": "echo", "arguments": {"text": "h\u00e9"}})
    assert echoed["structuredContent"] == {"text": "h\u00e9", "tags": []}
    refused = await s.result("tools/call", {"name": "deny", "arguments": {}})
    assert refused["isError"] is True
    invalid = await s.result("tools/call", {"name": "echo", "arguments": {"text": 5}})
    assert invalid["isError"] is True
    unknown = await s.request("tools/call", {"name": "nope", "arguments": {}})
    assert unknown["error"]["code"] == INVALID_PARAMS
    resources = await s.result("resources/list")
    assert [r["uri"] for r in resources["resources"]] == [NOTES_URI]
    read = await s.result("resources/read", {"uri": NOTES_URI})
    assert read["contents"][0]["text"] == NOTES_TEXT
    assert (await s.result("resources/templates/list"))["resourceTemplates"] == []
    # A cancelled call: the notification fits the schema and no frame answers the call.
    slow = await s.send("tools/call", {"name": "sleep", "arguments": {"seconds": 60}})
    await trio.testing.wait_all_tasks_blocked()
    await s.notify("notifications/cancelled", {"requestId": slow, "reason": "script"})
    await s.result("tools/list")
    assert slow not in s.h._pending  # nothing arrived for the cancelled call


async def test_a_scripted_handshake_session_fits_the_2025_11_25_schema_frame_by_frame(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with open_session(extra_tools=[resource_opener()]) as h:
            s = SchemaSession(h, LEGACY, modern=False)
            init = await s.result(
                "initialize",
                {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "script", "version": "1"},
                },
            )
            assert init["protocolVersion"] == LEGACY
            await s.notify("notifications/initialized", {})
            assert await s.result("ping") == {}
            await _script_tools_and_resources(s)
            await h.send_raw(b"{not json\n")
            check_frame("ping", LEGACY, await h.recv())
            assert s.frames == 11
            assert await h.finish() == []  # nothing ever answered the cancelled call


async def test_a_scripted_modern_session_fits_the_2026_07_28_schema_frame_by_frame(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with open_session(extra_tools=[resource_opener()]) as h:
            s = SchemaSession(h, MODERN_VERSION, modern=True)
            discovered = await s.result("server/discover")
            assert MODERN_VERSION in discovered["supportedVersions"]
            await _script_tools_and_resources(s)
            # Methods the revision removed, and a version this server does not serve per request.
            gone = await s.answer("ping", await h.send_request("ping", {"_meta": META}))
            assert gone["error"]["code"] == METHOD_NOT_FOUND
            old_meta = {**META, PROTOCOL_VERSION_KEY: "2025-11-25"}
            unsupported = await s.answer(
                "tools/list", await h.send_request("tools/list", {"_meta": old_meta})
            )
            assert unsupported["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION
            data = UnsupportedProtocolVersionErrorData.model_validate(
                unsupported["error"]["data"], strict=True
            )
            assert data.requested == "2025-11-25"
            await h.send_raw(b"{not json\n")
            check_frame("ping", MODERN_VERSION, await h.recv())
            assert s.frames == 12
            assert await h.finish() == []  # nothing ever answered the cancelled call


def test_the_check_fails_for_a_handshake_era_result_in_the_modern_era() -> None:
    # What the schema check catches: a tools/list result without resultType, ttlMs and cacheScope.
    legacy_frame = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    check_frame("tools/list", LEGACY, legacy_frame)
    with pytest.raises(pydantic.ValidationError) as failed:
        check_frame("tools/list", MODERN_VERSION, legacy_frame)
    assert {error["loc"][-1] for error in failed.value.errors()} >= {"resultType", "ttlMs", "cacheScope"}
    assert "does not fit its schema" in "".join(failed.value.__notes__)
