"""The MCP bundle of `make mcpb` (docs/operations/bundle.md), installed and started as Claude Desktop does.

The bundle is built by mcpb/build.py (the official `@anthropic-ai/mcpb` CLI validates and packs it),
once per version of its inputs (cached under .venv/mcpb-build/<digest>, as the npm tools are), then
unpacked by the same CLI. The server entry is computed by the official package's own
`getMcpConfigForManifest` (the substitution of `${__dirname}` and `${user_config.…}`, defaults
included, that the hosts use), from the values a user fills in, and started through the official MCP
Python SDK client with exactly that command, arguments and environment. Three users: one with a DSN
and a data folder, one who asks for the demo database, one who fills in nothing.

`server.json` is checked against the registry's published schema (mcpb/build.py says from where).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_suite.demo.cluster import Cluster
from mcpb.build import build, mcpb_cli, registry_problems
from tests.support.client import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SQL_TOOLS = {"read_only_sql", "sql_schema", "explain_sql"}
FS_TOOLS = {"sandbox_fs_list", "sandbox_fs_read"}
INPUTS = ("mcpb", "mcp_suite", "requirements/demo.txt", "pyproject.toml", "setup.py", "examples/safe_data")


def _digest() -> str:
    h = hashlib.sha256()
    for top in INPUTS:
        base = REPO / top
        for path in sorted([base] if base.is_file() else base.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def built() -> tuple[Path, Path]:
    """(the .mcpb, server.json), built once per version of the inputs."""
    home = REPO / ".venv" / "mcpb-build" / _digest()
    bundles = list(home.glob("*.mcpb"))
    if bundles and (home / "server.json").is_file():
        return bundles[0], home / "server.json"
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(home.parent)  # older builds
    return build(home)


@pytest.fixture(scope="module")
def unpacked(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle, _ = built
    where = tmp_path_factory.mktemp("Claude Extensions") / "mcp-suite"
    subprocess.run([str(mcpb_cli()), "unpack", str(bundle), str(where)], check=True, capture_output=True)
    return where


_CONFIG_JS = """
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";
import { readFileSync } from "node:fs";
const [manifestPath, extensionPath, userConfig, home] = process.argv.slice(1);
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
const config = await getMcpConfigForManifest({
  manifest, extensionPath, userConfig: JSON.parse(userConfig), pathSeparator: "/",
  systemDirs: {
    HOME: home, DESKTOP: home + "/Desktop", DOCUMENTS: home + "/Documents", DOWNLOADS: home + "/Downloads",
  },
});
process.stdout.write(JSON.stringify(config ?? null));
"""


def host_config(unpacked: Path, user_config: dict[str, Any], home: Path) -> dict[str, Any]:
    """The server entry as the official MCPB library makes it from the manifest and the user's values."""
    node_home = mcpb_cli().parents[2]  # .../node_modules/.bin/mcpb -> the npm project
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", _CONFIG_JS, "--",
         str(unpacked / "manifest.json"), str(unpacked), json.dumps(user_config), str(home)],
        cwd=node_home, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    config: dict[str, Any] = json.loads(proc.stdout)
    return config


