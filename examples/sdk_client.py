"""Call mcp-suite from Python with the official MCP SDK (`pip install mcp`), over stdio or HTTP.

    python examples/sdk_client.py stdio [COMMAND ...]   start the server itself (default: this
                                                         Python's `-m mcp_suite`) and talk on its pipes
    MCP_TOKEN=<token> python examples/sdk_client.py http URL
                                                         a running `mcp-suite serve-http` (or
                                                         `make try-http`, which prints a token)

It lists the tools, then calls `system_metrics` and, when the server reads a database,
`read_only_sql` with `SELECT 1 AS one`, and prints each answer as one JSON line. Only the SDK's
public modules are imported: copy it as the start of your own client.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters

# The SDK's own defaults for an HTTP client: 30 s to connect and send, 5 minutes to read (a
# server may hold a response stream open while a call runs).
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")


async def tour(client: Client) -> None:
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    emit({"tools": sorted(tools)})
    calls: list[tuple[str, dict[str, Any]]] = [("system_metrics", {})]
    if "read_only_sql" in tools:
        calls.append(("read_only_sql", {"sql": "SELECT 1 AS one"}))
    for name, arguments in calls:
        if name not in tools:
            continue
        source = tools[name].input_schema.get("properties", {}).get("source", {}).get("enum")
        if source:  # several databases: the first one the token may read
            arguments = {**arguments, "source": source[0]}
        result = await client.call_tool(name, arguments)
        emit({"tool": name, "is_error": result.is_error, "result": result.structured_content})


async def over_stdio(command: list[str]) -> None:
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with Client(server) as client:
        await tour(client)


async def over_http(url: str, token: str) -> None:
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await tour(client)


def main(argv: list[str]) -> int:
    if argv[:1] == ["stdio"]:
        anyio.run(over_stdio, argv[1:] or [sys.executable, "-m", "mcp_suite"])
        return 0
    if len(argv) == 2 and argv[0] == "http":
        token = os.environ.get("MCP_TOKEN")
        if not token:
            sys.stderr.write("set MCP_TOKEN to a bearer token (make try-http prints one)\n")
            return 2
        anyio.run(over_http, argv[1], token)
        return 0
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
