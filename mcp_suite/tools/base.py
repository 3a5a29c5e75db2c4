"""What a tool contributes to the server: its spec (name, models, async call) and its resources.

A tool package exposes `open_<tool>(settings)`, a context manager yielding a `Toolset` (or None when
the tool is disabled by configuration). The registry enters them all with one ExitStack, so pools and
other resources a tool opens are closed when the server stops. Tools raise `ProblemError`s; anything
else they raise becomes an internal error with an incident id at the dispatcher.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ResourceSpec", "StartupRefusedError", "StrictModel", "ToolSpec", "Toolset"]


class StartupRefusedError(Exception):
    """The server must not start (exit status 78): for example a database role that can write.

    The message is shown on stderr as is; it names each problem and its fix and never holds a secret.
    """


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool. `call` receives a validated `args_model` instance and returns `result_model`.

    Cancellation: `call` runs in its own cancel scope; it must let `trio.Cancelled` propagate and
    leave no work behind (a thread it started is waited for, a query it started is cancelled).
    """

    name: str
    title: str
    description: str
    args_model: type[BaseModel]
    result_model: type[BaseModel]
    call: Callable[[Any], Awaitable[BaseModel]]


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One MCP resource; `read` returns its text."""

    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    read: Callable[[], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Toolset:
    tools: tuple[ToolSpec, ...]
    resources: tuple[ResourceSpec, ...] = field(default=())


class StrictModel(BaseModel):
    """Base of every `<Tool>Args` and `<Tool>Result` model (SPEC §5.4).

    Strict types (no "5" for 5, no bool for int), unknown keys refused, no NaN/Infinity. The same
    models produce the advertised `inputSchema` / `outputSchema`.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)
