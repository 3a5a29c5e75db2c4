"""MCP messages of both protocol eras: versions, results and their shapes. Pure data, no I/O.

The session core (`protocol.core`) decides which of these to send; the builders here know the shapes:
version negotiation of `initialize`, `server/discover`, the one page of `tools/list`, tool results,
and the members the modern era (2026-07-28) adds to every result (`resultType`, `_meta`, caching).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcp_suite.problems import (
    InvalidArgumentsError,
    InvalidParamsError,
    InvalidRequestMetaError,
    MethodNotFoundError,
    ProblemError,
    SessionNotInitializedError,
    echo,
    render_problem,
)
from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.settings import NAME_ECHO_CHARS

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.json_schema import GenerateJsonSchema

__all__ = [
    "ALL_VERSIONS",
    "CLIENT_CAPABILITIES_KEY",
    "LATEST_VERSION",
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "PROTOCOL_VERSION_KEY",
    "EncodedResult",
    "Offers",
    "ResourceDescription",
    "ToolDescription",
    "call_error_result",
    "discover_result",
    "initialize_result",
    "invalid_arguments",
    "model_json_schema",
    "negotiate_version",
    "parse_call_params",
    "structured_json",
    "tool_entry",
]

# The handshake (legacy) era: versions an `initialize` can negotiate, newest first.
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION: Final = LEGACY_VERSIONS[0]
# The modern era: no handshake, the version rides in every request's `_meta`.
MODERN_VERSION: Final = "2026-07-28"
ALL_VERSIONS: Final = (MODERN_VERSION, *LEGACY_VERSIONS)

# MCP 2026-07-28, basic/index "General fields: _meta", per-request and per-response protocol fields.
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

# Caching hints of the modern era (server/utilities/caching). The tool and resource lists are fixed
# for the life of the process and the same for every caller; the schema resource is read fresh from
# the database on each read and shows what this server's role may see.
LIST_TTL_MS: Final = 3_600_000
READ_TTL_MS: Final = 0


def not_initialized(method: str) -> SessionNotInitializedError:
    return SessionNotInitializedError(
        f"{echo(method, NAME_ECHO_CHARS)!r} needs an initialized session; send 'initialize' first."
    )


def invalid_request_meta(what: str) -> InvalidRequestMetaError:
    """A 2026-07-28 request whose `params._meta` `what` (e.g. "lacks ..."): malformed, -32602."""
    return InvalidRequestMetaError(
        f"A {MODERN_VERSION} request {what}: every request carries {PROTOCOL_VERSION_KEY!r} "
        f"and {CLIENT_CAPABILITIES_KEY!r} in params._meta.",
        invalid_params=["_meta"],
    )


def unsupported_version_data(requested: str) -> dict[str, Any]:
    """The members of a -32022 error's `data` beside its problem document (basic/versioning,
    "Protocol Version Negotiation"): the versions served and the one asked for."""
    return {"supported": list(ALL_VERSIONS), "requested": requested}


def removed_method(method: str) -> MethodNotFoundError:
    """A method the 2026-07-28 revision removed (`initialize`, `ping`, ...), asked for in that era."""
    return MethodNotFoundError(
        f"The method {echo(method, NAME_ECHO_CHARS)!r} does not exist in protocol version {MODERN_VERSION}."
    )


def unknown_method(method: str) -> MethodNotFoundError:
    return MethodNotFoundError(f"The method {echo(method, NAME_ECHO_CHARS)!r} does not exist on this server.")


def negotiate_version(requested: object) -> str:
    """Echo a handshake version; otherwise answer with the latest one. 2026-07-28 has no handshake
    (versioning, "Backward Compatibility"), so an `initialize` asking for it also gets 2025-11-25."""
    if isinstance(requested, str) and requested in LEGACY_VERSIONS:
        return requested
    return LATEST_VERSION


@dataclass(frozen=True, slots=True)
class Offers:
    """What a core serves beyond tools, each advertised only when served: resources (fixed ones or
    templates), prompts, resource subscriptions (mcp-suite serves resources only), completions
    (completion/complete), logging (`logging/setLevel`, the handshake eras)."""

    resources: bool = False
    prompts: bool = False
    subscribe: bool = False
    completions: bool = False
    logging: bool = False


def server_capabilities(offers: Offers) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
    if offers.resources:
        capabilities["resources"] = {"listChanged": False, "subscribe": offers.subscribe}
    if offers.prompts:
        capabilities["prompts"] = {"listChanged": False}
    if offers.completions:
        capabilities["completions"] = {}
    if offers.logging:
        capabilities["logging"] = {}
    return capabilities


def initialize_result(
    *, version: str, server_name: str, server_version: str, offers: Offers, instructions: str
) -> dict[str, Any]:
    """`instructions` names only the tools this server serves (the registry composes it)."""
    return {
        "protocolVersion": version,
        "capabilities": server_capabilities(offers),
        "serverInfo": {"name": server_name, "version": server_version},
        "instructions": instructions,
    }


def modern_fields(server_name: str, server_version: str) -> dict[str, Any]:
    """What every modern result carries: `resultType` and the server's identity in `_meta`."""
    return {
        "resultType": "complete",
        "_meta": {SERVER_INFO_KEY: {"name": server_name, "version": server_version}},
    }


def cache_fields(*, ttl_ms: int, scope: str) -> dict[str, Any]:
    return {"ttlMs": ttl_ms, "cacheScope": scope}