async def _session(config: dict[str, Any], *, query: bool, source: str | None = None) -> set[str]:
    """Start the entry through the SDK; the tools, and (with `query`) the demo table read (from
    `source` when the server reads several databases, as the demo does)."""
    params = StdioServerParameters(command=config["command"], args=config["args"], env=config["env"])
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            with trio.fail_after(180):
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    tools = {tool.name for tool in (await client.list_tools()).tools}
                    if query:
                        sql = "SELECT count(*) AS n FROM docs.pages"
                        which = {} if source is None else {"source": source}
                        result = await client.call_tool("read_only_sql", {"sql": sql, **which})
                        assert result.is_error is False, result.content
                        assert result.structured_content is not None
                        assert result.structured_content["rows"] == [[30]]
                    return tools
        except BaseException:
            errlog.seek(0)
            sys.stderr.write(errlog.read()[-4000:])
            raise


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home: where the demo keeps its database (the user's cache directory)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return home


def test_the_manifest_asks_for_the_dsn_as_a_secret_and_the_folder_as_a_directory(unpacked: Path) -> None:
    manifest = json.loads((unpacked / "manifest.json").read_text())
    fields = manifest["user_config"]
    assert fields["sql_dsn"]["sensitive"] is True
    assert fields["data_dir"]["type"] == "directory"
    assert manifest["server"]["entry_point"] == "server/main.py"
    assert (unpacked / manifest["server"]["entry_point"]).is_file()
    assert manifest["compatibility"]["platforms"] == [sys.platform]


@pytest.mark.pg
async def test_a_user_with_a_dsn_and_a_folder_gets_every_tool(
    unpacked: Path, user_home: Path, tmp_path: Path, demo_cluster: Cluster
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "notes.txt").write_text("hello\n")
    config = host_config(unpacked, {"sql_dsn": demo_cluster.reader_dsn, "data_dir": str(data)}, user_home)
    assert config["env"]["MCP_SQL_DSN"] == demo_cluster.reader_dsn
    assert config["args"] == [f"{unpacked}/server/main.py", "--demo=false"]  # the default
    tools = await _session(config, query=True)
    assert tools == SQL_TOOLS | FS_TOOLS | {"system_metrics"}


async def test_a_user_who_asks_for_the_demo_gets_its_database_and_folder(
    unpacked: Path, user_home: Path
) -> None:
    config = host_config(unpacked, {"demo_database": True}, user_home)
    assert config["args"][-1] == "--demo=true"
    assert config["env"]["MCP_SQL_DSN"] == "${user_config.sql_dsn}"  # what the library leaves unset
    try:
        tools = await _session(config, query=True, source="docs")
    finally:  # the demo database stays for the next start; this user is gone: remove it as the README says
        subprocess.run(
            [sys.executable, "-m", "mcp_suite", "demo", "destroy"],  # the bundle's copy: PYTHONPATH
            env={"PATH": os.environ["PATH"], "HOME": str(user_home),
                 "PYTHONPATH": config["env"]["PYTHONPATH"]},
            cwd=user_home,
            capture_output=True, check=False, timeout=60,
        )  # fmt: skip
    # The demo's sources serve a curated question on `ops` too (docs/tools/curated.md).
    assert tools == SQL_TOOLS | FS_TOOLS | {"system_metrics", "ops_incidents_of_service"}


async def test_a_user_who_fills_in_nothing_gets_the_server_without_a_database(
    unpacked: Path, user_home: Path
) -> None:
    config = host_config(unpacked, {}, user_home)
    tools = await _session(config, query=False)
    assert tools == {"system_metrics"}


def test_the_entry_refuses_another_python_with_the_fix(unpacked: Path, tmp_path: Path) -> None:
    copy = tmp_path / "server"
    copy.mkdir()
    shutil.copy(unpacked / "server" / "main.py", copy / "main.py")
    (copy / "python-version").write_text("3.99\n")
    proc = subprocess.run(
        [sys.executable, str(copy / "main.py"), "--demo=false"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 78
    assert "built for Python 3.99" in proc.stderr
    assert proc.stdout == ""


def test_server_json_matches_the_registry_schema_and_this_bundle(built: tuple[Path, Path]) -> None:
    bundle, entry = built
    document = json.loads(entry.read_text())
    assert registry_problems(document) == []
    (package,) = document["packages"]
    assert package["registryType"] == "mcpb"
    assert package["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert document["version"] == package["version"]
    # The schema is really applied: what the registry refuses is refused here.
    too_long = {**document, "description": "x" * 101}
    assert any("description" in p for p in registry_problems(too_long))
    no_transport = {**document, "packages": [{k: v for k, v in package.items() if k != "transport"}]}
    assert any("transport" in p for p in registry_problems(no_transport))
