"""What a tool contributes to the server: its spec (name, models, async call) and its resources.

A tool family exposes `open_<family>(settings)` (its `opener.py`), a context manager yielding a
`Toolset` (or None when the family is disabled by configuration); each tool of it declares its own
`ToolSpec`. The registry enters them all with one ExitStack, so pools and other resources a family
opens are closed when the server stops. Tools raise `ProblemError`s; anything
else they raise becomes an internal error with an incident id at the dispatcher.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_suite.lazy import Lazy
from mcp_suite.protocol.mcp import EncodedResult, invalid_arguments, model_json_schema

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_suite.protocol.contents import ContentResult
    from mcp_suite.protocol.prompts import Prompt

__all__ = [
    "ResourceSpec",
    "ResourceTemplateSpec",
    "StartupRefusedError",
    "StartupUnavailableError",
    "ToolSpec",
    "Toolset",
]


class StartupRefusedError(Exception):
    """The server must not start (exit status 78): for example a database role that can write.

    The message is shown on stderr as is; it names each problem and its fix and never holds a secret.
    """


class StartupUnavailableError(Exception):
    """A service the operator requires at start-up is not there (exit status 69, EX_UNAVAILABLE).

    For example the database, with `MCP_SQL_REQUIRE_DATABASE=true`. Shown on stderr as is.
    """


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool. `call` receives a validated arguments-model instance and returns a result model
    (or the same already written as JSON, `EncodedResult`).

    `models` builds the two pydantic classes (arguments, result) on first use: opening a tool must
    not import pydantic, a large share of a cold start (bench_runtime) not needed for `initialize`.
    The session's warm-up builds them after the handshake (or the first request that needs them).

    `untrusted`: its results carry data the tool read (database values, catalogue text, file text
    or names), which the model must read as data: each answer is sent inside the untrusted-data
    frame (`protocol.untrusted`) and its outputSchema declares the frame's member.

    Cancellation: `call` runs in its own cancel scope; it must let `trio.Cancelled` propagate and
    leave no work behind (a thread it started is waited for, a query it started is cancelled).
    """

    name: str
    title: str
    description: str
    models: Lazy[tuple[type[BaseModel], type[BaseModel]]]
    # A `ContentResult` (content blocks, no structuredContent) only from a tool whose
    # `advertised_output` gives None: mcp-suite's tools never return one.
    call: Callable[[Any], Awaitable[BaseModel | EncodedResult | ContentResult]]
    # The OAuth scope a caller's token must hold to see and call it (its family's, e.g. `sql:read`).
    # A tool that takes a `source` argument is also granted, one source at a time, by
    # `<scope>:<source>`. The protocol layer reads it here and names no tool.
    scope: str
    untrusted: bool = False
    # The advertised `inputSchema` when the tool writes its own (a curated tool's, whose declared
    # bounds and allowed values are part of the question it asks); None: the model's, as below.
    advertised: Callable[[], dict[str, Any]] | None = None
    # The advertised `outputSchema` when the tool writes its own (a curated tool's, its columns as
    # PostgreSQL describes its statement), or None from it for a tool without one (its results
    # are content blocks); None here: the result model's.
    advertised_output: Callable[[], dict[str, Any] | None] | None = None

    @property
    def args_model(self) -> type[BaseModel]:
        return self.models.get()[0]

    @property
    def result_model(self) -> type[BaseModel]:
        return self.models.get()[1]

    def input_schema(self) -> dict[str, Any]:
        """The `inputSchema` a model is shown: the arguments model as `AdvertisedJsonSchema`
        writes it (plain optional fields, no length or range keywords). Calls are validated by
        `validate_arguments`, never by this schema. Builds the models if no one has yet."""
        if self.advertised is not None:
            return self.advertised()
        from mcp_suite.tools.models import AdvertisedJsonSchema  # with the models, never before

        return model_json_schema(self.args_model, AdvertisedJsonSchema)

    def validate_arguments(self, arguments: dict[str, Any]) -> BaseModel:
        """`arguments` as an instance of the strict arguments model, or `InvalidArgumentsError`
        (in-band) naming what is wrong. Builds the models if no one has yet (blocking)."""
        try:
            return self.args_model.model_validate(arguments, strict=True)
        except Exception as exc:
            from pydantic import ValidationError  # loaded with the tool's models, never before

            if isinstance(exc, ValidationError):
                errors = exc.errors(include_url=False, include_input=False, include_context=False)
                known = [field.alias or name for name, field in self.args_model.model_fields.items()]
                raise invalid_arguments(errors, known=known) from None
            raise

    def __repr__(self) -> str:
        return f"ToolSpec(name={self.name!r})"


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One MCP resource; `read` returns its text, or its bytes (sent as a base64 `blob`)."""

    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    read: Callable[[], Awaitable[str | bytes]]
    # The scope a caller's token must hold to read it (see `ToolSpec.scope`); `<scope>:<source>`
    # grants it when `source` names the data source it describes.
    scope: str
    source: str | None = None
    # completion/complete of the names it describes (`protocol.completion`): called with the
    # argument ("schema" or "table"), the typed prefix and the schema the client already chose (or
    # None); returns the first matching names (at most COMPLETION_MAX_VALUES) and how many matched.
    complete: Callable[..., Awaitable[tuple[list[str], int]]] | None = None


@dataclass(frozen=True, slots=True)
class ResourceTemplateSpec:
    """A family of resources (`resources/templates/list`): `read(uri)` reads the one `uri` names,
    a URI `uri_template` matches (`protocol.contents.ResourceTemplate`), as text or bytes; its
    `scope` grants every URI of it. mcp-suite serves none (the conformance fixtures do)."""

    uri_template: str
    name: str
    title: str
    description: str
    mime_type: str
    read: Callable[[str], Awaitable[str | bytes]]
    scope: str


@dataclass(frozen=True, slots=True)
class SourceState:
    """What an operator may watch of one data source (a database): whether it answered its last
    audit connection, whether its role passes the audit, and its pool. A source `serving` is both
    `reachable` and `audited`; readiness (`/readyz`) asks that of at least one source (the registry's
    `readiness`), and names each source's `condition`; the rest are metrics."""

    name: str
    reachable: bool
    audited: bool
    pool_in_use: int = 0
    pool_waiting: int = 0
    role: str = ""  # the database role it connects as ("" when the DSN names none)
    # One word for the probe's detail: serving, unreachable, login-refused (the database refuses the
    # server's login), refused (by the role audit), unaudited (no re-audit completes), not-served
    # (its start was refused); "" derives it from the flags.
    status: str = ""

    @property
    def serving(self) -> bool:
        return self.reachable and self.audited

    @property
    def condition(self) -> str:
        if self.status:
            return self.status
        if self.serving:
            return "serving"
        return "refused" if self.reachable else "unreachable"


