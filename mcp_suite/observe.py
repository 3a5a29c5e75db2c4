"""The seam between the code that does the work and the traces that watch it (issue 45).

A neutral module (like `lazy` and `offload`): the tools and the runtime mark the stages of a call
here (`stage("sql.policy")`), and note what a span may carry (`note(...)`). Nothing is imported and
nothing is done while no tracer is installed: `stage` returns one shared null context after a
`None` check (bench_stages measures that path). `runtime.telemetry` installs the OpenTelemetry
tracer when MCP_OTEL_ENDPOINT or MCP_PROMETHEUS_PORT is set. Must not import OpenTelemetry, trio or
any tool. What may be noted is the caller's business: never SQL text, argument values or tokens.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final, Protocol

__all__ = ["TraceIds", "Tracer", "install", "note", "stage", "trace_id", "tracing"]

Attribute = str | int | float | bool


@dataclass(frozen=True, slots=True)
class TraceIds:
    """The trace of an answered request, for its audit record: `trace_id`, the server's own (32 hex
    digits), and `client_trace_id`, the trace the client named in its `traceparent` (a link of the
    span, never its trace: a caller chooses it, so it joins nothing on its own), or None."""

    trace_id: str
    client_trace_id: str | None = None


class Tracer(Protocol):
    """What `runtime.telemetry` gives this seam."""

    def stage(self, name: str) -> AbstractContextManager[object]:
        """A child span of the current span, named `name`, for the `with` block."""
        ...

    def note(self, attributes: dict[str, Attribute]) -> None:
        """Attributes on the current span (when one is recording)."""
        ...

    def trace_id(self) -> str | None:
        """The current span's trace id (32 hex digits); None outside a span."""
        ...


_NULL: Final = contextlib.nullcontext()
_tracer: Tracer | None = None


def install(tracer: Tracer | None) -> None:
    """Make `tracer` the process's (None: tracing off again)."""
    global _tracer  # one tracer per process, like the log sink
    _tracer = tracer


def tracing() -> bool:
    """Whether a tracer is installed: compute an attribute only then."""
    return _tracer is not None


def stage(name: str) -> AbstractContextManager[object]:
    """A child span for the `with` block; a shared null context when tracing is off."""
    tracer = _tracer
    if tracer is None:
        return _NULL
    return tracer.stage(name)


def note(compute: Callable[[], dict[str, Attribute]]) -> None:
    """Put `compute()`'s attributes on the current span; `compute` is not called when tracing is off."""
    tracer = _tracer
    if tracer is not None:
        tracer.note(compute())


def trace_id() -> str | None:
    """The current trace id (the audit trail joins its records to the traces by it); None when off."""
    tracer = _tracer
    if tracer is None:
        return None
    return tracer.trace_id()
