"""Traces and metrics of a stdio session, read in process with the SDK's in-memory exporters: one
SERVER span per request by the MCP conventions, a trace of its own linked to the
`_meta.traceparent`, the encoding as a child, `error.type` for an `isError` result and a JSON-RPC
error, nothing of the arguments; the metrics by tool, outcome, problem and rule; and the audit
records joined to the spans by trace id, the client's kept apart."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, Final

import pytest
import trio
from opentelemetry.trace import SpanKind, StatusCode

from mcp_suite import observe
from mcp_suite.runtime.audit_trail import AUDIT_SCHEMA_VERSION
from mcp_suite.runtime.log_sink import shutdown_logging
from mcp_suite.runtime.telemetry import Telemetry
from mcp_suite.tools.registry import Registry
from tests.support.harness import open_session
from tests.support.log_lines import captured_log_lines
from tests.support.telemetry import InMemory, in_memory_telemetry

PARENT_TRACE: Final = "0af7651916cd43dd8448eb211c80319c"
PARENT_SPAN: Final = "b7ad6b7169203331"
PARENT: Final = f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"
SECRET: Final = "argument-value-never-in-a-span"


class Watch:
    """The session's telemetry factory; keeps what it made for the test to read."""

    def __init__(self) -> None:
        self.memory: InMemory | None = None

    def __call__(self, registry: Registry) -> Telemetry:
        self.memory = in_memory_telemetry(registry)
        return self.memory.telemetry


@pytest.fixture
def watch() -> Iterator[Watch]:
    made = Watch()
    yield made
    if made.memory is not None:
        made.memory.telemetry.close()
    assert not observe.tracing()


@pytest.fixture
def audit_lines() -> Iterator[io.StringIO]:
    with captured_log_lines() as stream:
        yield stream


async def _serve_a_few_requests(watch: Watch) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    async with open_session(telemetry=watch) as harness:
        await harness.initialize()
        params = {"name": "echo", "arguments": {"text": SECRET}, "_meta": {"traceparent": PARENT}}
        answers["echo"] = await harness.response(await harness.send_request("tools/call", params))
        answers["deny"] = await harness.response(await harness.call("deny"))
        answers["boom"] = await harness.response(await harness.call("boom"))
        answers["unknown"] = await harness.request("no/such/method")
    return answers


async def test_each_request_is_one_server_span_by_the_mcp_conventions(watch: Watch) -> None:
    with trio.fail_after(10):
        answers = await _serve_a_few_requests(watch)
    assert answers["echo"]["result"]["structuredContent"]["text"] == SECRET
    assert answers["deny"]["result"]["isError"] is True
    assert answers["boom"]["error"]["code"] == -32603
    assert watch.memory is not None
    spans = watch.memory.spans()
    by_name = {span.name: span for span in spans}
    assert sorted(by_name) == sorted(
        [
            "initialize",
            "tools/call echo",
            "tools/call deny",
            "tools/call boom",
            "_OTHER",
            "mcp.encode",
        ]
    ), [span.name for span in spans]
    echo = by_name["tools/call echo"]
    assert echo.kind is SpanKind.SERVER
    # The client's `traceparent` is a link: the span's trace is the server's own.
    assert echo.parent is None
    assert [
        (format(link.context.trace_id, "032x"), format(link.context.span_id, "016x")) for link in echo.links
    ] == [(PARENT_TRACE, PARENT_SPAN)]
    assert format(echo.context.trace_id, "032x") != PARENT_TRACE
    assert dict(echo.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "jsonrpc.protocol.version": "2.0",
        "jsonrpc.request.id": "2",
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "pipe",
    }
    assert echo.status.status_code is StatusCode.UNSET
    encode = by_name["mcp.encode"]
    assert encode.parent is not None
    assert encode.parent.span_id == echo.context.span_id
    assert encode.context.trace_id == echo.context.trace_id
    deny, boom, unknown = by_name["tools/call deny"], by_name["tools/call boom"], by_name["_OTHER"]
    assert (deny.attributes or {})["error.type"] == "tool_error"
    assert (deny.attributes or {})["mcp_suite.problem.type"] == "access-denied"
    assert (boom.attributes or {})["error.type"] == "-32603"
    assert (unknown.attributes or {})["error.type"] == "-32601"
    assert {deny.status.status_code, boom.status.status_code} == {StatusCode.ERROR}
    assert by_name["initialize"].parent is None  # no traceparent: a trace of its own
    assert "error.type" not in (by_name["initialize"].attributes or {})
    for span in spans:
        assert all(SECRET not in str(value) for value in (span.attributes or {}).values()), span.name


