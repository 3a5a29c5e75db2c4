"""A 2025-era session that real clients survive (issue 53): the official Python SDK in its legacy mode
(an `initialize` session with `Mcp-Session-Id`) through HAProxy (the shipped template) before two
`serve-http` replicas, all started through the harness. The SDK never opens a new session on a
404, so a session the server no longer holds is resumed under its id for its caller: the same
client keeps calling across the restart of every replica, and across the idle expiry of its
session; so do the TypeScript SDK's two lines (tests/support/ts_sdk/resume.mjs). One audit record
per call, every one under the client's subject."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support.client import server_env
from tests.support.haproxy import HaProxy, open_haproxy
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, free_port, open_issuer
from tests.support.ts_sdk import ts_sdk_resume

pytestmark = pytest.mark.e2e

NAMES = ("mcp1", "mcp2")


class Fleet:
    def __init__(
        self, stack: ExitStack, issuer: TestIssuer, proxy: HaProxy, ports: list[int], env: dict[str, str]
    ):
        self.stack, self.issuer, self.proxy, self.ports, self.env = stack, issuer, proxy, ports, env
        self.lives: list[HttpServer] = []
        self.running: list[HttpServer] = []

    def start(self) -> None:
        self.running = [
            self.stack.enter_context(open_http_server(self.issuer, self.env, port=port))
            for port in self.ports[:2]
        ]
        self.lives.extend(self.running)
        self.proxy.wait_states(dict.fromkeys(NAMES, "UP"))

    def restart(self) -> None:
        """Every replica killed (SIGKILL: nothing of any session is left) and started again."""
        for server in self.running:
            server.kill()
        self.proxy.wait_states(dict.fromkeys(NAMES, "DOWN"))
        self.start()


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    with ExitStack() as stack:
        issuer = stack.enter_context(open_issuer())
        ports = [free_port(), free_port(), free_port()]
        proxy = stack.enter_context(open_haproxy([f"127.0.0.1:{port}" for port in ports]))
        env = {"MCP_HTTP_RESOURCE_URI": proxy.url, "MCP_HTTP_SESSION_IDLE_S": "1"}
        running = Fleet(stack, issuer, proxy, ports, env)
        running.start()
        yield running


async def _call(client: Client) -> Any:
    result = await client.call_tool("system_metrics", {})
    assert result.is_error is False
    return result


async def test_the_python_sdk_s_legacy_session_survives_a_restart_of_every_replica_and_its_idle_expiry(
    fleet: Fleet,
) -> None:
    token = fleet.issuer.token(fleet.proxy.url, sub="erin")
    with trio.fail_after(120):
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(fleet.proxy.url, http_client=http), mode="legacy") as client,
        ):
            assert client.protocol_version == "2025-11-25"
            await _call(client)
            # Its audit record is written before the kill (the log is written in batches).
            while not [r for s in fleet.running for r in s.records() if r.get("method") == "tools/call"]:
                await trio.sleep(0.05)
            await trio.to_thread.run_sync(fleet.restart)
            # The replicas hold no session now; the next call resumes it wherever it lands.
            await _call(client)
            await _call(client)
            await trio.sleep(1.5)  # past MCP_HTTP_SESSION_IDLE_S: the replica ended it
            await _call(client)
            assert (await client.list_tools()).tools
    records = [r for server in fleet.lives for r in server.records() if r.get("event") == "request"]
    calls = [r for r in records if r.get("method") == "tools/call"]
    assert len(calls) == 4
    assert {r["sub"] for r in records} == {"erin"}


@pytest.mark.parametrize("sdk", ["v1", "v2"])
def test_the_typescript_sdk_s_legacy_session_survives_a_restart_of_every_replica(
    fleet: Fleet, sdk: str
) -> None:
    token = fleet.issuer.token(fleet.proxy.url, sub="finn")
    script = ts_sdk_resume()
    env = {**server_env({}), "MCP_TEST_TOKEN": token}
    with subprocess.Popen(
        ["node", str(script), sdk, fleet.proxy.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=script.parent,
        text=True,
    ) as node:
        assert node.stdout is not None
        assert node.stdin is not None
        assert node.stdout.readline() == "called\n", node.stderr.read() if node.stderr else ""
        fleet.restart()
        out, err = node.communicate("go\n", timeout=120)
    assert node.returncode == 0, err
    seen = json.loads(out)
    assert seen["outcomes"] == ["ok", "ok", "ok"], seen
    assert seen["before"] == seen["after"]  # the same session, resumed: the SDK opened none
