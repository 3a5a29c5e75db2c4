"""MCP messages and the session lifecycle table (docs/wire.md). Pure data and decisions, no I/O.

The runtime asks `Lifecycle.route(method)` what to do with a request and builds results with the
functions here; the rules (what is allowed before `initialize`, version negotiation, paging of
`tools/list`, the shape of tool results) live only in this module.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcp_suite.problems import (
    INVALID_PARAMS,
    InvalidArgumentsError,
    InvalidRequestError,
    MethodNotFoundError,
    ProblemError,
    SessionNotInitializedError,
    echo,
    render_problem,
)
from mcp_suite.protocol.jsonrpc import compact_json

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "Lifecycle",
    "Route",
    "ToolDescription",
    "call_error_result",
    "call_result",
    "initialize_result",
    "model_json_schema",
    "negotiate_version",
    "parse_call_params",
    "structured_json",
    "tool_entry",
]

SUPPORTED_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION: Final = SUPPORTED_VERSIONS[0]

INSTRUCTIONS: Final = (
    "mcp-suite gives read-only, policy-checked access to three things: one read-only SQL query at a "
    "time against PostgreSQL (read_only_sql, with the schema as a resource), text files below one "
    "sandboxed folder (sandbox_fs_read), and an aggregate snapshot of the host's CPU, memory and disk "
    "(system_metrics). Nothing can be written. Refusals come back as problem documents that say what "
    "to change."
)


class Route(enum.Enum):
    INLINE = "inline"  # answered by the dispatcher, in arrival order
    CALL = "call"  # its own task (tools/call, resources/read)
    NOT_INITIALIZED = "not-initialized"  # -32600 session-not-initialized
    UNKNOWN = "unknown"  # -32601


_INLINE_METHODS: Final = frozenset({"initialize", "ping", "tools/list"})
_RESOURCE_METHODS: Final = frozenset({"resources/list", "resources/read", "resources/templates/list"})


class Lifecycle:
    """The session state table: which methods are known, and whether they may run yet."""

    __slots__ = ("_known", "initialized", "protocol_version")

    def __init__(self, *, resources: bool) -> None:
        self.initialized = False
        self.protocol_version: str | None = None
        known = set(_INLINE_METHODS) | {"tools/call"}
        if resources:
            known |= _RESOURCE_METHODS
        self._known = frozenset(known)

    def route(self, method: str) -> Route:
        if method not in self._known:
            return Route.UNKNOWN
        if method == "ping":
            return Route.INLINE  # ping works at any time (docs/wire.md)
        if method == "initialize":
            return Route.INLINE
        if not self.initialized:
            return Route.NOT_INITIALIZED
        if method in ("tools/call", "resources/read"):
            return Route.CALL  # may block: its own task, answered out of order
        return Route.INLINE

    def initialize(self, params: dict[str, Any]) -> str:
        """Record a successful `initialize`; returns the negotiated version. A second one is refused."""
        if self.initialized:
            raise InvalidRequestError("The session is already initialized.")
        version = negotiate_version(params.get("protocolVersion"))
        self.initialized = True
        self.protocol_version = version
        return version


def not_initialized(method: str) -> SessionNotInitializedError:
    return SessionNotInitializedError(
        f"{echo(method, 64)!r} needs an initialized session; send 'initialize' first."
    )


def unknown_method(method: str) -> MethodNotFoundError:
    return MethodNotFoundError(f"The method {echo(method, 64)!r} does not exist on this server.")


def negotiate_version(requested: object) -> str:
    """Echo a supported version; otherwise answer with the latest one (docs/wire.md)."""
    if isinstance(requested, str) and requested in SUPPORTED_VERSIONS:
        return requested
    return LATEST_VERSION


def initialize_result(
    *, version: str, server_name: str, server_version: str, resources: bool
) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
    if resources:
        capabilities["resources"] = {"listChanged": False, "subscribe": False}
    return {
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": server_name, "version": server_version},
        "instructions": INSTRUCTIONS,
    }


def model_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The advertised JSON Schema of a model: no `$schema` key, every array has `items`."""
    schema = model.model_json_schema(mode="validation")
    schema.pop("$schema", None)
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "array" and "items" not in node:
                node["items"] = {}
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return schema


@dataclass(frozen=True, slots=True)
class ToolDescription:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


def tool_entry(tool: ToolDescription) -> dict[str, Any]:
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": {
            "title": tool.title,
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    }


def tools_list_result(tools: Iterable[ToolDescription], params: dict[str, Any]) -> dict[str, Any]:
    """Every tool on one page. A `cursor` is accepted only as the empty string (the first page)."""
    cursor = params.get("cursor")
    if cursor is not None and cursor != "":
        raise InvalidArgumentsError(
            "tools/list has a single page; this cursor is not one it issued.",
            invalid_params=["cursor"],
            jsonrpc_code=INVALID_PARAMS,
        )
    return {"tools": [tool_entry(tool) for tool in tools]}


@dataclass(frozen=True, slots=True)
class CallParams:
    name: str
    arguments: Any


def parse_call_params(params: dict[str, Any]) -> CallParams:
    """Check the `tools/call` envelope (not the arguments): a malformed one is -32602."""
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentsError(
            'tools/call needs "name", the tool to call, as a non-empty string.',
            invalid_params=["name"],
            jsonrpc_code=INVALID_PARAMS,
        )
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidArgumentsError(
            'tools/call "arguments" must be an object.',
            invalid_params=["arguments"],
            jsonrpc_code=INVALID_PARAMS,
        )
    return CallParams(name=name, arguments=arguments)


def unknown_tool(name: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"There is no tool named {echo(name, 64)!r}; tools/list shows the tools this server has.",
        invalid_params=["name"],
        jsonrpc_code=INVALID_PARAMS,
    )


def structured_json(result: BaseModel) -> bytes:
    """Compact, ASCII-only JSON of a tool's result model (pydantic's serializer, escaped if needed)."""
    data: bytes = type(result).__pydantic_serializer__.to_json(result)
    if not data.isascii():
        text = compact_json(json.loads(data))
        data = text.encode("ascii")
    return data


def call_result(structured: dict[str, Any]) -> dict[str, Any]:
    """Success: `structuredContent` plus one text block holding the identical JSON (docs/wire.md)."""
    return {
        "content": [{"type": "text", "text": compact_json(structured)}],
        "structuredContent": structured,
        "isError": False,
    }


def call_error_result(problem: ProblemError) -> dict[str, Any]:
    """In-band failure: one text block with the problem document, no `structuredContent` (docs/wire.md)."""
    return {"content": [{"type": "text", "text": compact_json(render_problem(problem))}], "isError": True}