@dataclass(frozen=True, slots=True)
class Toolset:
    """What one tool family serves. `warm_up` holds blocking work (imports, parsers) that calls
    need but `initialize` does not: the session runs it in a worker thread after the handshake,
    and a call that comes earlier does the same work itself (each step must be safe to repeat
    and thread-safe). `guidance` is its sentence of the `initialize` instructions: what its tools
    are for and in which order to use them, naming only tools of this toolset.

    `background` holds `serve_*` coroutine functions that run as long as the session serves (the
    SQL role's re-audit): the session starts each in its own nursery when it starts serving and
    cancels them when it stops. Each must checkpoint, keep its blocking work in worker threads, and
    never return or raise on its own (an exception ends the session, like any task's).

    `states` says how its data sources are (`SourceState`, each in the order configured): cheap,
    thread-safe, no I/O (a metrics reader and the readiness probe call it).

    `guidance_for`, when its tools take a `source`: its sentence for a caller who may read only the
    sources given (over HTTP a token's scopes may grant some of them): it names no other source,
    and it is empty when there are none."""

    tools: tuple[ToolSpec, ...]
    resources: tuple[ResourceSpec, ...] = field(default=())
    warm_up: tuple[Callable[[], object], ...] = field(default=())
    guidance: str = ""
    background: tuple[Callable[[], Awaitable[object]], ...] = field(default=())
    states: Callable[[], list[SourceState]] | None = None
    guidance_for: Callable[[Collection[str]], str] | None = None
    # Offered only by a toolset that has them (mcp-suite's have none; the conformance fixtures
    # do): resource templates, prompts, and subscriptions to its resources (legacy eras only).
    templates: tuple[ResourceTemplateSpec, ...] = field(default=())
    prompts: tuple[Prompt, ...] = field(default=())
    subscriptions: bool = False
