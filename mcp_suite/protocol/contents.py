"""Content beyond structured JSON, resource templates and subscriptions. Pure, no I/O.

- `ContentResult`: a tool result made of content blocks (text, image, audio, an embedded
  resource: server/tools, "Tool Result"), with no `structuredContent`; its tool advertises no
  `outputSchema`. The product's tools return structured JSON (docs/wire.md) and never this.
- `blob_entry`/`text_entry`: one `contents` member of a `resources/read` result (binary as base64).
- `ResourceTemplate`: an RFC 6570 template of level 1 (`test://item/{id}/data`), each `{name}`
  matching one non-empty segment without `/`, `?` or `#`; `resources/templates/list` lists them.
- `Subscriptions`: the URIs one legacy session subscribed to, bounded by `MAX_SUBSCRIPTIONS`.
Served only where a toolset offers them; the core advertises each only then. Must not import trio.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcp_suite.problems import InvalidParamsError
from mcp_suite.settings import MAX_SUBSCRIPTIONS

__all__ = [
    "ContentResult",
    "ResourceTemplate",
    "Subscriptions",
    "ToolContent",
    "blob_entry",
    "text_entry",
]

_VARIABLE: Final = re.compile(r"\{([A-Za-z0-9_]+)\}")


@dataclass(frozen=True, slots=True)
class ContentResult:
    """A tool's result as content blocks, each a `ContentBlock` object of the schema; `is_error`:
    a tool execution error told in-band (server/tools, "Error Handling"), as the text says."""

    content: tuple[dict[str, Any], ...]
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ToolContent:
    """How a call ended (reported by the runtime, like `core.ToolSucceeded`): the tool returned
    a `ContentResult`."""

    result: ContentResult


def text_entry(uri: str, mime_type: str, text: str) -> dict[str, Any]:
    return {"uri": uri, "mimeType": mime_type, "text": text}


def blob_entry(uri: str, mime_type: str, blob: bytes) -> dict[str, Any]:
    return {"uri": uri, "mimeType": mime_type, "blob": base64.b64encode(blob).decode("ascii")}


class ResourceTemplate:
    """What `resources/templates/list` shows of one template, and which URIs it serves."""

    __slots__ = ("_pattern", "description", "mime_type", "name", "title", "uri_template")

    def __init__(self, *, uri_template: str, name: str, title: str, description: str, mime_type: str) -> None:
        self.uri_template = uri_template
        self.name = name
        self.title = title
        self.description = description
        self.mime_type = mime_type
        parts = _VARIABLE.split(uri_template)
        # Even parts are literal text, odd ones variable names: each variable is one segment.
        regex = "".join(re.escape(part) if i % 2 == 0 else r"[^/?#{}]+" for i, part in enumerate(parts))
        self._pattern = re.compile(regex)

    def matches(self, uri: str) -> bool:
        return self._pattern.fullmatch(uri) is not None

    def entry(self) -> dict[str, Any]:
        return {
            "uriTemplate": self.uri_template,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "mimeType": self.mime_type,
        }


def template_for(templates: Sequence[ResourceTemplate], uri: str) -> ResourceTemplate | None:
    """The first template that serves `uri` (in the order served), else None."""
    return next((template for template in templates if template.matches(uri)), None)


class Subscriptions:
    """The URIs one legacy session subscribed to (server/resources, "Subscriptions"). A URI is
    subscribed once however often it is asked; beyond `MAX_SUBSCRIPTIONS` a new one is refused."""

    __slots__ = ("_uris",)

    def __init__(self) -> None:
        self._uris: set[str] = set()

    def subscribe(self, uri: str) -> None:
        if uri not in self._uris and len(self._uris) >= MAX_SUBSCRIPTIONS:
            raise InvalidParamsError(
                f"This session already holds {MAX_SUBSCRIPTIONS} resource subscriptions; "
                "unsubscribe from one first.",
                invalid_params=["uri"],
                metadata={"max_subscriptions": MAX_SUBSCRIPTIONS},
            )
        self._uris.add(uri)

    def unsubscribe(self, uri: str) -> None:
        """Idempotent: unsubscribing from a URI not subscribed to is not an error."""
        self._uris.discard(uri)


def uri_param(params: dict[str, Any], method: str) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParamsError(f'{method} needs "uri", a resource\'s URI.', invalid_params=["uri"])
    return uri