def discover_result(*, offers: Offers, instructions: str) -> dict[str, Any]:
    """`server/discover` (server/discover, "DiscoverResult"): every version this process serves.
    Never `subscribe`: 2026-07-28 removed resources/subscribe, and a server advertising it must
    serve subscriptions/listen, which this one does not; never `logging`: 2026-07-28 deprecates it."""
    modern = Offers(resources=offers.resources, prompts=offers.prompts, completions=offers.completions)
    return {
        "supportedVersions": list(ALL_VERSIONS),
        "capabilities": server_capabilities(modern),
        "instructions": instructions,
        **cache_fields(ttl_ms=LIST_TTL_MS, scope="public"),
    }


def model_json_schema(
    model: type[BaseModel], generator: type[GenerateJsonSchema] | None = None
) -> dict[str, Any]:
    """The advertised JSON Schema of a model (written by `generator`, else the model's own):
    no `$schema` key, every array has `items`."""
    if generator is None:
        schema = model.model_json_schema(mode="validation")
    else:
        schema = model.model_json_schema(mode="validation", schema_generator=generator)
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
    # None: the tool's results are content blocks only (`contents.ContentResult`), no
    # structuredContent, so it advertises no outputSchema (mcp-suite's own tools always do).
    output_schema: dict[str, Any] | None


def tool_entry(tool: ToolDescription) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    if tool.output_schema is not None:
        entry["outputSchema"] = tool.output_schema
    entry["annotations"] = {
        "title": tool.title,
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    return entry


class ResourceDescription:
    """What `resources/list` shows of one resource. A plain slotted class: creating a dataclass adds
    to the cold start (bench_runtime), and this module is imported before `initialize` is answered."""

    __slots__ = ("description", "mime_type", "name", "title", "uri")

    def __init__(self, *, uri: str, name: str, title: str, description: str, mime_type: str) -> None:
        self.uri = uri
        self.name = name
        self.title = title
        self.description = description
        self.mime_type = mime_type


def resource_entry(resource: ResourceDescription) -> dict[str, Any]:
    return {
        "uri": resource.uri,
        "name": resource.name,
        "title": resource.title,
        "description": resource.description,
        "mimeType": resource.mime_type,
    }


def tools_list_result(tools: Iterable[ToolDescription], params: dict[str, Any]) -> dict[str, Any]:
    """Every tool on one page, always in the same order (the registry's, fixed for the process, so
    clients can cache the list). A `cursor` is accepted only as `""` (the first page)."""
    cursor = params.get("cursor")
    if cursor is not None and cursor != "":
        raise InvalidParamsError(
            "tools/list has a single page; this cursor is not one it issued.",
            invalid_params=["cursor"],
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
        raise InvalidParamsError(
            'tools/call needs "name", the tool to call, as a non-empty string.',
            invalid_params=["name"],
        )
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParamsError(
            'tools/call "arguments" must be an object.',
            invalid_params=["arguments"],
        )
    return CallParams(name=name, arguments=arguments)


def unknown_tool(name: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"There is no tool named {echo(name, NAME_ECHO_CHARS)!r}; "
        "tools/list shows the tools this server has.",
        invalid_params=["name"],
    )


def nearest_argument(name: str, known: Sequence[str]) -> str | None:
    """The real argument an unknown `name` most likely meant: a close spelling (`max_row`), or the
    one real name it is a word of (`path` for `relative_path`, the name a result uses); else None."""
    import difflib  # only on this error path

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return close[0]
    holding = [real for real in known if name.lower() in real.split("_")]
    return holding[0] if len(holding) == 1 else None


def invalid_arguments(
    errors: Iterable[Mapping[str, Any]], *, known: Sequence[str] = ()
) -> InvalidArgumentsError:
    """The in-band validation error for a tool's arguments, from the errors of the arguments model
    (pydantic's `ValidationError.errors()`): each argument's name, cut, and what is wrong with it;
    an unknown argument names the nearest of the `known` ones, when one is near."""
    names: list[str] = []
    parts: list[str] = []
    for err in errors:
        loc = err.get("loc") or ()
        name = ".".join(str(part) for part in loc) or "arguments"
        root = str(loc[0]) if loc else "arguments"
        if root not in names:
            names.append(root)
        message = err.get("msg", "is not valid")
        if root == "source" and err.get("type") in ("literal_error", "enum"):
            # pydantic lists every source served; the caller's inputSchema lists those it may read
            # (over HTTP, the sources its token grants): the error names none.
            message = "is not one of the sources the tool's inputSchema lists"
        elif err.get("type") == "extra_forbidden":
            message = "is not an argument of this tool"
            meant = nearest_argument(root, known) if len(loc) == 1 else None
            if meant is not None:
                message += f" (did you mean {meant}?)"
        parts.append(f"{echo(name, NAME_ECHO_CHARS)}: {message}")
    detail = "The arguments do not match the tool's inputSchema: " + "; ".join(parts[:5])
    return InvalidArgumentsError(echo(detail, 512), invalid_params=names)


@dataclass(frozen=True, slots=True)
class EncodedResult:
    """A tool's result already written as compact, ASCII-only JSON of its result model (what
    `structured_json` would give), for a tool whose result is built from JSON it had to write anyway
    (`read_only_sql` writes its rows once, for the byte cap). Its tests prove the bytes validate
    against the tool's `outputSchema`."""

    json: bytes


def structured_json(result: BaseModel | EncodedResult) -> bytes:
    """Compact, ASCII-only JSON of a tool's result model (pydantic's serializer, escaped if needed)."""
    if isinstance(result, EncodedResult):
        return result.json
    data: bytes = type(result).__pydantic_serializer__.to_json(result)
    if not data.isascii():
        text = compact_json(json.loads(data))
        data = text.encode("ascii")
    return data


def call_error_result(problem: ProblemError) -> dict[str, Any]:
    """In-band failure: one text block with the problem document, no `structuredContent` (docs/wire.md)."""
    return {"content": [{"type": "text", "text": compact_json(render_problem(problem))}], "isError": True}
