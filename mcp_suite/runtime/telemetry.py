"""Traces and metrics with the OpenTelemetry SDK (the `otel` extra), by the MCP semantic conventions.

Imported only when MCP_OTEL_ENDPOINT or MCP_PROMETHEUS_PORT is set (`cli` defers the import); off,
the recorder holds `runtime.recorder.NO_TELEMETRY` instead. `Telemetry` is the recorder's
`Watcher`: the span of each call opens before it runs (`call`) and is current while it runs, so the
stages the tools mark (`mcp_suite.observe`) become its children, in worker threads too; each
answered request ends its span and counts its metrics (`answered`).

Spans: one SERVER span per request, `{mcp.method.name} {target}`, with the method, the tool, the
protocol version, the session (hashed), the JSON-RPC id and `error.type` (the JSON-RPC error code,
or `tool_error` for an `isError` result); each starts a trace of the server's own, linked to the
request's `_meta.traceparent`, else the HTTP `traceparent` header (a client's choice, kept apart).
Never argument values, SQL text, PostgreSQL's messages, tokens or claims beyond the subject.
Export: OTLP/HTTP through a BatchSpanProcessor (bounded queue; a full queue drops the span and
counts it in `otel.sdk.processor.span.processed{error.type=queue_full}`), metrics pushed every
MCP_OTEL_EXPORT_INTERVAL_S and served as Prometheus text on their own loopback listener.
Limits: every label comes from a closed set (a method the session core does not serve,
`protocol.core.SERVED_METHODS`, is `_OTHER`; a tool name is the registry's; a problem type or rule
is a problem class's slug, a refusal's rule the problem's own: `ProblemError.refused_by`), so a caller
cannot grow the metrics' memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcp_suite import SERVER_NAME, __version__, observe
from mcp_suite.problems import Channel
from mcp_suite.protocol.core import SERVED_METHODS, CallKind, StartCall
from mcp_suite.runtime.log_sink import current_sink, logger
from mcp_suite.runtime.recorder import Unwatched
from mcp_suite.settings import NAME_ECHO_CHARS, PROMETHEUS_MAX_CONNECTIONS, PROMETHEUS_TIMEOUT_S

if TYPE_CHECKING:
    from contextvars import Token
    from types import TracebackType

    from prometheus_client.registry import CollectorRegistry

    from mcp_suite.protocol.core import Answer
    from mcp_suite.runtime.recorder import Asker, Transport
    from mcp_suite.settings import Settings
    from mcp_suite.tools.registry import Registry

__all__ = ["CallSpan", "Telemetry", "open_telemetry"]

# The MCP conventions' bucket boundaries for `mcp.server.operation.duration` (seconds).
_DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
_OTHER: Final = "_OTHER"
_PROPAGATOR: Final = TraceContextTextMapPropagator()
_SDK_SELF_METRICS: Final = "OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED"

CallSpan = trace.Span


class _Stages:
    """`observe.Tracer`: the tools' stages as child spans of the current span."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[object]:
        # The SDK would describe a failed span's status by `str(exc)`: PostgreSQL's message, which
        # quotes stored values. A stage that raises carries the exception's type alone.
        with self._tracer.start_as_current_span(
            name, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield span
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR))
                raise

    def note(self, attributes: dict[str, observe.Attribute]) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(attributes)

    def trace_id(self) -> str | None:
        span_context = trace.get_current_span().get_span_context()
        return format(span_context.trace_id, "032x") if span_context.is_valid else None


