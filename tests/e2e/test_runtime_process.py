"""The real server process over pipes: handshake, hostile input, stray output, leaks after 1,000 calls.

Every stdout line read here passes `check_line` (ASCII JSON-RPC, problem documents, the error table).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mcp_suite.problems import INVALID_REQUEST, PARSE_ERROR
from mcp_suite.settings import MAX_FRAME_BYTES
from tests.support.client import STRAY_ARGV, ServerProcess
from tests.support.stray_server import STRAY_MARK

pytestmark = pytest.mark.e2e


def _vm_hwm(pid: int) -> int:
    """Peak resident set size of a process, in bytes (Linux /proc)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc status")


def test_handshake_list_and_call_then_clean_exit_with_an_audit_trail() -> None:
    with ServerProcess() as server:
        init = server.initialize("2025-06-18")["result"]
        assert init["protocolVersion"] == "2025-06-18"
        assert init["serverInfo"]["name"] == "mcp-suite"
        tools = server.request("tools/list")["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["system_metrics"]
        result = server.call_tool("system_metrics")
        assert result["isError"] is False
        assert result["structuredContent"]["process"]["open_fds"] > 0
        assert server.stop() == 0
        assert server.read_to_eof() == []
    # The audit trail: one JSON object per request on stderr, with id, method, outcome and duration.
    events = [json.loads(line) for line in server.stderr_lines if line.startswith("{")]
    audit = [e for e in events if e.get("event") == "request"]
    assert [(e["id"], e["method"], e["outcome"]) for e in audit] == [
        (1, "initialize", "ok"),
        (2, "tools/list", "ok"),
        (3, "tools/call", "ok"),
    ]
    assert audit[2]["tool"] == "system_metrics"
    assert all(isinstance(e["duration_ms"], float | int) for e in audit)
    _assert_quiet(server)


def _assert_quiet(server: ServerProcess) -> None:
    """-X dev shows ResourceWarnings and the like on stderr: a clean run has none, and no traceback."""
    stderr = server.stderr_text()
    assert "Warning" not in stderr, stderr
    assert "Traceback" not in stderr, stderr


def test_split_writes_and_crlf_lines_are_framed_like_whole_ones() -> None:
    with ServerProcess() as server:
        message = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}\r\n'
        for start in range(0, len(message), 7):
            server.send_raw(message[start : start + 7])
            time.sleep(0.002)  # separate pipe writes, so the server sees separate reads
        assert server.recv()["result"]["protocolVersion"] == "2025-11-25"
        server.send_raw(b'\n\n{"jsonrpc":"2.0","id":2,"method":"ping"}\r\n{"jsonrpc":"2.0",')
        assert server.recv() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        time.sleep(0.01)
        server.send_raw(b'"id":3,"method":"ping"}\n')
        assert server.recv() == {"jsonrpc": "2.0", "id": 3, "result": {}}
        assert server.stop() == 0
        _assert_quiet(server)