async def test_the_metrics_count_calls_problems_refusals_and_durations(watch: Watch) -> None:
    with trio.fail_after(10):
        await _serve_a_few_requests(watch)
    assert watch.memory is not None
    calls = watch.memory.points("mcp_suite.calls")
    assert sorted((a["tool"], a["outcome"], v) for a, v in calls) == [
        ("boom", "error", 1),
        ("deny", "error", 1),
        ("echo", "ok", 1),
    ]
    problems = {a["type"]: v for a, v in watch.memory.points("mcp_suite.problems")}
    assert problems == {"access-denied": 1, "internal-error": 1, "method-not-found": 1}
    assert watch.memory.points("mcp_suite.refusals") == [({"rule": "access-denied"}, 1)]
    durations = watch.memory.points("mcp.server.operation.duration")
    assert sum(count for _, count in durations) == 5  # initialize, three calls, the unknown method
    by_method = {(a["mcp.method.name"], a.get("gen_ai.tool.name"), a.get("error.type")) for a, _ in durations}
    assert ("tools/call", "deny", "tool_error") in by_method
    assert ("_OTHER", None, "-32601") in by_method


async def test_each_audit_record_carries_the_schema_version_and_its_spans_trace_id(
    watch: Watch, audit_lines: io.StringIO
) -> None:
    with trio.fail_after(10):
        await _serve_a_few_requests(watch)
    shutdown_logging()  # writes what is queued
    records = [json.loads(line) for line in audit_lines.getvalue().splitlines()]
    requests = [r for r in records if r.get("event") == "request"]
    assert len(requests) == 5
    assert watch.memory is not None
    trace_of = {
        (s.attributes or {}).get("jsonrpc.request.id"): s.context.trace_id for s in watch.memory.spans()
    }
    for record in requests:
        assert record["schema_version"] == AUDIT_SCHEMA_VERSION
        assert int(record["trace_id"], 16) == trace_of[str(record["id"])], record
    # The client's trace id is kept apart, and named as the client's; the others have none.
    echo = next(r for r in requests if r.get("tool") == "echo")
    assert echo["trace_id"] != PARENT_TRACE
    assert echo["client_trace_id"] == PARENT_TRACE
    assert [r for r in requests if "client_trace_id" in r] == [echo]


async def test_without_telemetry_no_record_has_a_trace_id(audit_lines: io.StringIO) -> None:
    with trio.fail_after(10):
        async with open_session() as harness:
            await harness.initialize()
            await harness.response(await harness.call("echo", {"text": "x"}))
    shutdown_logging()
    requests = [json.loads(line) for line in audit_lines.getvalue().splitlines() if '"request"' in line]
    assert len(requests) == 2
    assert all(r["schema_version"] == AUDIT_SCHEMA_VERSION and "trace_id" not in r for r in requests)
    assert not observe.tracing()


def test_off_the_server_imports_no_opentelemetry() -> None:
    """Everything a session and the SQL engine load, and no OpenTelemetry module among them."""
    code = (
        "import sys\n"
        "import mcp_suite.cli, mcp_suite.runtime.session, mcp_suite.runtime.http, mcp_suite.runtime.calls\n"
        "import mcp_suite.tools.sql.engine.engine, mcp_suite.tools.sql.opener\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'prometheus_client')))\n"
        "assert not loaded, loaded\n"
        "assert 'mcp_suite.runtime.telemetry' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
