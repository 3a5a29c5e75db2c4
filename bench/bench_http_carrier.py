"""The HTTP transport's own CPU per request, in process, without sockets (issue 41).

`HttpApp` (the carrier and the pure exchange) is driven through ASGI as hypercorn would drive it,
with the test tools (`echo`: a small answer, and one of 20 KB) and `tools/list`. The floor is the
same ASGI plumbing answered by a bare app that sends a fixed 200 of the same size, in the same run:
what is left is what the transport decides and the call it runs. CPU time of this process, median
of interleaved rounds; `bench_http` measures the same over real sockets beside DBHub.

    python -m bench http_carrier
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

import trio

from bench.common import Figure
from mcp_suite.runtime.http import HttpApp
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import open_registry
from tests.support.harness import ToolLog, tool_opener

MODERN: Final = "2026-07-28"
ROUNDS: Final = 7
REQUESTS: Final = 400
App = Callable[..., Awaitable[None]]


def _body(method: str, params: dict[str, Any], request_id: int) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
    return json.dumps(message).encode()


async def _request(app: App, method: str, name: str | None, params: dict[str, Any], request_id: int) -> int:
    data = _body(method, params, request_id)
    headers = [
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"mcp-protocol-version", MODERN.encode()),
        (b"mcp-method", method.encode()),
        (b"content-length", str(len(data)).encode()),
        *([(b"mcp-name", name.encode())] if name else []),
    ]
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "http_version": "1.1"}
    delivered = False
    status = 0

    async def receive() -> MutableMapping[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": data, "more_body": False}
        await trio.sleep_forever()  # the client stays connected: no disconnect
        raise AssertionError  # pragma: no cover

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        status = message.get("status", status)
        await trio.lowlevel.checkpoint()

    await app(scope, receive, send)
    return status


def _bare_app(size: int) -> App:
    """The floor: read the body, answer a fixed 200 of `size` bytes."""
    answer = b"x" * size

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"json")]})
        await send({"type": "http.response.body", "body": answer})

    return app


async def _cpu_per_request_us(app: App, method: str, name: str | None, params: dict[str, Any]) -> float:
    start = time.process_time()
    for i in range(REQUESTS):
        if await _request(app, method, name, params, i + 1) != 200:
            raise RuntimeError(f"{method} was not answered 200")
    return (time.process_time() - start) / REQUESTS * 1e6


async def _measure() -> list[Figure]:
    settings = Settings(http_port=0, http_auth="none")
    figures = []
    with open_registry(settings, extra=[tool_opener(ToolLog())], builtins=False) as registry:
        app = HttpApp(settings, registry, None)
        small: dict[str, Any] = {"name": "echo", "arguments": {"text": "hi"}}
        large: dict[str, Any] = {"name": "echo", "arguments": {"text": "x" * 20_000}}
        workloads: tuple[tuple[str, str, str | None, dict[str, Any]], ...] = (
            ("tools/call echo, small answer", "tools/call", "echo", small),
            ("tools/call echo, 20 KB answer", "tools/call", "echo", large),
            ("tools/list", "tools/list", None, {}),
        )
        for label, method, name, params in workloads:
            await _request(app, method, name, params, 0)  # models, descriptions, grants built
            size = len(json.dumps(params)) + 100
            ours, floor = [], []
            for _ in range(ROUNDS):
                ours.append(await _cpu_per_request_us(app, method, name, params))
                floor.append(await _cpu_per_request_us(_bare_app(size), method, name, params))
            figures.append(
                Figure(
                    f"http carrier CPU per request, {label}",
                    statistics.median(ours),
                    "µs",
                    floor=statistics.median(floor),
                    note="floor: a bare ASGI app answering the same size, interleaved",
                )
            )
    return figures


def run() -> list[Figure]:
    logging.disable(logging.CRITICAL)  # the audit trail's lines are not what is measured
    try:
        return trio.run(_measure)
    finally:
        logging.disable(logging.NOTSET)
