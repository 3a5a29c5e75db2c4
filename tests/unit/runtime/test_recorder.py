"""The recorder's telemetry names what the code it watches defines, not lists of its own: every
problem class is counted by its slug, a refusal exactly when its class says it is one; every method
the session core serves is a label of its own and any other is `_OTHER`. A new problem class or
served method is counted without touching telemetry, and these tests fail if it were not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

import mcp_suite.protocol.jsonrpc  # the envelope's problems (JsonParseError)
import mcp_suite.tools.sql.engine.connections  # a problem class of the SQL engine's
import mcp_suite.tools.sql.engine.policy.refusals  # noqa: F401  # the SQL policy's
from mcp_suite import observe
from mcp_suite.problems import MethodNotFoundError, ProblemError
from mcp_suite.protocol import mcp
from mcp_suite.protocol.completion import Completions
from mcp_suite.protocol.core import SERVED_METHODS, Answer, SessionCore
from mcp_suite.protocol.prompts import Prompt
from mcp_suite.runtime.recorder import Asker, Recorder
from mcp_suite.settings import Settings
from mcp_suite.tools.registry import open_registry
from tests.support.session_core import counter
from tests.support.telemetry import InMemory, in_memory_telemetry

REPO: Final = Path(__file__).resolve().parents[3]
# Every request method a client may send in the MCP revisions this server knows (2024-11-05 to
# 2026-07-28), whether it serves it or not.
SPEC_METHODS: Final = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
)


@pytest.fixture
def memory() -> Iterator[InMemory]:
    with open_registry(Settings(), builtins=False) as registry:
        watched = in_memory_telemetry(registry)
        try:
            yield watched
        finally:
            watched.telemetry.close()
    assert not observe.tracing()


def _problem_classes() -> list[type[ProblemError]]:
    """Every problem class of the package (the subclasses of subclasses too)."""
    found: list[type[ProblemError]] = []
    todo = [ProblemError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [cls for cls in found if cls.slug]


def _record(memory: InMemory, method: str, problem: ProblemError | None = None) -> None:
    outcome = "ok" if problem is None else "error"
    answer = Answer(b"", 1, method, outcome, problem)
    Recorder("pipe", memory.telemetry).request(0.0, Asker()).answered(answer)


def _core() -> SessionCore:
    resource = mcp.ResourceDescription(
        uri="r://x", name="x", title="X", description="x", mime_type="text/plain"
    )
    return SessionCore(
        server_name="t",
        server_version="1",
        tool_names=["echo"],
        tools=list,
        instructions="",
        resources=[resource],
        max_frame_bytes=65_536,
        max_json_depth=32,
        arg_max_depth=8,
        arg_max_items=64,
        call_deadline_s=10.0,
        draw_boundary=counter(),
        completions=Completions({"r://x": "main"}),
        # Everything a core may offer (mcp-suite's own offers no prompts and no subscriptions).
        prompt_list=[Prompt("p", "P", "p", lambda _arguments: [])],
        subscriptions=True,
    )


def _frame(method: str, request_id: int, meta: dict[str, Any] | None = None) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {}, "uri": "r://x"}
    if method == "initialize":
        params = {
            "protocolVersion": mcp.LATEST_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
    if meta is not None:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()


def _served_by_the_core() -> set[str]:
    """The methods a core offering everything (a resource that completes among it) answers other
    than with method-not-found, in either era."""
    modern = {mcp.PROTOCOL_VERSION_KEY: mcp.MODERN_VERSION, mcp.CLIENT_CAPABILITIES_KEY: {}}
    served: set[str] = set()
    for request_id, method in enumerate(SPEC_METHODS, start=1):
        for meta in (None, modern):
            core = _core()
            if meta is None and method != "initialize":
                core.receive(_frame("initialize", 0))  # a legacy method is served after the handshake
            event = core.receive(_frame(method, request_id, meta))
            if not (isinstance(event, Answer) and isinstance(event.problem, MethodNotFoundError)):
                served.add(method)
    return served


def test_every_problem_class_is_counted_by_its_type_and_a_refusal_by_its_class() -> None:
    classes = _problem_classes()
    assert len(classes) > 30  # the walk found the package's classes
    with open_registry(Settings(), builtins=False) as registry:
        for cls in classes:
            memory = in_memory_telemetry(registry)
            try:
                problem = cls.__new__(cls)  # some classes take more than a detail (JsonRpcError)
                ProblemError.__init__(problem, "refused" if cls.refusal else "failed")
                _record(memory, "tools/call", problem)
                problems = memory.points("mcp_suite.problems")
                refusals = memory.points("mcp_suite.refusals")
            finally:
                memory.telemetry.close()
            assert problems == [({"type": cls.slug}, 1)], cls
            assert refusals == ([({"rule": cls.slug}, 1)] if cls.refusal else []), cls


def test_every_refusal_class_is_named_in_the_metrics_table_of_watching_md() -> None:
    watching = (REPO / "docs" / "operations" / "watching.md").read_text()
    row = next(line for line in watching.splitlines() if line.startswith("| `mcp_suite.refusals` |"))
    refusals = {cls.slug for cls in _problem_classes() if cls.refusal}
    assert refusals  # access-denied, query-violation, insufficient-scope, role-refused
    assert {slug for slug in refusals if f"`{slug}`" not in row} == set()


def test_the_methods_telemetry_names_are_exactly_those_the_core_serves() -> None:
    assert _served_by_the_core() == SERVED_METHODS


def test_every_served_method_is_its_own_label_and_any_other_is_other(memory: InMemory) -> None:
    for method in SPEC_METHODS:
        _record(memory, method)
    labels = {a["mcp.method.name"]: n for a, n in memory.points("mcp.server.operation.duration")}
    assert labels == {
        **dict.fromkeys(SERVED_METHODS, 1),
        "_OTHER": len(set(SPEC_METHODS) - SERVED_METHODS),
    }