def test_malformed_and_oversized_input_leave_the_session_serving() -> None:
    with ServerProcess() as server:
        server.initialize()
        server.send_raw(b"{this is not json}\n")
        assert server.recv()["error"]["code"] == PARSE_ERROR
        server.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"\xc3\x28"}\n')
        assert server.recv()["error"]["code"] == PARSE_ERROR
        server.send_raw(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n')
        assert server.recv()["error"]["code"] == INVALID_REQUEST

        # 32 MiB on one line, streamed in 1 MiB writes: refused, and never held whole. First let
        # the warm-up after the handshake finish (tools/list needs what it builds), so its imports
        # are not counted as growth.
        assert server.request("tools/list")["result"]["tools"]
        before = _vm_hwm(server.pid)
        server.send_raw(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"')
        for _ in range(32):
            server.send_raw(b"a" * MAX_FRAME_BYTES)
        server.send_raw(b'"}}\n')
        refused = server.recv()
        assert refused["id"] == "big"  # read from the line's first bytes, the line never held whole
        assert refused["error"]["code"] == INVALID_REQUEST
        assert refused["error"]["data"]["max_frame_bytes"] == MAX_FRAME_BYTES
        grown = _vm_hwm(server.pid) - before
        assert grown < 8 * MAX_FRAME_BYTES, f"peak RSS grew by {grown} bytes for a 32 MiB line"

        # The next line is served.
        assert server.request("ping")["result"] == {}
        # A partial line at EOF is dropped; the exit is still clean.
        server.send_raw(b'{"jsonrpc":"2.0","id":"partial","meth')
        assert server.stop() == 0
        assert server.read_to_eof() == []


def test_stray_prints_and_child_processes_never_reach_the_client() -> None:
    with ServerProcess(argv=STRAY_ARGV) as server:
        server.initialize()
        result = server.call_tool("stray")
        assert result["structuredContent"] == {"children_exit_codes": [0, 0]}
        assert server.request("ping")["result"] == {}
        assert server.stop() == 0
        assert server.read_to_eof() == []
    # It all ran, and all of it went to stderr.
    stderr = server.stderr_text()
    for where in ("print", "fd1", "sh-child", "python-child"):
        assert f"{STRAY_MARK} {where}" in stderr
    _assert_quiet(server)


def _window(server: ServerProcess, requests: list[tuple[str, dict[str, Any]]], first_id: int) -> int:
    """Send the calls pipelined, then read one answer per call; returns the next free id."""
    ids = []
    for offset, (name, arguments) in enumerate(requests):
        request_id = first_id + offset
        server.send_request("tools/call", {"name": name, "arguments": arguments}, id=request_id)
        ids.append(request_id)
    for request_id in ids:
        response = server.response(request_id)
        assert ("result" in response) or response["error"]["code"] == -32603  # boom: an incident
    return first_id + len(requests)


def _census(server: ServerProcess) -> dict[str, int]:
    tasks = server.call_tool("tasks")["structuredContent"]
    metrics = server.call_tool("system_metrics")["structuredContent"]["process"]
    return {
        "fds": server.open_fds(),
        "threads": server.threads(),
        "tasks": tasks["tasks"],
        "reported_fds": metrics["open_fds"],
    }


def test_no_descriptor_task_or_thread_is_leaked_after_a_thousand_calls() -> None:
    mix: list[tuple[str, dict[str, Any]]] = [
        ("echo", {"text": "hello"}),
        ("sleep", {"seconds": 0.001}),
        ("deny", {}),
        ("boom", {}),
        ("echo", {"text": 5}),  # validation-error
        ("echo", {"text": "a\u202eb"}),  # sanitizer
        ("sleep", {"seconds": 0}),
        ("echo", {"text": "\u00e9" * 100}),
        ("sleep", {"seconds": 0.002}),
        ("echo", {"text": "x", "tags": ["a", "b"]}),
    ]
    with ServerProcess(argv=STRAY_ARGV) as server:
        server.initialize()
        next_id = _window(server, [*mix, ("stray", {}), ("system_metrics", {})], 1000)
        before = _census(server)

        calls = 0
        while calls < 1_000:
            next_id = _window(server, mix * 5, next_id)
            calls += len(mix) * 5
            # Some calls are cancelled by the client mid-way: they leave nothing behind either.
            cancelled = f"c{next_id}"
            server.send_request("tools/call", {"name": "sleep", "arguments": {"seconds": 30}}, id=cancelled)
            server.notify("notifications/cancelled", {"requestId": cancelled})
            calls += 1
        next_id = _window(server, [("stray", {}), ("system_metrics", {})], next_id)

        after = _census(server)
        assert after["fds"] == before["fds"], (before, after)
        assert after["reported_fds"] == before["reported_fds"], (before, after)
        assert after["tasks"] == before["tasks"], (before, after)
        # Idle worker threads are cached by trio for a few seconds; a leak would be one per call.
        assert after["threads"] <= before["threads"] + 2, (before, after)
        assert server.stop() == 0
        leftovers = server.read_to_eof()
        assert all(not str(m["id"]).startswith("c") for m in leftovers), leftovers


def test_the_audit_trail_keeps_at_most_a_256_character_excerpt_of_arguments() -> None:
    with ServerProcess(argv=STRAY_ARGV) as server:
        server.initialize()
        assert server.call_tool("echo", {"text": "Q" * 10_000})["isError"] is False
        refused = server.call_tool("echo", {"text": "R" * 10_000 + "\u202e"})
        assert refused["isError"] is True
        assert server.stop() == 0
    audit = [json.loads(line) for line in server.stderr_lines if '"event":"request"' in line]
    calls = [event for event in audit if event["method"] == "tools/call"]
    assert [event["outcome"] for event in calls] == ["ok", "error"]
    assert calls[1]["problem"] == "validation-error"
    for event in calls:
        assert event["tool"] == "echo"
        assert 0 < len(event["args_excerpt"]) <= 256
    stderr = server.stderr_text()
    assert "Q" * 257 not in stderr
    assert "R" * 257 not in stderr


def test_another_programs_mcp_variable_is_named_once_and_the_server_serves() -> None:
    # The MCP_ prefix is shared: Claude Code documents MCP_TIMEOUT and MCP_TOOL_TIMEOUT.
    with ServerProcess(env={"MCP_TIMEOUT": "30000", "MCP_TOOL_TIMEOUT": "60000"}) as server:
        assert server.initialize("2025-06-18")["result"]["serverInfo"]["name"] == "mcp-suite"
        assert server.stop() == 0
    stderr = server.stderr_text()
    for name in ("MCP_TIMEOUT", "MCP_TOOL_TIMEOUT"):
        assert stderr.count(f"{name} is not a setting of mcp-suite") == 1, stderr
    assert "30000" not in stderr  # a name, never a value
