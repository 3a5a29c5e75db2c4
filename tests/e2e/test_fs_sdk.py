"""`sandbox_fs_read` through the official `mcp` SDK client, a real third-party client (docs/tools/).

The SDK launches `python -X dev -m mcp_suite` itself, negotiates the session, validates results
against the advertised `outputSchema`, and must see reads, refusals and truncation as specified.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.client import REPO
from tests.support.fs_attacks import CANARY, HELLO, INNER, attack_tree
from tests.support.wire import without_frame

pytestmark = pytest.mark.e2e


def _parameters(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-X", "dev", "-m", "mcp_suite"],
        env={"MCP_SAFE_DATA_DIR": str(root), "MCP_METRICS_ENABLED": "false", "PYTHONPATH": "."},
        cwd=REPO,
    )


async def _assert_refused(client: Client, tool: str, path: str, status: int, tmp_path: Path) -> None:
    refused = await client.call_tool(tool, {"relative_path": path})
    assert refused.is_error is True
    assert refused.structured_content is None
    text = refused.content[0].text  # type: ignore[union-attr]  # a text block
    assert CANARY not in text
    assert str(tmp_path) not in text
    assert json.loads(text)["status"] == status


async def test_sdk_client_reads_and_is_refused_as_specified(tmp_path: Path) -> None:
    with attack_tree(tmp_path) as tree, trio.fail_after(60):
        async with Client(_parameters(tree.root)) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["sandbox_fs_list", "sandbox_fs_read"]
            tool = listed.tools[1]
            # What the model is shown (issue 46): the default, not the bound; the bound is enforced
            # and told by the refusal that meets it.
            assert tool.input_schema["properties"]["max_bytes"] == {"default": 20_000, "type": "integer"}
            over = await client.call_tool(
                "sandbox_fs_read", {"relative_path": "hello.txt", "max_bytes": 1_048_577}
            )
            assert over.is_error is True
            detail = json.loads(over.content[0].text)["detail"]  # type: ignore[union-attr]  # a text block
            assert "max_bytes: Input should be less than or equal to 1048576" in detail

            read = await client.call_tool("sandbox_fs_read", {"relative_path": "hello.txt"})
            assert read.is_error is False
            assert read.structured_content is not None
            # The SDK checked it against the outputSchema, frame member included (docs/wire.md).
            assert read.structured_content["untrusted_data"].isdigit()
            assert without_frame(read.structured_content) == {
                "path": "hello.txt",
                "size": len(HELLO),
                "content": HELLO,
                "truncated": False,
            }

            linked = await client.call_tool("sandbox_fs_read", {"relative_path": "in-dir/inner.txt"})
            assert linked.structured_content is not None
            assert linked.structured_content["content"] == INNER

            cut = await client.call_tool("sandbox_fs_read", {"relative_path": "euros.txt", "max_bytes": 11})
            assert cut.structured_content is not None
            assert without_frame(cut.structured_content) == {
                "path": "euros.txt",
                "size": 9,
                "content": "€",
                "truncated": True,
            }

            for path, status in [
                ("../canary.txt", 403),
                ("out-rel-dir/secret.txt", 403),
                ("chain-1", 403),
                ("fifo", 403),
                ("no-such.txt", 404),
                ("latin1.txt", 415),
            ]:
                await _assert_refused(client, "sandbox_fs_read", path, status, tmp_path)

            # The listing, through the same client (its outputSchema checked by the SDK).
            listing = await client.call_tool("sandbox_fs_list", {"relative_path": "sub", "recursive": True})
            assert listing.is_error is False
            assert listing.structured_content is not None
            entries = {e["name"]: e for e in listing.structured_content["entries"]}
            assert entries["inner.txt"] == {"name": "inner.txt", "kind": "file", "size": len(INNER)}
            assert entries["deeper/x.txt"]["kind"] == "file"
            assert entries["upup"] == {"name": "upup", "kind": "symlink", "size": None}
            whole = await client.call_tool("sandbox_fs_list", {"recursive": True, "max_depth": 8})
            assert whole.structured_content is not None
            assert whole.structured_content["truncated"] is False
            assert CANARY not in json.dumps(whole.structured_content)
            assert str(tmp_path) not in json.dumps(whole.structured_content)
            for path, status in [
                ("..", 403),
                ("out-rel-dir", 403),
                ("sub/upup", 403),
                ("hello.txt", 403),
                ("no-such-dir", 404),
            ]:
                await _assert_refused(client, "sandbox_fs_list", path, status, tmp_path)