class Telemetry:
    """The process's tracer and meters (one per process; `close` flushes and stops them)."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        *,
        span_exporter: SpanExporter | None = None,
        metric_readers: Sequence[MetricReader] = (),
    ) -> None:
        resource = Resource.create(
            {"service.name": settings.otel_service_name, "service.version": __version__}
        )
        readers = list(metric_readers)
        self._prometheus_server: Any = None
        self.prometheus_port: int | None = None
        endpoint = settings.otel_endpoint
        timeout_s = settings.otel_export_timeout_s
        if endpoint is not None:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            readers.append(
                PeriodicExportingMetricReader(
                    OTLPMetricExporter(endpoint=_signal_url(endpoint, "metrics"), timeout=timeout_s),
                    export_interval_millis=settings.otel_export_interval_s * 1000,
                    export_timeout_millis=timeout_s * 1000,
                )
            )
        if settings.prometheus_port is not None:
            readers.append(self._serve_prometheus(settings.prometheus_host, settings.prometheus_port))
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        self.tracer_provider = TracerProvider(resource=resource)
        if span_exporter is None and endpoint is not None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            span_exporter = OTLPSpanExporter(endpoint=_signal_url(endpoint, "traces"), timeout=timeout_s)
        if span_exporter is not None:
            # The SDK counts what its batch processor exports and drops only with its self-metrics
            # switched on, which only this variable does (read when the processor is made, before
            # the pool's threads start); an operator's own setting wins.
            os.environ.setdefault(_SDK_SELF_METRICS, "true")
            self.tracer_provider.add_span_processor(
                BatchSpanProcessor(
                    span_exporter,
                    max_queue_size=settings.otel_queue_size,
                    max_export_batch_size=min(512, settings.otel_queue_size),
                    export_timeout_millis=timeout_s * 1000,
                    # the processor's own metrics: spans exported, and dropped (`queue_full`)
                    meter_provider=self.meter_provider,
                )
            )
        self.tracer = self.tracer_provider.get_tracer(SERVER_NAME, __version__)
        self._registry = registry
        self._timeout_s = timeout_s
        self._tools = frozenset(registry.tools)
        meter = self.meter_provider.get_meter(SERVER_NAME, __version__)
        self._duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="How long the server took to answer an MCP request",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._calls = meter.create_counter(
            "mcp_suite.calls", unit="{call}", description="Tool calls by tool and outcome"
        )
        self._refusals = meter.create_counter(
            "mcp_suite.refusals", unit="{refusal}", description="Refused requests by the rule that refused"
        )
        self._problems = meter.create_counter(
            "mcp_suite.problems", unit="{problem}", description="Problem answers by problem type"
        )
        meter.create_observable_gauge(
            "mcp_suite.sql.pool.in_use",
            [self._observe_sources("pool_in_use")],
            unit="{connection}",
            description="Pooled connections lent to a call, per source",
        )
        meter.create_observable_gauge(
            "mcp_suite.sql.pool.waiting",
            [self._observe_sources("pool_waiting")],
            unit="{call}",
            description="Calls waiting for a pooled connection, per source",
        )
        meter.create_observable_gauge(
            "mcp_suite.sql.audit.passing",
            [self._observe_sources("audited", with_role=True)],
            description="1 while the source's role passes the role audit, else 0",
        )
        meter.create_observable_gauge(
            "mcp_suite.sql.reachable",
            [self._observe_sources("reachable")],
            description="1 while the source answered its last audit connection, else 0",
        )
        # The log sink (docs/operations/watching.md, "The log sink"): what it dropped, what waits,
        # and the requests refused (HTTP) or held back (stdio) because audit records filled it.
        meter.create_observable_counter(
            "mcp_suite.log.lines_dropped",
            [_sink_figure("lines_dropped")],
            unit="{line}",
            description="Log lines dropped because stderr was read too slowly (never an audit record)",
        )
        meter.create_observable_counter(
            "mcp_suite.log.requests_held_back",
            [_sink_figure("requests_refused")],
            unit="{request}",
            description="Requests refused (HTTP) or held back (stdio) while audit records filled the log",
        )
        meter.create_observable_gauge(
            "mcp_suite.log.bytes_waiting",
            [_sink_figure("bytes_waiting")],
            unit="By",
            description="Bytes of stderr lines not yet written",
        )
        meter.create_observable_gauge(
            "mcp_suite.sql.serving",
            [self._observe_sources("serving")],
            description="1 while the source serves (reachable and its role passes the audit), else 0",
        )
        self._meter = meter
        self._stages = _Stages(self.tracer)
        observe.install(self._stages)

    # -- the listeners -----------------------------------------------------------------------------

    def _serve_prometheus(self, host: str, port: int) -> MetricReader:
        """A PrometheusMetricReader on its own registry, served at http://host:port/metrics."""
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client.registry import CollectorRegistry

        registry: CollectorRegistry = CollectorRegistry(auto_describe=True)
        reader = PrometheusMetricReader(registry=registry)
        server = _metrics_server(host, port, registry)
        threading.Thread(target=server.serve_forever, name="mcp-suite-metrics", daemon=True).start()
        self._prometheus_server = server
        self.prometheus_port = int(server.server_address[1])
        logger.info("serving metrics as Prometheus text at http://%s:%d/metrics", host, self.prometheus_port)
        return reader

    def watch_http(self, sessions: Callable[[], int], callers: Callable[[], int]) -> None:
        """The HTTP transport's gauges: legacy sessions open, callers with a request in progress."""

        def gauge(read: Callable[[], int]) -> Callable[[CallbackOptions], Iterable[Observation]]:
            return lambda _options: [Observation(read())]

        self._meter.create_observable_gauge(
            "mcp_suite.http.sessions", [gauge(sessions)], unit="{session}", description="Legacy sessions open"
        )
        self._meter.create_observable_gauge(
            "mcp_suite.http.callers",
            [gauge(callers)],
            unit="{caller}",
            description="Callers (token subjects) with a request in progress",
        )

    def _observe_sources(
        self, field: str, *, with_role: bool = False
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe_all(_options: CallbackOptions) -> Iterable[Observation]:
            return [
                Observation(
                    int(getattr(state, field)),
                    {"source": state.name, "role": state.role} if with_role else {"source": state.name},
                )
                for state in self._registry.source_states()
            ]

        return observe_all

    # -- requests (`runtime.recorder.Watcher`) --------------------------------------------------------

    def call(self, start: StartCall, started: float, transport: Transport, asker: Asker) -> _CallWatch:
        """The SERVER span of a call, started at `started` (perf_counter), its parent the call's
        `_meta.traceparent`, else the asker's; current inside `with`, ended by `answered`."""
        method = start.kind.value
        target = start.name if start.kind is CallKind.TOOL else None
        span = self._start_span(
            method,
            target,
            started,
            request_id=start.request_id,
            parent=start.trace_parent or asker.traceparent,
            transport=transport,
            protocol_version=start.protocol_version,
            session_id=asker.session_id,
            subject=asker.subject,
            resource_uri=start.name if start.kind is CallKind.RESOURCE else None,
        )
        return _CallWatch(self, span, started, transport, asker)

    def request(self, started: float, transport: Transport, asker: Asker) -> _AnswerWatch:
        """A request answered without a call: its span is made when it is answered."""
        return _AnswerWatch(self, started, transport, asker)

    def answer_span(self, answer: Answer, started: float, transport: Transport, asker: Asker) -> CallSpan:
        """The span of a request answered without a call, made when it is answered."""
        return self._start_span(
            self._method(answer),
            self._tool(answer),
            started,
            request_id=answer.request_id,
            parent=asker.traceparent,
            transport=transport,
            protocol_version=asker.protocol_version,
            session_id=asker.session_id,
            subject=asker.subject,
        )

    def answered(
        self, answer: Answer, started: float, transport: Transport, asker: Asker
    ) -> observe.TraceIds | None:
        """Record a request answered without a call: its span, made and ended now, and its metrics."""
        return self.ended(
            answer, started, transport, asker, self.answer_span(answer, started, transport, asker)
        )

    def ended(
        self, answer: Answer, started: float, transport: Transport, asker: Asker, span: CallSpan
    ) -> observe.TraceIds | None:
        """Record an answered request: its span (ended now) and its metrics. Returns its trace ids
        for the audit record (the server's, and the client's)."""
        method = self._method(answer)
        tool = self._tool(answer)
        protocol_version = asker.protocol_version
        error_type = self._error_type(answer)
        problem = answer.problem
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            if problem is not None:
                span.set_attribute("mcp_suite.problem.type", problem.slug)
            span.set_status(Status(StatusCode.ERROR))
        if answer.outcome == "cancelled":
            span.set_attribute("mcp_suite.outcome", "cancelled")
        span.end()
        attributes: dict[str, str] = {"mcp.method.name": method, "network.transport": transport}
        if tool is not None:
            attributes["gen_ai.tool.name"] = tool
        if error_type is not None:
            attributes["error.type"] = error_type
        if protocol_version is not None:
            attributes["mcp.protocol.version"] = protocol_version
        self._duration.record(time.perf_counter() - started, attributes)
        if tool is not None:
            self._calls.add(1, {"tool": tool, "outcome": answer.outcome})
        if problem is not None:
            self._problems.add(1, {"type": problem.slug})
            rule = problem.refused_by
            if rule is not None:
                self._refusals.add(1, {"rule": rule})
        span_context = span.get_span_context()
        if not span_context.is_valid:
            return None
        links = getattr(span, "links", ())  # the SDK's span; the client's context, when it sent one
        client = format(links[0].context.trace_id, "032x") if links else None
        return observe.TraceIds(format(span_context.trace_id, "032x"), client)

    def _start_span(
        self,
        method: str,
        target: str | None,
        started: float,
        *,
        request_id: object,
        parent: str | None,
        transport: str,
        protocol_version: str | None,
        session_id: str | None,
        subject: str | None,
        resource_uri: str | None = None,
    ) -> CallSpan:
        attributes: dict[str, str] = {
            "mcp.method.name": method,
            "jsonrpc.protocol.version": "2.0",
            "network.transport": transport,
        }
        if target is not None:
            attributes["gen_ai.tool.name"] = target
            attributes["gen_ai.operation.name"] = "execute_tool"
        if resource_uri is not None:
            attributes["mcp.resource.uri"] = resource_uri
        if request_id is not None:
            attributes["jsonrpc.request.id"] = str(request_id)[:NAME_ECHO_CHARS]
        if protocol_version is not None:
            attributes["mcp.protocol.version"] = protocol_version
        if session_id is not None:
            # The id lets its holder use the session: the span carries a digest that joins the
            # session's spans, not the id.
            attributes["mcp.session.id"] = hashlib.sha256(session_id.encode()).hexdigest()[:32]
        if subject is not None:
            attributes["enduser.id"] = subject[:NAME_ECHO_CHARS]
        # The client's `traceparent` is a link, not the parent: its trace id is the caller's choice,
        # so the span (and the audit record) has a trace id of the server's own, and the client's
        # stays apart, marked as the client's (`client_trace_id`). OpenTelemetry's advice for a
        # request from outside the trust boundary.
        links: list[trace.Link] = []
        if parent:
            sent = trace.get_current_span(_PROPAGATOR.extract({"traceparent": parent})).get_span_context()
            if sent.is_valid:
                links.append(trace.Link(sent, {"mcp_suite.link": "client_traceparent"}))
        start_ns = time.time_ns() - int((time.perf_counter() - started) * 1e9)
        name = f"{method} {target}" if target is not None else method
        return self.tracer.start_span(
            name,
            context=otel_context.Context(),
            kind=SpanKind.SERVER,
            attributes=attributes,
            links=links,
            start_time=start_ns,
        )

    @staticmethod
    def _method(answer: Answer) -> str:
        """A method the session core serves by its name, any other as `_OTHER` (a closed set)."""
        return answer.method if answer.method in SERVED_METHODS else _OTHER

    def _tool(self, answer: Answer) -> str | None:
        """A tool the registry serves by its name, else None (a closed set)."""
        return answer.tool if answer.tool in self._tools else None

    @staticmethod
    def _error_type(answer: Answer) -> str | None:
        """The conventions' `error.type`: `tool_error` for an `isError` result (a tool's problem of
        the result channel, as the core answers it), else the JSON-RPC error's code; None for a
        success or a cancelled call."""
        problem = answer.problem
        if problem is None or answer.outcome != "error":
            return None
        if answer.method == CallKind.TOOL.value and problem.channel is Channel.RESULT:
            return "tool_error"
        return str(problem.jsonrpc_code)

    # -- shutdown ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush what is queued and stop.

        Limits: each provider's flush waits at most MCP_OTEL_EXPORT_TIMEOUT_S (+1 s) for a collector
        that does not answer; then the process goes on without it (the SDK's own shutdown would
        wait 30 s per processor)."""
        observe.install(None)
        for provider in (self.tracer_provider, self.meter_provider):
            stopper = threading.Thread(target=provider.shutdown, name="mcp-suite-otel-stop", daemon=True)
            stopper.start()
            stopper.join(self._timeout_s + 1)
            if stopper.is_alive():
                logger.warning("the OpenTelemetry exporter did not finish in time; what it held is lost")
        if self._prometheus_server is not None:
            self._prometheus_server.shutdown()
            self._prometheus_server.server_close()


class _CallWatch:
    """A call's span: current inside `with` (this task, and the threads it starts), so the tools'
    stages become its children; ended by `answered`."""

    __slots__ = ("_asker", "_span", "_started", "_telemetry", "_token", "_transport")

    def __init__(
        self, telemetry: Telemetry, span: CallSpan, started: float, transport: Transport, asker: Asker
    ) -> None:
        self._telemetry = telemetry
        self._span = span
        self._started = started
        self._transport: Transport = transport
        self._asker = asker
        self._token: Token[otel_context.Context] | None = None

    def __enter__(self) -> None:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        token, self._token = self._token, None
        if token is not None:
            otel_context.detach(token)

    def answered(self, answer: Answer) -> observe.TraceIds | None:
        return self._telemetry.ended(answer, self._started, self._transport, self._asker, self._span)


class _AnswerWatch(Unwatched):
    """A request answered without a call: nothing is current; `answered` makes its span."""

    __slots__ = ("_asker", "_started", "_telemetry", "_transport")

    def __init__(self, telemetry: Telemetry, started: float, transport: Transport, asker: Asker) -> None:
        self._telemetry = telemetry
        self._started = started
        self._transport: Transport = transport
        self._asker = asker

    def answered(self, answer: Answer) -> observe.TraceIds | None:
        return self._telemetry.answered(answer, self._started, self._transport, self._asker)


def _metrics_server(host: str, port: int, registry: CollectorRegistry) -> http.server.ThreadingHTTPServer:
    """The Prometheus text at http://host:port/metrics, served by a thread per connection for at
    most PROMETHEUS_MAX_CONNECTIONS connections at once, each closed once a read or a write waits
    PROMETHEUS_TIMEOUT_S; a connection beyond them is closed at once. prometheus_client's own
    listener starts a thread per connection and waits on each for ever: 400 idle connections were
    400 threads (a container's pids limit is 64)."""
    from prometheus_client.exposition import MetricsHandler

    class Handler(MetricsHandler):
        timeout = PROMETHEUS_TIMEOUT_S  # StreamRequestHandler: the socket's timeout

    Handler.registry = registry

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def __init__(self) -> None:
            self.slots = threading.BoundedSemaphore(PROMETHEUS_MAX_CONNECTIONS)
            super().__init__((host, port), Handler)

        def process_request(self, request: Any, client_address: Any) -> None:
            if not self.slots.acquire(blocking=False):
                self.shutdown_request(request)  # every slot is taken: closed, no thread
                return
            super().process_request(request, client_address)

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a scraper that went away: nothing to report (the default prints a traceback)

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                self.slots.release()

    return Server()


def _sink_figure(field: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
    def observe_sink(_options: CallbackOptions) -> Iterable[Observation]:
        sink = current_sink()
        return [] if sink is None else [Observation(int(getattr(sink.statistics(), field)))]

    return observe_sink


def _signal_url(endpoint: str, signal: str) -> str:
    """OTLP/HTTP: a signal's URL is the base endpoint with `v1/<signal>` appended."""
    return endpoint.rstrip("/") + "/v1/" + signal


def open_telemetry(settings: Settings, registry: Registry) -> Telemetry:
    """The process's telemetry, as configured (the tracer installed in `observe`)."""
    telemetry = Telemetry(settings, registry)
    if settings.otel_endpoint is not None:
        logger.warning(
            "traces and metrics are on: exported over OTLP/HTTP to %s (an outbound connection)",
            settings.otel_endpoint,
        )
    else:  # the Prometheus listener alone: scraped, nothing leaves the process on its own
        logger.info("metrics are on: served for Prometheus to scrape; no outbound connection")
    return telemetry
