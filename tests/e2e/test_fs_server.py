"""`sandbox_fs_read` through the real server process (`python -X dev -m mcp_suite`) over stdio.

The whole attack table runs through one server; every raw stdout line is checked for the canary and
every problem for host paths. NUL bytes never reach the tool: the runtime's structural sanitizer
refuses control characters first (validation-error), which is also a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.client import ServerProcess, problem_of
from tests.support.fs_attacks import (
    CANARY,
    CASES,
    DENIED,
    HELLO,
    INNER,
    MISSING,
    UNSUPPORTED,
    AttackTree,
    assert_no_host_path,
    attack_tree,
    descriptors_in,
)
from tests.support.wire import unframe, without_frame

pytestmark = pytest.mark.e2e

TOOL = "sandbox_fs_read"


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[AttackTree]:
    with attack_tree(tmp_path) as built:
        yield built


@pytest.fixture
def server(tree: AttackTree) -> Iterator[ServerProcess]:
    env = {"MCP_SAFE_DATA_DIR": str(tree.root), "MCP_METRICS_ENABLED": "false"}
    with ServerProcess(env=env) as process:
        process.initialize()
        yield process
        assert process.stop() == 0
    assert not any("Traceback" in line for line in process.stderr_lines)


def _read(server: ServerProcess, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call; the raw response line is checked for the canary before it is parsed."""
    request_id = server.send_request("tools/call", {"name": TOOL, "arguments": arguments})
    line = server.recv_line(timeout=30)
    assert line is not None
    assert CANARY.encode() not in line
    response: dict[str, Any] = json.loads(line)
    assert response["id"] == request_id
    assert "error" not in response, response
    result: dict[str, Any] = response["result"]
    return result


def test_attack_table_through_the_server(server: ServerProcess, tree: AttackTree) -> None:
    for path, expected in CASES:
        result = _read(server, {"relative_path": path})
        if "\x00" in path:
            expected = "validation-error"  # the sanitizer refuses control characters first
        if expected in (DENIED, MISSING, UNSUPPORTED, "validation-error"):
            document = problem_of(result)
            assert document["type"] == f"urn:mcp-suite:problem:{expected}", (path, document)
            assert "structuredContent" not in result
            assert_no_host_path(document, tree)
        else:
            assert result["isError"] is False, (path, result)
            structured = result["structuredContent"]
            assert without_frame(structured) == {
                "path": path,
                "size": len(expected.encode()),
                "content": expected,
                "truncated": False,
            }
            # The file's text comes inside the untrusted-data frame (docs/wire.md).
            text = unframe(result["content"][0]["text"], structured["untrusted_data"])
            assert json.loads(text) == without_frame(structured)


def test_missing_outside_answers_like_existing_outside(server: ServerProcess) -> None:
    for existing, missing in [
        ("../canary.txt", "../no-such.txt"),
        ("out-abs-dir/secret.txt", "out-abs-dir/no-such.txt"),
        ("/etc/passwd", "/etc/no-such-file"),
    ]:
        assert _read(server, {"relative_path": existing}) == _read(server, {"relative_path": missing})


def test_a_5000_character_path_is_a_validation_error_echoing_little(
    server: ServerProcess, tree: AttackTree
) -> None:
    path = "abcd/" * 1_000
    document = problem_of(_read(server, {"relative_path": path}))
    assert document["type"] == "urn:mcp-suite:problem:validation-error"
    assert document["invalid_params"] == ["relative_path"]
    assert "abcd/" * 52 not in json.dumps(document)  # at most 256 characters of it echoed
    assert_no_host_path(document, tree)


def test_fifo_and_socket_do_not_hang_the_server(server: ServerProcess) -> None:
    for path in ("fifo", "unix.sock", "dev-zero", "proc-root/etc/passwd"):
        assert problem_of(_read(server, {"relative_path": path}))["status"] == 403
    assert server.request("ping")["result"] == {}


def test_concurrent_reads_are_matched_by_id(server: ServerProcess) -> None:
    paths = ["hello.txt", "in-file", "../canary.txt", "fifo"] * 8
    ids = [
        server.send_request("tools/call", {"name": TOOL, "arguments": {"relative_path": path}})
        for path in paths
    ]
    for request_id, path in zip(ids, paths, strict=True):
        result = server.response(request_id, timeout=30)["result"]
        if path == "hello.txt":
            assert result["structuredContent"]["content"] == HELLO
        elif path == "in-file":
            assert result["structuredContent"]["content"] == INNER
        else:
            assert problem_of(result)["status"] == 403


def test_max_bytes_maximum_comes_from_the_environment(tree: AttackTree) -> None:
    env = {
        "MCP_SAFE_DATA_DIR": str(tree.root),
        "MCP_METRICS_ENABLED": "false",
        "MCP_FS_MAX_BYTES": "4096",
    }
    with ServerProcess(env=env) as process:
        process.initialize()
        tools = process.request("tools/list")["result"]["tools"]
        tool = next(t for t in tools if t["name"] == "sandbox_fs_read")
        assert tool["name"] == TOOL
        # The default follows the setting; the bound is told by the refusal (issue 46), not shown.
        assert tool["inputSchema"]["properties"]["max_bytes"] == {"default": 4_096, "type": "integer"}
        assert tool["annotations"]["readOnlyHint"] is True
        assert set(tool["outputSchema"]["properties"]) == {
            "path",
            "size",
            "content",
            "truncated",
            "invisible",
            "untrusted_data",
        }
        too_many = process.call_tool(TOOL, {"relative_path": "hello.txt", "max_bytes": 4_097})
        assert problem_of(too_many)["type"].endswith(":validation-error")
        assert "less than or equal to 4096" in problem_of(too_many)["detail"]
        cut = process.call_tool(TOOL, {"relative_path": "euros.txt", "max_bytes": 6})
        assert without_frame(cut["structuredContent"]) == {
            "path": "euros.txt",
            "size": 9,
            "content": "€",
            "truncated": True,
        }
        assert process.stop() == 0


def test_root_that_is_the_file_system_root_refuses_to_start() -> None:
    env = {"MCP_SAFE_DATA_DIR": "/", "MCP_METRICS_ENABLED": "false"}
    with ServerProcess(env=env) as process:
        process.close_stdin()
        assert process.wait() == 78
    assert any("MCP_SAFE_DATA_DIR" in line for line in process.stderr_lines)


def test_hard_links_can_be_allowed_by_the_operator(tree: AttackTree) -> None:
    env = {
        "MCP_SAFE_DATA_DIR": str(tree.root),
        "MCP_METRICS_ENABLED": "false",
        "MCP_FS_ALLOW_HARD_LINKS": "true",
    }
    with ServerProcess(env=env) as process:
        process.initialize()
        result = process.call_tool(TOOL, {"relative_path": "hard-public"})
        assert result["structuredContent"]["content"].startswith("a public file")
        assert process.stop() == 0


def test_no_descriptor_growth_in_the_server(server: ServerProcess, tree: AttackTree) -> None:
    for path in ("hello.txt", "fifo", "loop-a", "../canary.txt"):  # warm up threads and caches
        _read(server, {"relative_path": path})
    before = descriptors_in(tree.base, server.proc.pid)
    for _ in range(50):
        for path in ("hello.txt", "fifo", "unix.sock", "in-dir/inner.txt", "out-rel-dir/x"):
            _read(server, {"relative_path": path})
    assert descriptors_in(tree.base, server.proc.pid) == before
