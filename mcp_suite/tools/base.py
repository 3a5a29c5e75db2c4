"""What a tool contributes to the server: its spec (name, models, async call) and its resources.

A tool package exposes `open_<tool>(settings)`, a context manager yielding a `Toolset` (or None when
the tool is disabled by configuration). The registry enters them all with one ExitStack, so pools and
other resources a tool opens are closed when the server stops. Tools raise `ProblemError`s; anything
else they raise becomes an internal error with an incident id at the dispatcher.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "BuildOnce",
    "ModelLoader",
    "ResourceSpec",
    "StartupRefusedError",
    "StartupUnavailableError",
    "ToolSpec",
    "Toolset",
]

T = TypeVar("T")

# Builds a tool's (arguments model, result model) on first use.
ModelLoader = Callable[[], "tuple[type[BaseModel], type[BaseModel]]"]


class StartupRefusedError(Exception):
    """The server must not start (exit status 78): for example a database role that can write.

    The message is shown on stderr as is; it names each problem and its fix and never holds a secret.
    """


class StartupUnavailableError(Exception):
    """A service the operator requires at start-up is not there (exit status 69, EX_UNAVAILABLE).

    For example the database, with `MCP_SQL_REQUIRE_DATABASE=true`. Shown on stderr as is.
    """


class BuildOnce(Generic[T]):
    """A value built by `build()` on first use, once, from any thread (later uses take no lock).

    What a tool needs for calls but not for `initialize` (its models, the SQL parsers) is built
    this way: by the session's warm-up after the handshake, or by whichever call comes first.
    `build` must not return None (None means "not built yet").
    """

    __slots__ = ("_build", "_lock", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: T | None = None

    @classmethod
    def built(cls, value: T) -> BuildOnce[T]:
        once = cls(lambda: value)
        once._value = value
        return once

    @property
    def is_built(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        """The value; blocking (on the build, or on another thread's) the first time."""
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
                value = self._value
        return value


class ToolSpec:
    """One MCP tool. `call` receives a validated `args_model` instance and returns `result_model`.

    The models are pydantic classes, given either directly (`args_model=`, `result_model=`) or
    through `models=`, a loader that builds both on first use: opening a tool must not import
    pydantic, which is a third of a cold start and not needed to answer `initialize`. Resolution is
    thread-safe (the session warms the models up in a worker thread after the handshake).

    Cancellation: `call` runs in its own cancel scope; it must let `trio.Cancelled` propagate and
    leave no work behind (a thread it started is waited for, a query it started is cancelled).
    """

    __slots__ = ("_models", "call", "description", "name", "title")

    def __init__(
        self,
        *,
        name: str,
        title: str,
        description: str,
        call: Callable[[Any], Awaitable[BaseModel]],
        models: ModelLoader | None = None,
        args_model: type[BaseModel] | None = None,
        result_model: type[BaseModel] | None = None,
    ) -> None:
        self.name = name
        self.title = title
        self.description = description
        self.call = call
        if models is not None and args_model is None and result_model is None:
            self._models = BuildOnce(models)
        elif models is None and args_model is not None and result_model is not None:
            self._models = BuildOnce.built((args_model, result_model))
        else:
            raise TypeError("give either models= or both args_model= and result_model=")

    def load_models(self) -> tuple[type[BaseModel], type[BaseModel]]:
        """(arguments model, result model), built once; blocking the first time."""
        return self._models.get()

    @property
    def models_loaded(self) -> bool:
        return self._models.is_built

    @property
    def args_model(self) -> type[BaseModel]:
        return self.load_models()[0]

    @property
    def result_model(self) -> type[BaseModel]:
        return self.load_models()[1]

    def __repr__(self) -> str:
        return f"ToolSpec(name={self.name!r})"


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
    """What one tool package serves. `warm_up` holds blocking work (imports, parsers) that calls
    need but `initialize` does not: the session runs it in a worker thread after the handshake,
    and a call that comes earlier does the same work itself (each step must be safe to repeat
    and thread-safe). `guidance` is its sentence of the `initialize` instructions: what its tools
    are for and in which order to use them, naming only tools of this toolset."""

    tools: tuple[ToolSpec, ...]
    resources: tuple[ResourceSpec, ...] = field(default=())
    warm_up: tuple[Callable[[], object], ...] = field(default=())
    guidance: str = ""
